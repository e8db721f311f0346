#pragma once
// The process's one event loop: epoll over every fd the process waits on (the rdma_cm
// channel, each connection's completion channel, the worker pool's ready fd), SIGINT and
// SIGTERM as a signalfd, a periodic tick (timeouts, keepalives, progress, status) and a
// wake-up at an exact time for what the tick is too coarse for (a --bwlimit pace). Both
// programs run on it: rdma-recv serves every connection, rdma-send its -P connections.
//
// Why one class: the daemon and the sender had a loop each (the sender two) and the copies
// drifted. Dispatch goes by a number kept in epoll_event.data, never a pointer; an fd
// forgotten while a batch of events is dispatched gets nothing more from that batch.
//
// Threads: everything here, handlers included, runs on the thread that calls run().
// Signals: the constructor blocks SIGINT and SIGTERM in the calling thread (common/
// signal_fd.hpp): construct the loop before any other thread starts, so they inherit it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>

#include "common/os/epoll.hpp"
#include "common/os/signal_fd.hpp"
#include "common/os/timer_fd.hpp"

namespace rdmax {

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;

  explicit EventLoop(std::chrono::milliseconds tick);
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // `on_readable` runs whenever `fd` is readable, until forget(fd). One handler per fd.
  void watch(int fd, std::function<void()> on_readable);
  void forget(int fd) noexcept;
  void on_signal(std::function<void(int)> handler) { on_signal_ = std::move(handler); }
  // Every tick, and at each wake_at() time.
  void on_tick(std::function<void(Clock::time_point)> handler) { on_tick_ = std::move(handler); }
  // One more tick at `when` (replaces an earlier wake_at that has not come yet).
  void wake_at(Clock::time_point when) { wake_.arm_once_at(when); }

  // Dispatches events until `finished()`, which is asked before every wait (so at least
  // once a second) and before each event; `after_events` runs after each batch.
  void run(const std::function<bool()>& finished, const std::function<void()>& after_events = {});

 private:
  void dispatch(std::uint64_t number);

  Epoll epoll_;
  SignalFd signals_;
  TimerFd tick_;
  TimerFd wake_;
  std::function<void(int)> on_signal_;
  std::function<void(Clock::time_point)> on_tick_;
  std::map<std::uint64_t, std::function<void()>> handlers_;  // by watch number
  std::map<int, std::uint64_t> numbers_;                     // fd -> watch number
  std::uint64_t next_number_ = 1;
};

}  // namespace rdmax
