#pragma once
// Reading the 8-byte counter of an eventfd or timerfd opened non-blocking.

#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "common/error.hpp"

namespace rdmax {

// The counter (which the read resets); 0 when it is zero (EAGAIN). `call` names the fd's
// kind in the error, e.g. "read(timerfd)".
inline uint64_t read_fd_counter(int fd, const char* call) {
  uint64_t count = 0;
  for (;;) {
    const ssize_t n = ::read(fd, &count, sizeof count);
    if (n == static_cast<ssize_t>(sizeof count)) return count;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    throw_sys(call, n < 0 ? errno : EIO);
  }
}

}  // namespace rdmax
