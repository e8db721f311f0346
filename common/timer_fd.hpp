#pragma once

#include <chrono>
#include <cstdint>

#include "common/fd.hpp"

namespace rdmax {

// A CLOCK_MONOTONIC, non-blocking timerfd for the epoll loop: wall-clock jumps never
// fire or delay protocol timeouts.
class TimerFd {
 public:
  TimerFd();

  // One shot after `delay`; a delay <= 0 fires as soon as possible (a zero it_value
  // would disarm the timer instead).
  void arm_after(std::chrono::milliseconds delay);
  // Every `period` starting one period from now; period must be positive.
  void arm_periodic(std::chrono::milliseconds period);
  void disarm();

  // Expirations since the last read; 0 if none (the fd is non-blocking).
  uint64_t read_expirations();

  int fd() const noexcept { return fd_.get(); }

 private:
  Fd fd_;
};

}  // namespace rdmax
