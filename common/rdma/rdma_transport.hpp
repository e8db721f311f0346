#pragma once
// The verbs/rdma_cm implementation of Transport, and the one owner of a connection's
// device resources. Its member order is the release order rdma-core's examples unwind in
// (cmatose.c, rdma_server.c): the queue pair first, then the memory regions (the
// registrations, then the control buffers'), the CQ, the completion channel, the PD, and
// the cm_id last. Nothing it registers or allocates is handed out beyond keys and spans,
// so no child can outlive its parent.
//
// Lifecycle: construct once the cm_id has a device (the sender: ROUTE_RESOLVED; the
// receiver: CONNECT_REQUEST). The constructor creates the QP and posts every receive, so
// the peer may send as soon as the connection is established; then connect() or accept().
// The CM events of the id are the owner's to route (cm_id()->context); completions arrive
// on completion_fd(), and poll() delivers them.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/connection/transport.hpp"
#include "common/os/aligned_buffer.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/endpoint.hpp"
#include "common/rdma/memory_region.hpp"
#include "common/rdma/queue_pair.hpp"

namespace rdmax {

class RdmaTransport final : public Transport {
 public:
  struct Depths {
    std::uint32_t recv = 0;    // receive buffers kept posted
    std::uint32_t send = 0;    // control messages in flight
    std::uint32_t writes = 0;  // RDMA WRITEs in flight besides them
  };

  RdmaTransport(CmId id, Depths depths);
  RdmaTransport(const RdmaTransport&) = delete;
  RdmaTransport& operator=(const RdmaTransport&) = delete;
  ~RdmaTransport() override;

  CmId& cm_id() { return id_; }
  int completion_fd() const { return endpoint_.completion_fd(); }
  // rdma_connect / rdma_accept with the parameters of docs/PROTOCOL.md 4.1.
  void connect();
  void accept();

  void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) override;
  std::uint32_t sends_in_flight() const override { return endpoint_.sends_in_flight(); }
  void write(const Registration& source, std::span<const std::uint8_t> local,
             std::uint64_t remote_addr, std::uint32_t rkey) override;
  Registration register_memory(std::span<std::uint8_t> memory, Access access) override;
  void deregister(const Registration& registration) override;
  std::span<std::uint8_t> allocate(std::size_t bytes) override;
  void poll(TransportSink& sink) override;
  void disconnect() noexcept override;
  void shut_down() noexcept override;
  // rdma_cm reported ESTABLISHED. The passive side's first messages can arrive before that
  // (the queue pair is ready at rdma_accept; the sender's RTU may still be on its way), and
  // until then rdma_disconnect sends no DREQ (the kernel's CM is still in REP_SENT): the
  // sender would never hear of the disconnect. So an accepted connection's disconnect()
  // waits for this event.
  void on_established() noexcept;

 private:
  // The order below is the reverse of the release order (see above).
  CmId id_;
  Endpoint endpoint_;                       // PD, channel, CQ, control buffers
  std::vector<AlignedBuffer> allocations_;  // outlive the MRs registered on them
  // register_memory and deregister run on workers too (Transport): the table under a lock,
  // the verbs calls outside it.
  std::mutex regions_mutex_;
  std::vector<std::optional<MemoryRegion>> regions_;  // indexed by Registration::handle
  std::vector<std::uint32_t> free_regions_;
  std::vector<std::uint64_t> send_tags_;  // per send buffer
  std::vector<ibv_wc> completions_;
  bool disconnected_ = false;
  bool accepted_ = false;             // the passive side (accept(), not connect())
  bool established_ = false;          // rdma_cm reported ESTABLISHED
  bool disconnect_deferred_ = false;  // disconnect() came before it
  QueuePair qp_;
};

}  // namespace rdmax
