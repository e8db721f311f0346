#pragma once
// A connected RC queue pair inside one process, over rdma_cm loopback on one device's IP
// address (as rping does): the "writer" is the active side, like rdma-send; the "owner"
// is the passive side that owns the slot memory, like rdma-recv. Each side has its own
// protection domain and completion queue, so a key is only ever checked by the owner's
// side, as between two hosts.
//
// Lifecycle: the constructor listens on an ephemeral port, connects and returns once both
// ids are ESTABLISHED (or throws). A pair whose QPs went to the error state (a WRITE with
// a revoked key does that to both sides) is not reused: build a new one. Member order is
// the release order, as in common/rdma/rdma_transport.hpp: the queue pairs first, then
// each side's CQ and PD, then the cm_ids, the listener and the event channel last.
// Registrations made on a side's PD by the user of the pair must be released before the
// pair is (declare the pair first).

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/rdma/cm_id.hpp"
#include "common/rdma/completion.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/protection_domain.hpp"
#include "common/rdma/queue_pair.hpp"

namespace rdmax::bench {

// One side's device resources besides its QP.
struct Side {
  explicit Side(ibv_context* device);
  ProtectionDomain pd;
  CompletionQueue cq;  // send and receive completions of the side's QP
};

class LoopbackPair {
 public:
  // `address`: an IPv4/IPv6 address of the RDMA device's netdev (not 127.0.0.1 with rxe).
  // `timeout` bounds each connection step and each completion wait.
  LoopbackPair(const std::string& address, std::chrono::milliseconds timeout);
  LoopbackPair(const LoopbackPair&) = delete;
  LoopbackPair& operator=(const LoopbackPair&) = delete;
  ~LoopbackPair() = default;

  ibv_context* device() const { return owner_id_->verbs(); }
  std::uint8_t port_num() const { return owner_id_->get()->port_num; }
  Side& writer() { return *writer_; }
  Side& owner() { return *owner_; }
  ibv_qp* writer_qp() const { return writer_qp_->get(); }
  ibv_qp* owner_qp() const { return owner_qp_->get(); }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  // The next CM event of the channel; throws when none arrives within the timeout.
  CmEvent next_event();
  // Waits for `type` on `id` (for CONNECT_REQUEST: on the listener); any other event is
  // an error, reported with its name and status.
  CmEvent expect(rdma_cm_id* id, rdma_cm_event_type type);

  std::chrono::milliseconds timeout_;
  EventChannel channel_;
  CmId listener_;
  CmId writer_id_;
  std::optional<CmId> owner_id_;  // adopted from the CONNECT_REQUEST
  std::optional<Side> writer_;
  std::optional<Side> owner_;
  std::optional<QueuePair> writer_qp_;
  std::optional<QueuePair> owner_qp_;
};

// Busy-polls `cq` for one completion; throws std::runtime_error when none arrives within
// `timeout`. The completion may carry an error status: that is the caller's to judge.
ibv_wc wait_completion(CompletionQueue& cq, std::chrono::milliseconds timeout);

// Posts one signaled RDMA WRITE of `local` (registered with `lkey`) to (remote_addr, rkey).
void post_write(ibv_qp* qp, std::span<const std::uint8_t> local, std::uint32_t lkey,
                std::uint64_t remote_addr, std::uint32_t rkey, std::uint64_t wr_id);

// Posts one work request, throwing SysError("ibv_post_send <what>") when it is refused.
void post_send(ibv_qp* qp, ibv_send_wr& wr, const char* what);

}  // namespace rdmax::bench
