#include "common/rdma/rdma_transport.hpp"

#include <utility>

#include "common/error.hpp"
#include "common/rdma/connection_params.hpp"

namespace rdmax {
namespace {

int access_flags(Access access) {
  // Remote write is the only remote access a window ever needs; a source needs none.
  return access == Access::RemoteWrite ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0;
}

}  // namespace

RdmaTransport::RdmaTransport(CmId id, Depths depths)
    : id_(std::move(id)),
      endpoint_(id_.verbs(), depths.recv, depths.send, depths.writes),
      send_tags_(depths.send, 0),
      qp_(id_, endpoint_.pd().get(), endpoint_.qp_attributes()) {
  endpoint_.attach(qp_.get());
}

RdmaTransport::~RdmaTransport() = default;

void RdmaTransport::connect() {
  rdma_conn_param param = reliable_conn_param();
  id_.set_ack_timeout(kAckTimeoutExponent);
  id_.connect(param);
}

void RdmaTransport::accept() {
  rdma_conn_param param = reliable_conn_param();
  id_.set_ack_timeout(kAckTimeoutExponent);
  id_.accept(param);
  accepted_ = true;
}

void RdmaTransport::send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) {
  const auto index = endpoint_.send(message, version);
  if (!index) throw TransportError("every send buffer is in flight: the peer does not acknowledge");
  send_tags_[*index] = tag;
}

void RdmaTransport::write(const Registration& source, std::span<const std::uint8_t> local,
                          std::uint64_t remote_addr, std::uint32_t rkey) {
  endpoint_.post_write(local, source.lkey, remote_addr, rkey, false, 0);
}

Registration RdmaTransport::register_memory(std::span<std::uint8_t> memory, Access access) {
  MemoryRegion region(endpoint_.pd().get(), memory.data(), memory.size(), access_flags(access));
  const Registration keys{0, region.lkey(), region.rkey()};
  std::lock_guard lock(regions_mutex_);
  if (free_regions_.empty()) {
    regions_.emplace_back(std::move(region));
    return {static_cast<std::uint32_t>(regions_.size() - 1), keys.lkey, keys.rkey};
  }
  const std::uint32_t handle = free_regions_.back();
  free_regions_.pop_back();
  regions_[handle].emplace(std::move(region));
  return {handle, keys.lkey, keys.rkey};
}

void RdmaTransport::deregister(const Registration& registration) {
  std::optional<MemoryRegion> region;
  {
    std::lock_guard lock(regions_mutex_);
    if (registration.handle >= regions_.size() || !regions_[registration.handle]) return;
    region = std::move(regions_[registration.handle]);
    regions_[registration.handle].reset();
    free_regions_.push_back(registration.handle);
  }
  // Out of the table's lock. A refusal is the caller's to act on (Transport: the revoked
  // memory must not be read); the region's destructor tries once more.
  region->deregister();
}

std::span<std::uint8_t> RdmaTransport::allocate(std::size_t bytes) {
  allocations_.emplace_back(bytes);
  return {allocations_.back().data(), allocations_.back().size()};
}

void RdmaTransport::poll(TransportSink& sink) {
  endpoint_.drain_completions(completions_);
  for (const ibv_wc& wc : completions_) {
    if (wc.status != IBV_WC_SUCCESS) {
      sink.on_transport_failed(std::string("completion error: ") + ibv_wc_status_str(wc.status));
      continue;
    }
    switch (wr_kind(wc.wr_id)) {
      case WorkKind::Recv: {
        Inbound inbound;
        inbound.decoded = endpoint_.take_received(wc, &inbound.version);
        sink.on_received(std::move(inbound));
        break;
      }
      case WorkKind::Send: {
        const std::uint32_t index = wr_index(wc.wr_id);
        endpoint_.send_completed(index);
        sink.on_send_completed(index < send_tags_.size() ? send_tags_[index] : 0);
        break;
      }
      case WorkKind::Write:
        break;  // unsignaled; a signaled one would only confirm what the next SEND does
    }
  }
}

void RdmaTransport::disconnect() noexcept {
  if (disconnected_) return;
  disconnected_ = true;
  if (accepted_ && !established_) {
    disconnect_deferred_ = true;  // on_established() sends it
    return;
  }
  id_.disconnect();
}

void RdmaTransport::on_established() noexcept {
  established_ = true;
  if (std::exchange(disconnect_deferred_, false)) id_.disconnect();
}

void RdmaTransport::shut_down() noexcept {
  qp_.to_error();
}

}  // namespace rdmax
