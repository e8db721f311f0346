#pragma once

#include <rdma/rdma_cma.h>

#include <memory>
#include <optional>

#include "common/rdma/owned.hpp"

namespace rdmax {

inline constexpr char kAckCmEvent[] = "rdma_ack_cm_event";

// Owns one reported CM event and acks it (rdma_ack_cm_event) on destruction. Every event
// must be acked: rdma_destroy_id blocks until all events of its id are acked, so an
// unacked event deadlocks teardown. Conversely the event's private data and, for
// CONNECT_REQUEST, its listen_id are only valid until the ack.
//
// Order rule: ack the event (destroy it or call ack()) before destroying the CmId it
// refers to. In particular, for an id adopted from a CONNECT_REQUEST that is rejected,
// call ack() before the adopted CmId goes out of scope.
class CmEvent {
 public:
  CmEvent() noexcept = default;
  explicit CmEvent(rdma_cm_event* event) noexcept : event_(event) {}

  // Acks now; idempotent. After this the accessors must not be used. (The ack fails only
  // for an event the library does not know; nothing useful to do then.)
  void ack() noexcept { event_.reset(); }

  rdma_cm_event* get() const noexcept { return event_.get(); }
  rdma_cm_event* operator->() const noexcept { return event_.get(); }
  rdma_cm_event_type type() const noexcept { return event_->event; }
  rdma_cm_id* id() const noexcept { return event_->id; }
  int status() const noexcept { return event_->status; }
  const char* name() const noexcept { return rdma_event_str(event_->event); }

 private:
  Owned<rdma_cm_event, ::rdma_ack_cm_event, kAckCmEvent, true> event_;
};

// Owns an rdma_event_channel, the fd through which all CM events of its ids arrive.
// Destroy it after every CmId created on it (declare it before them).
class EventChannel {
 public:
  EventChannel();

  rdma_event_channel* get() const noexcept { return channel_.get(); }
  int fd() const noexcept { return channel_->fd; }

  // Required before try_get(), and for registering fd() with epoll.
  void set_nonblocking();

  // Next event, or nullopt if none is queued. The channel must be non-blocking.
  std::optional<CmEvent> try_get();

 private:
  struct Destroy {  // rdma_destroy_event_channel cannot fail
    void operator()(rdma_event_channel* channel) const noexcept {
      ::rdma_destroy_event_channel(channel);
    }
  };
  std::unique_ptr<rdma_event_channel, Destroy> channel_;
};

}  // namespace rdmax
