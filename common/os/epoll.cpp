#include "common/os/epoll.hpp"

#include <algorithm>
#include <climits>

#include "common/error.hpp"

namespace rdmax {

Epoll::Epoll() : fd_(::epoll_create1(EPOLL_CLOEXEC)) {
  if (!fd_) throw_sys("epoll_create1");
}

void Epoll::add(int fd, uint32_t events, uint64_t tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  if (::epoll_ctl(fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) throw_sys("epoll_ctl(ADD)");
}

void Epoll::remove(int fd) noexcept {
  ::epoll_ctl(fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

int Epoll::wait(std::span<epoll_event> events, int timeout_ms) {
  const int max_events = static_cast<int>(std::min<size_t>(events.size(), INT_MAX));
  const int n = ::epoll_wait(fd_.get(), events.data(), max_events, timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return 0;
    throw_sys("epoll_wait");
  }
  return n;
}

}  // namespace rdmax
