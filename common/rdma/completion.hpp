#pragma once

#include <infiniband/verbs.h>

#include <span>

#include "common/rdma/owned.hpp"

namespace rdmax {

inline constexpr char kDestroyCompChannel[] = "ibv_destroy_comp_channel";
inline constexpr char kDestroyCq[] = "ibv_destroy_cq";

// Owns an ibv_comp_channel: the fd that becomes readable when an armed CQ gets a
// completion. Destroy it after every CQ attached to it (declare it first).
class CompletionChannel {
 public:
  explicit CompletionChannel(ibv_context* context);

  ibv_comp_channel* get() const noexcept { return channel_.get(); }
  int fd() const noexcept { return channel_->fd; }
  // Required before registering fd() with epoll and using get_event_and_ack().
  void set_nonblocking();

 private:
  // EBUSY on release: a CQ still uses the channel.
  Owned<ibv_comp_channel, ::ibv_destroy_comp_channel, kDestroyCompChannel> channel_;
};

// Owns an ibv_cq, optionally attached to a CompletionChannel. Destroy it after the QPs
// that use it (CmId) and before its channel.
//
// Event-driven use, when the channel fd is readable:
//   while (cq.get_event_and_ack()) {}   // consume the notification(s)
//   cq.request_notify();                // re-arm *before* draining, so that a
//   while (int n = cq.poll(wcs)) {...}  // completion arriving meanwhile is not missed
class CompletionQueue {
 public:
  // `min_entries` is a minimum: the device may round up.
  CompletionQueue(ibv_context* context, int min_entries, CompletionChannel* channel,
                  int comp_vector = 0);

  ibv_cq* get() const noexcept { return cq_.get(); }

  // Arms the one-shot notification for the next completion.
  void request_notify(bool solicited_only = false);

  // Fills `wcs` with up to wcs.size() completions and returns how many; throws SysError
  // if the CQ is in error (a fatal condition for all its QPs).
  [[nodiscard]] int poll(std::span<ibv_wc> wcs);

  // Consumes one notification from the (non-blocking) channel and acks it right away.
  // Returns false if none was pending. Acking each event immediately costs a mutex per
  // event but keeps ibv_destroy_cq, which waits for all acks, from ever blocking.
  bool get_event_and_ack();

 private:
  // EBUSY on release: a QP still uses the CQ.
  Owned<ibv_cq, ::ibv_destroy_cq, kDestroyCq> cq_;
  ibv_comp_channel* channel_ = nullptr;  // not owned
};

}  // namespace rdmax
