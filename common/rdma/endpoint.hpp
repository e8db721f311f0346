#pragma once
// One side of one RC connection: its protection domain, completion channel and CQ, the
// QP (created on the caller's cm_id), and registered buffers for control messages.
//
// Lifecycle: construct after the cm_id has a device (route resolved, or a connect
// request arrived); receives are posted by the constructor, i.e. before the peer can
// send. The owner declares the Endpoint BEFORE its CmId, so the QP (owned by the cm_id)
// is destroyed first, then MRs, CQ, channel and PD, the order rdma_server.c unwinds in.
//
// wr_id encodes (kind, index), never a pointer: a stale completion cannot point at freed
// memory, and each connection has its own CQ, so the connection is known already.

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/completion.hpp"
#include "common/rdma/memory_region.hpp"
#include "common/rdma/protection_domain.hpp"
#include "protocol/wire.hpp"

namespace rdmax {

enum class WorkKind : std::uint8_t { Recv = 1, Send = 2, Write = 3 };

inline std::uint64_t make_wr_id(WorkKind kind, std::uint32_t index) {
  return (static_cast<std::uint64_t>(kind) << 32) | index;
}
inline WorkKind wr_kind(std::uint64_t wr_id) {
  return static_cast<WorkKind>(wr_id >> 32);
}
inline std::uint32_t wr_index(std::uint64_t wr_id) {
  return static_cast<std::uint32_t>(wr_id);
}

class Endpoint {
 public:
  // recv_depth: receive buffers kept posted; send_depth: control messages in flight;
  // extra_send_wrs: room on the send queue for RDMA WRITEs.
  Endpoint(CmId& id, std::uint32_t recv_depth, std::uint32_t send_depth,
           std::uint32_t extra_send_wrs);

  ProtectionDomain& pd() { return pd_; }
  int completion_fd() const { return channel_.fd(); }

  // Consume channel notifications, re-arm, then fill `out` with every completion.
  void drain_completions(std::vector<ibv_wc>& out);

  // Decoding of a received message; the buffer is reposted before returning, so the
  // peer's next message can land while this one is handled.
  [[nodiscard]] std::variant<proto::Message, proto::DecodeFailure> take_received(const ibv_wc& wc);

  // Posts one control message. Returns the send slot index, or nullopt when every send
  // buffer is in flight (the caller treats that as a peer not keeping up).
  [[nodiscard]] std::optional<std::uint32_t> send(const proto::Message& message);
  void send_completed(std::uint32_t index);
  std::uint32_t sends_in_flight() const {
    return send_depth_ - static_cast<std::uint32_t>(free_sends_.size());
  }

  // RDMA WRITE of local registered memory to (remote_addr, rkey); unsignaled: its
  // completion is implied by the signaled SEND that follows it on the same QP.
  void post_write(std::span<const std::uint8_t> local, std::uint32_t lkey,
                  std::uint64_t remote_addr, std::uint32_t rkey, bool signaled,
                  std::uint32_t index);

 private:
  void post_recv(std::uint32_t index);

  CmId& id_;
  std::uint32_t send_depth_;
  ProtectionDomain pd_;
  CompletionChannel channel_;
  CompletionQueue cq_;
  AlignedBuffer recv_buffers_;
  AlignedBuffer send_buffers_;
  MemoryRegion recv_mr_;
  MemoryRegion send_mr_;
  std::vector<std::uint32_t> free_sends_;
  std::vector<std::uint32_t> sent_bytes_;  // per send buffer: what to wipe on completion
};

}  // namespace rdmax
