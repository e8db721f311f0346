#pragma once
// The device resources of one side of one RC connection, but for the queue pair: its
// protection domain, completion channel and CQ, and registered buffers for control
// messages. The QueuePair is created by the owner with qp_attributes() and handed to
// attach(), which posts the receives (before the peer can send).
//
// Lifecycle: construct after the cm_id has a device (route resolved, or a connect request
// arrived). The owner destroys the QueuePair first, then this Endpoint (its MRs, CQ,
// channel and PD, in that order), then the cm_id: the order rdma_server.c unwinds in.
// common/rdma/rdma_transport.hpp is that owner.
//
// wr_id encodes (kind, index), never a pointer: a stale completion cannot point at freed
// memory, and each connection has its own CQ, so the connection is known already.

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/os/aligned_buffer.hpp"
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
  Endpoint(ibv_context* device, std::uint32_t recv_depth, std::uint32_t send_depth,
           std::uint32_t extra_send_wrs);

  // What the QueuePair must be created with (CQs, depths).
  ibv_qp_init_attr qp_attributes() const;
  // Starts using `qp` (created with qp_attributes(), destroyed before this Endpoint):
  // posts every receive buffer.
  void attach(ibv_qp* qp);

  ProtectionDomain& pd() { return pd_; }
  int completion_fd() const { return channel_.fd(); }

  // Consume channel notifications, re-arm, then fill `out` with every completion.
  void drain_completions(std::vector<ibv_wc>& out);

  // Decoding of a received message; the buffer is reposted before returning, so the
  // peer's next message can land while this one is handled.
  // `version`, when given, gets the header's version (0 if it carried none).
  [[nodiscard]] std::variant<proto::Message, proto::DecodeFailure> take_received(
      const ibv_wc& wc, std::uint16_t* version = nullptr);

  // Posts one control message encoded in `version`. Returns the send slot index, or
  // nullopt when every send buffer is in flight (the peer is not keeping up).
  [[nodiscard]] std::optional<std::uint32_t> send(const proto::Message& message,
                                                  std::uint16_t version);
  void send_completed(std::uint32_t index);
  std::uint32_t sends_in_flight() const {
    return send_depth_ - static_cast<std::uint32_t>(free_sends_.size());
  }

  // RDMA WRITE of local registered memory to (remote_addr, rkey). Unsignaled writes'
  // completions are implied by the signaled SEND that follows them on the same QP.
  void post_write(std::span<const std::uint8_t> local, std::uint32_t lkey,
                  std::uint64_t remote_addr, std::uint32_t rkey, bool signaled,
                  std::uint32_t index);

 private:
  void post_recv(std::uint32_t index);

  ibv_qp* qp_ = nullptr;  // attached; owned by the caller
  std::uint32_t recv_depth_;
  std::uint32_t send_depth_;
  std::uint32_t extra_send_wrs_;
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
