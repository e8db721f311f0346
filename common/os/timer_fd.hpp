#pragma once

#include <chrono>
#include <cstdint>

#include "common/os/fd.hpp"

namespace rdmax {

// A CLOCK_MONOTONIC, non-blocking timerfd for the epoll loop: wall-clock jumps never
// fire or delay protocol timeouts.
class TimerFd {
 public:
  TimerFd();

  // Every `period` starting one period from now; period must be positive.
  void arm_periodic(std::chrono::milliseconds period);

  // Once, at `when` on the steady clock (CLOCK_MONOTONIC); a time already past fires at
  // once. Replaces any earlier setting.
  void arm_once_at(std::chrono::steady_clock::time_point when);

  // Expirations since the last read; 0 if none (the fd is non-blocking).
  uint64_t read_expirations();

  int fd() const noexcept { return fd_.get(); }

 private:
  Fd fd_;
};

}  // namespace rdmax
