#include "common/rdma/event_channel.hpp"

#include <fcntl.h>

#include "common/error.hpp"

namespace rdmax {

EventChannel::EventChannel() : channel_(::rdma_create_event_channel()) {
  // Fails with ENOENT/ENODEV when the rdma_ucm module is not loaded (no /dev/infiniband).
  if (channel_ == nullptr) throw_sys("rdma_create_event_channel");
}

void EventChannel::set_nonblocking() {
  const int flags = ::fcntl(channel_->fd, F_GETFL);
  if (flags < 0) throw_sys("fcntl(F_GETFL)");
  if (::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) throw_sys("fcntl(F_SETFL)");
}

std::optional<CmEvent> EventChannel::try_get() {
  rdma_cm_event* event = nullptr;
  // rdma_get_cm_event returns -1 and sets errno; on a non-blocking channel with nothing
  // queued that errno is EAGAIN.
  if (::rdma_get_cm_event(channel_.get(), &event) != 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
    throw_sys("rdma_get_cm_event");
  }
  return CmEvent(event);
}

}  // namespace rdmax
