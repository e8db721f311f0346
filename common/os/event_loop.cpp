#include "common/os/event_loop.hpp"

#include <array>
#include <stdexcept>
#include <utility>

namespace rdmax {

EventLoop::EventLoop(std::chrono::milliseconds tick) {
  watch(signals_.fd(), [this] {
    while (auto sig = signals_.read_signal())
      if (on_signal_) on_signal_(*sig);
  });
  watch(tick_.fd(), [this] {
    if (tick_.read_expirations() > 0 && on_tick_) on_tick_(Clock::now());
  });
  watch(wake_.fd(), [this] {
    if (wake_.read_expirations() > 0 && on_tick_) on_tick_(Clock::now());
  });
  tick_.arm_periodic(tick);
}

void EventLoop::watch(int fd, std::function<void()> on_readable) {
  if (numbers_.count(fd) != 0) throw std::logic_error("EventLoop::watch: fd watched already");
  const std::uint64_t number = next_number_++;
  epoll_.add(fd, EPOLLIN, number);
  numbers_.emplace(fd, number);
  handlers_.emplace(number, std::move(on_readable));
}

void EventLoop::forget(int fd) noexcept {
  const auto it = numbers_.find(fd);
  if (it == numbers_.end()) return;
  epoll_.remove(fd);
  handlers_.erase(it->second);
  numbers_.erase(it);
}

void EventLoop::dispatch(std::uint64_t number) {
  const auto it = handlers_.find(number);
  if (it == handlers_.end()) return;  // forgotten earlier in this batch
  // A copy: the handler may forget its own fd, destroying the stored function.
  const std::function<void()> handler = it->second;
  handler();
}

void EventLoop::run(const std::function<bool()>& finished,
                    const std::function<void()>& after_events) {
  std::array<epoll_event, 16> events{};
  while (!finished()) {
    const int n = epoll_.wait(events, 1000);
    for (int i = 0; i < n && !finished(); ++i)
      dispatch(events[static_cast<std::size_t>(i)].data.u64);
    if (after_events) after_events();
  }
}

}  // namespace rdmax
