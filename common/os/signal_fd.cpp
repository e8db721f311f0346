#include "common/os/signal_fd.hpp"

#include <pthread.h>
#include <sys/signalfd.h>

#include <utility>

#include "common/error.hpp"

namespace rdmax {

SignalFd::SignalFd(std::initializer_list<int> signals) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : signals) {
    if (sigaddset(&mask, sig) != 0) throw_sys("sigaddset");
  }
  // pthread_sigmask rather than sigprocmask: same effect, but defined in a process with
  // threads. It returns the error number instead of setting errno.
  if (int err = ::pthread_sigmask(SIG_BLOCK, &mask, &previous_mask_); err != 0) {
    throw_sys("pthread_sigmask", err);
  }
  restore_ = true;
  fd_.reset(::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_) {
    const int err = errno;
    restore_mask();
    throw_sys("signalfd", err);
  }
}

SignalFd::SignalFd(SignalFd&& other) noexcept
    : fd_(std::move(other.fd_)),
      previous_mask_(other.previous_mask_),
      restore_(std::exchange(other.restore_, false)) {}

SignalFd& SignalFd::operator=(SignalFd&& other) noexcept {
  if (this != &other) {
    fd_ = std::move(other.fd_);
    restore_mask();
    previous_mask_ = other.previous_mask_;
    restore_ = std::exchange(other.restore_, false);
  }
  return *this;
}

SignalFd::~SignalFd() {
  fd_.reset();
  restore_mask();
}

void SignalFd::restore_mask() noexcept {
  if (std::exchange(restore_, false)) ::pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

std::optional<int> SignalFd::read_signal() {
  signalfd_siginfo info{};
  for (;;) {
    const ssize_t n = ::read(fd_.get(), &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) return static_cast<int>(info.ssi_signo);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return std::nullopt;
    throw_sys("read(signalfd)", n < 0 ? errno : EIO);
  }
}

}  // namespace rdmax
