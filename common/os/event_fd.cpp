#include "common/os/event_fd.hpp"

#include <sys/eventfd.h>

#include "common/error.hpp"
#include "common/os/fd_counter.hpp"

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
  return read_fd_counter(fd_.get(), "read(eventfd)");
}

}  // namespace rdmax
