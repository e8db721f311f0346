#include "common/rdma/completion.hpp"

#include <fcntl.h>

#include <algorithm>
#include <climits>

#include "common/error.hpp"

namespace rdmax {

CompletionChannel::CompletionChannel(ibv_context* context) {
  errno = 0;
  channel_.reset(::ibv_create_comp_channel(context));
  if (!channel_) throw_sys("ibv_create_comp_channel", errno != 0 ? errno : ENOMEM);
}

void CompletionChannel::set_nonblocking() {
  const int flags = ::fcntl(channel_->fd, F_GETFL);
  if (flags < 0) throw_sys("fcntl(F_GETFL)");
  if (::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) throw_sys("fcntl(F_SETFL)");
}

CompletionQueue::CompletionQueue(ibv_context* context, int min_entries, CompletionChannel* channel,
                                 int comp_vector)
    : channel_(channel != nullptr ? channel->get() : nullptr) {
  // ibv_create_cq returns NULL and sets errno.
  errno = 0;
  cq_.reset(::ibv_create_cq(context, min_entries, nullptr, channel_, comp_vector));
  if (!cq_) throw_sys("ibv_create_cq", errno != 0 ? errno : ENOMEM);
}

void CompletionQueue::request_notify(bool solicited_only) {
  // Returns the errno value directly, not -1.
  if (int err = ::ibv_req_notify_cq(cq_.get(), solicited_only ? 1 : 0); err != 0) {
    throw_sys("ibv_req_notify_cq", err);
  }
}

int CompletionQueue::poll(std::span<ibv_wc> wcs) {
  const int max = static_cast<int>(std::min<size_t>(wcs.size(), INT_MAX));
  const int n = ::ibv_poll_cq(cq_.get(), max, wcs.data());
  // A negative result does not set errno (providers return various negative codes).
  if (n < 0) throw_sys("ibv_poll_cq", EIO);
  return n;
}

bool CompletionQueue::get_event_and_ack() {
  if (channel_ == nullptr) return false;
  ibv_cq* event_cq = nullptr;
  void* event_context = nullptr;
  // Returns -1 with errno from the channel read: EAGAIN when nothing is pending.
  if (::ibv_get_cq_event(channel_, &event_cq, &event_context) != 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    throw_sys("ibv_get_cq_event");
  }
  // Ack on the CQ the event names: with a shared channel it may be another CQ.
  ::ibv_ack_cq_events(event_cq, 1);
  return true;
}

}  // namespace rdmax
