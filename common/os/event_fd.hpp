#pragma once

#include <cstdint>

#include "common/os/fd.hpp"

namespace rdmax {

// A non-blocking eventfd: how a worker thread wakes the epoll loop. The worker calls
// signal(); the loop polls fd() for EPOLLIN and calls read_count(), which resets it.
class EventFd {
 public:
  EventFd();

  // Adds one to the counter. Safe from any thread; never blocks and never throws: the
  // only failure, a counter at its maximum, leaves the fd readable, which is all it is for.
  void signal() noexcept;

  // Signals since the last read; 0 if none (the fd is non-blocking).
  uint64_t read_count();

  int fd() const noexcept { return fd_.get(); }

 private:
  Fd fd_;
};

}  // namespace rdmax
