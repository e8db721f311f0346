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

  // Every `period` starting one period from now; period must be positive.
  void arm_periodic(std::chrono::milliseconds period);

  // Expirations since the last read; 0 if none (the fd is non-blocking).
  uint64_t read_expirations();

  int fd() const noexcept { return fd_.get(); }

 private:
  Fd fd_;
};

}  // namespace rdmax
