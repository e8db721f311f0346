#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <span>

#include "common/os/fd.hpp"

namespace rdmax {

// The process's one event loop multiplexer. Each registration carries a caller-chosen
// 64-bit tag (epoll_event.data.u64) so the loop can dispatch without heap pointers.
class Epoll {
 public:
  Epoll();

  void add(int fd, uint32_t events, uint64_t tag);
  // Errors are ignored: the usual caller is teardown, where the fd may already be closed.
  void remove(int fd) noexcept;

  // Returns the number of ready events written to `events`; 0 on timeout or when a
  // signal interrupted the wait (the caller just loops, signals arrive via SignalFd).
  [[nodiscard]] int wait(std::span<epoll_event> events, int timeout_ms);

  int fd() const noexcept { return fd_.get(); }

 private:
  Fd fd_;
};

}  // namespace rdmax
