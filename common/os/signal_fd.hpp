#pragma once

#include <signal.h>

#include <initializer_list>
#include <optional>

#include "common/os/fd.hpp"

namespace rdmax {

// Turns signals into readable events for the epoll loop. The constructor blocks the
// signals in the calling thread (create it in main before starting any thread, so every
// thread inherits the mask) and opens a non-blocking signalfd for them. The destructor
// closes the fd and restores the previous mask; nest instances LIFO.
class SignalFd {
 public:
  explicit SignalFd(std::initializer_list<int> signals = {SIGINT, SIGTERM});
  SignalFd(SignalFd&& other) noexcept;
  SignalFd& operator=(SignalFd&& other) noexcept;
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;
  ~SignalFd();

  int fd() const noexcept { return fd_.get(); }

  // The number of one pending signal, or nullopt if none is pending.
  std::optional<int> read_signal();

 private:
  void restore_mask() noexcept;

  Fd fd_;
  sigset_t previous_mask_{};
  bool restore_ = false;
};

}  // namespace rdmax
