#include "common/event_fd.hpp"

#include <sys/eventfd.h>

#include "common/error.hpp"

namespace rdmax {

EventFd::EventFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!fd_) throw_sys("eventfd");
}

void EventFd::signal() noexcept {
  const uint64_t one = 1;
  while (::write(fd_.get(), &one, sizeof one) < 0 && errno == EINTR) {
  }
}

uint64_t EventFd::read_count() {
  uint64_t count = 0;
  for (;;) {
    const ssize_t n = ::read(fd_.get(), &count, sizeof count);
    if (n == static_cast<ssize_t>(sizeof count)) return count;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    throw_sys("read(eventfd)", n < 0 ? errno : EIO);
  }
}

}  // namespace rdmax
