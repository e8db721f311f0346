// The process's one event loop (common/os/event_loop.hpp): fd handlers, forgetting an fd in
// the middle of a batch, the tick, the exact wake-up and signals.

#include "common/os/event_loop.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>

#include "common/os/fd.hpp"

namespace rdmax {
namespace {

using namespace std::chrono_literals;
using Clock = EventLoop::Clock;

struct Pipe {
  Fd read, write;
  Pipe() {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    read = Fd(fds[0]);
    write = Fd(fds[1]);
  }
  void poke() { ASSERT_EQ(::write(write.get(), "x", 1), 1); }
  void drain() {
    char c;
    ASSERT_EQ(::read(read.get(), &c, 1), 1);
  }
};

TEST(EventLoop, AReadableFdRunsItsHandlerUntilFinished) {
  EventLoop loop(1000ms);
  Pipe p;
  int calls = 0;
  loop.watch(p.read.get(), [&] {
    p.drain();
    ++calls;
  });
  p.poke();
  int batches = 0;
  loop.run([&] { return calls == 1; }, [&] { ++batches; });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(batches, 1);
  EXPECT_THROW(loop.watch(p.read.get(), [] {}), std::logic_error);
}

TEST(EventLoop, AnFdForgottenInTheBatchGetsNothingMoreFromIt) {
  EventLoop loop(1000ms);
  Pipe a, b;
  int a_calls = 0, b_calls = 0;
  // Whichever runs first forgets the other: the other must not run from this batch.
  loop.watch(a.read.get(), [&] {
    ++a_calls;
    loop.forget(b.read.get());
    loop.forget(a.read.get());
  });
  loop.watch(b.read.get(), [&] {
    ++b_calls;
    loop.forget(a.read.get());
    loop.forget(b.read.get());
  });
  a.poke();
  b.poke();
  loop.run([&] { return a_calls + b_calls > 0; }, [] {});
  EXPECT_EQ(a_calls + b_calls, 1);
}

TEST(EventLoop, TicksAndAnExactWakeUp) {
  EventLoop loop(10s);  // the periodic tick far away: only the wake-up can tick
  int ticks = 0;
  loop.on_tick([&](Clock::time_point) { ++ticks; });
  const auto start = Clock::now();
  loop.wake_at(start + 30ms);
  loop.run([&] { return ticks == 1; });
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, 30ms);
  EXPECT_LT(waited, 900ms);  // not the 1 s wait, nor the 10 s tick

  EventLoop fast(20ms);
  int periodic = 0;
  fast.on_tick([&](Clock::time_point) { ++periodic; });
  fast.run([&] { return periodic == 3; });
  EXPECT_EQ(periodic, 3);
}

TEST(EventLoop, SignalsArriveAsEvents) {
  EventLoop loop(1000ms);
  int got = 0;
  loop.on_signal([&](int sig) { got = sig; });
  ASSERT_EQ(::pthread_kill(::pthread_self(), SIGTERM), 0);  // blocked: pending, not fatal
  loop.run([&] { return got != 0; });
  EXPECT_EQ(got, SIGTERM);
}

}  // namespace
}  // namespace rdmax
