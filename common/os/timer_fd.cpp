#include "common/os/timer_fd.hpp"

#include <sys/timerfd.h>

#include <stdexcept>

#include "common/error.hpp"
#include "common/os/fd_counter.hpp"

namespace rdmax {
namespace {

timespec to_timespec(std::chrono::nanoseconds d) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(d);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(secs.count());
  ts.tv_nsec = static_cast<long>((d - secs).count());
  return ts;
}

void set_time(int fd, const itimerspec& spec) {
  if (::timerfd_settime(fd, 0, &spec, nullptr) != 0) throw_sys("timerfd_settime");
}

}  // namespace

TimerFd::TimerFd() : fd_(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) {
  if (!fd_) throw_sys("timerfd_create");
}

void TimerFd::arm_periodic(std::chrono::milliseconds period) {
  if (period.count() <= 0) throw std::invalid_argument("TimerFd: period must be positive");
  itimerspec spec{};
  spec.it_value = to_timespec(period);
  spec.it_interval = spec.it_value;
  set_time(fd_.get(), spec);
}

void TimerFd::arm_once_at(std::chrono::steady_clock::time_point when) {
  itimerspec spec{};
  spec.it_value = to_timespec(when.time_since_epoch());
  // Zero would disarm: the earliest representable time fires at once instead.
  if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  if (::timerfd_settime(fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0)
    throw_sys("timerfd_settime");
}

uint64_t TimerFd::read_expirations() {
  return read_fd_counter(fd_.get(), "read(timerfd)");
}

}  // namespace rdmax
