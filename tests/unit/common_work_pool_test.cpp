// The worker pool (common/work/work_pool.hpp): per-queue order and exclusion, parallelism across
// queues, completions only on the loop thread, cancellation, destroyed queues, jobs that
// throw, and the eventfd. Events are ordered with condition variables; every wait is
// bounded so that a broken pool fails the test instead of hanging it.
//
// In each test, what the jobs touch is declared before the pool and the queues after it:
// when an assertion returns early, the queues go first, then the pool joins its threads,
// and only then does the state their jobs use.
#include "common/work/work_pool.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "gate.hpp"

namespace rdmax {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kBound = 10s;  // for a broken pool, never a pause

using test::Gate;  // jobs wait on it until the test opens it

// `parties` threads meet, round after round; a party that waits kBound in vain gives up.
class Meeting {
 public:
  explicit Meeting(int parties) : parties_(parties) {}
  [[nodiscard]] bool arrive_and_wait() {
    std::unique_lock lock(mutex_);
    const int round = round_;
    if (++arrived_ == parties_) {
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
      return true;
    }
    return changed_.wait_for(lock, kBound, [&] { return round_ != round; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const int parties_;
  int arrived_ = 0;
  int round_ = 0;
};

// The event loop's side: waits for ready_fd() and runs completions until `finished()` or
// kBound has passed. Returns finished().
bool run_until(WorkPool& pool, const std::function<bool()>& finished) {
  const auto deadline = Clock::now() + kBound;
  while (!finished()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= 0ms) return false;
    pollfd p{pool.ready_fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0) return false;
    (void)pool.run_completions();
  }
  return true;
}

bool readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 && (p.revents & POLLIN) != 0;
}

// The pool's CPU time is its threads' own: a job that spins for 50 ms of CPU adds about
// that much, and the time spent by this (the loop's) thread adds nothing.
TEST(WorkPool, CountsTheCpuTimeOfItsThreads) {
  WorkPool pool(2);
  const auto before = pool.cpu_time();
  const auto loop_start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - loop_start < 30ms) {  // busy here, not there
  }
  EXPECT_LT(pool.cpu_time() - before, 20ms);
  WorkQueue queue(pool);
  bool done = false;
  queue.post(
      [] {
        timespec used{};
        auto cpu = [&] {
          ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used);
          return std::chrono::seconds(used.tv_sec) + std::chrono::nanoseconds(used.tv_nsec);
        };
        const auto start = cpu();
        while (cpu() - start < 50ms) {
        }
      },
      [&] { done = true; });
  ASSERT_TRUE(run_until(pool, [&] { return done; }));
  const auto used = pool.cpu_time() - before;
  EXPECT_GE(used, 50ms);
  EXPECT_LT(used, 500ms);
}

TEST(WorkPool, NeedsAThread) {
  EXPECT_THROW(WorkPool(0), std::invalid_argument);
  WorkPool pool(3);
  EXPECT_EQ(pool.threads(), 3U);
  WorkQueue queue(pool);
  EXPECT_THROW(queue.post(nullptr, [] {}), std::invalid_argument);
  EXPECT_TRUE(queue.idle());
}

TEST(WorkPool, KeepsEachQueueInOrderUnderLoad) {
  constexpr int kQueues = 12;
  constexpr int kJobs = 150;
  // Each queue's jobs append to its own vector: one at a time, so without a lock of their
  // own (ThreadSanitizer checks that the pool orders them).
  std::vector<std::vector<int>> worked(kQueues), delivered(kQueues);
  WorkPool pool(4);
  std::vector<std::unique_ptr<WorkQueue>> queues;
  for (int q = 0; q < kQueues; ++q) queues.push_back(std::make_unique<WorkQueue>(pool));
  const auto loop_thread = std::this_thread::get_id();
  int off_loop = 0;
  for (int j = 0; j < kJobs; ++j) {
    for (int q = 0; q < kQueues; ++q) {
      queues[q]->post([&worked, q, j] { worked[q].push_back(j); },
                      [&, q, j] {
                        if (std::this_thread::get_id() != loop_thread) ++off_loop;
                        delivered[q].push_back(j);
                      });
    }
  }
  ASSERT_TRUE(run_until(pool, [&] {
    for (const auto& queue : queues)
      if (!queue->idle()) return false;
    return true;
  }));
  std::vector<int> in_order(kJobs);
  for (int j = 0; j < kJobs; ++j) in_order[j] = j;
  for (int q = 0; q < kQueues; ++q) {
    EXPECT_EQ(worked[q], in_order) << "queue " << q;
    EXPECT_EQ(delivered[q], in_order) << "queue " << q;
  }
  EXPECT_EQ(off_loop, 0);
}

TEST(WorkPool, RunsOneJobOfAQueueAtATime) {
  constexpr int kQueues = 4;
  constexpr int kJobs = 200;
  std::vector<std::atomic<int>> running(kQueues);
  std::atomic<int> overlaps{0};
  std::atomic<int> max_parallel{0}, parallel{0};
  int delivered = 0;
  WorkPool pool(4);
  std::vector<std::unique_ptr<WorkQueue>> queues;
  for (int q = 0; q < kQueues; ++q) queues.push_back(std::make_unique<WorkQueue>(pool));
  for (int j = 0; j < kJobs; ++j) {
    for (int q = 0; q < kQueues; ++q) {
      queues[q]->post(
          [&, q] {
            if (running[q].fetch_add(1) != 0) ++overlaps;
            const int now = ++parallel;
            for (int seen = max_parallel.load(); now > seen;)
              if (max_parallel.compare_exchange_weak(seen, now)) break;
            // A window to overlap, spun rather than yielded: on a loaded machine each yield
            // gives the CPU away for a time slice, and 16,000 of them outlasted the bound.
            for (const auto until = Clock::now() + 5us; Clock::now() < until;) {
            }
            --parallel;
            running[q].fetch_sub(1);
          },
          [&] { ++delivered; });
    }
  }
  ASSERT_TRUE(run_until(pool, [&] { return delivered == kQueues * kJobs; }));
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_LE(max_parallel.load(), 4);
}

TEST(WorkPool, RunsQueuesInParallel) {
  // Each round, a job of each queue waits for the other's: only two threads running both
  // queues at once get through.
  constexpr int kRounds = 5;
  Meeting meeting(2);
  std::atomic<int> met{0};
  int delivered = 0;
  WorkPool pool(2);
  WorkQueue a(pool), b(pool);
  for (int round = 0; round < kRounds; ++round) {
    for (WorkQueue* queue : {&a, &b})
      queue->post(
          [&] {
            if (meeting.arrive_and_wait()) ++met;
          },
          [&] { ++delivered; });
  }
  ASSERT_TRUE(run_until(pool, [&] { return delivered == 2 * kRounds; }));
  EXPECT_EQ(met.load(), 2 * kRounds);
}

TEST(WorkPool, RunsDoneOnlyInRunCompletionsOnTheCallingThread) {
  std::atomic<bool> worked{false};
  bool done = false;
  std::thread::id done_thread;
  WorkPool pool(2);
  WorkQueue queue(pool);
  queue.post([&] { worked = true; },
             [&] {
               done = true;
               done_thread = std::this_thread::get_id();
             });
  ASSERT_TRUE(readable(pool.ready_fd(), kBound));
  EXPECT_TRUE(worked.load());
  EXPECT_FALSE(done);  // finished, but waiting for the loop
  EXPECT_FALSE(queue.idle());
  EXPECT_EQ(queue.outstanding(), 1U);
  EXPECT_EQ(pool.run_completions(), 1U);
  EXPECT_TRUE(done);
  EXPECT_EQ(done_thread, std::this_thread::get_id());
  EXPECT_TRUE(queue.idle());
  EXPECT_EQ(queue.outstanding(), 0U);
}

TEST(WorkPool, CancelDropsTheJobsNotStarted) {
  Gate started, release;
  std::atomic<bool> gate_passed{false};
  std::atomic<int> later_worked{0};
  int later_done = 0;
  bool first_done = false, idle_in_done = false;
  bool again = false;
  WorkPool pool(2);
  WorkQueue queue(pool);
  queue.post(
      [&] {
        started.open();
        gate_passed = release.wait();
      },
      [&] {
        first_done = true;
        idle_in_done = queue.idle();  // a job's own `done` no longer counts
      });
  for (int j = 0; j < 4; ++j) queue.post([&] { ++later_worked; }, [&] { ++later_done; });
  ASSERT_TRUE(started.wait());
  EXPECT_EQ(queue.outstanding(), 5U);
  queue.cancel();
  EXPECT_EQ(queue.outstanding(), 1U);  // the running job cannot be dropped
  EXPECT_FALSE(queue.idle());
  release.open();
  ASSERT_TRUE(readable(pool.ready_fd(), kBound));
  EXPECT_FALSE(queue.idle());  // finished, but its `done` has not run
  EXPECT_EQ(pool.run_completions(), 1U);
  EXPECT_TRUE(gate_passed.load());
  EXPECT_TRUE(first_done);
  EXPECT_TRUE(idle_in_done);
  EXPECT_TRUE(queue.idle());
  // The queue still works after a cancel.
  queue.post([] {}, [&] { again = true; });
  ASSERT_TRUE(run_until(pool, [&] { return again; }));
  EXPECT_EQ(later_worked.load(), 0);
  EXPECT_EQ(later_done, 0);
}

TEST(WorkPool, NeverRunsTheDoneOfADestroyedQueue) {
  Gate started, release;
  std::atomic<bool> worked{false};
  std::atomic<bool> later_worked{false};
  bool done = false;
  WorkPool pool(2);
  auto queue = std::make_unique<WorkQueue>(pool);
  queue->post(
      [&] {
        started.open();
        worked = release.wait();
      },
      [&] { done = true; });
  queue->post([&] { later_worked = true; }, [&] { done = true; });
  ASSERT_TRUE(started.wait());
  queue.reset();  // while its job runs
  release.open();
  ASSERT_TRUE(readable(pool.ready_fd(), kBound));
  EXPECT_EQ(pool.run_completions(), 0U);
  EXPECT_TRUE(worked.load());
  EXPECT_FALSE(later_worked.load());
  EXPECT_FALSE(done);
}

TEST(WorkPool, SkipsTheDoneOfAQueueDestroyedByAnEarlierDone) {
  // One thread runs x1, y1, x2 in that order; once x2 has started, x1 and y1 both wait for
  // the loop, and x1's `done` destroys y's queue (as a done that ends a connection would).
  Gate x2_started, release;
  bool y_done = false;
  int x_done = 0;
  WorkPool pool(1);
  auto x = std::make_unique<WorkQueue>(pool);
  auto y = std::make_unique<WorkQueue>(pool);
  x->post([] {},
          [&] {
            ++x_done;
            y.reset();
          });
  y->post([] {}, [&] { y_done = true; });
  x->post(
      [&] {
        x2_started.open();
        (void)release.wait();
      },
      [&] { ++x_done; });
  ASSERT_TRUE(x2_started.wait());
  EXPECT_EQ(pool.run_completions(), 1U);
  EXPECT_EQ(y.get(), nullptr);
  EXPECT_FALSE(y_done);
  release.open();
  ASSERT_TRUE(run_until(pool, [&] { return x_done == 2; }));
  EXPECT_FALSE(y_done);
}

TEST(WorkPool, SurvivesAJobThatThrows) {
  int delivered = 0;
  std::atomic<bool> after{false};
  WorkPool pool(1);  // one thread: the job after the throw runs on the same one
  WorkQueue queue(pool);
  queue.post([] { throw std::runtime_error("escaped"); }, [&] { ++delivered; });
  queue.post([] { throw 42; }, [&] { ++delivered; });
  queue.post([&] { after = true; }, [&] { ++delivered; });
  ASSERT_TRUE(run_until(pool, [&] { return delivered == 3; }));
  EXPECT_TRUE(after.load());
  EXPECT_TRUE(queue.idle());
}

TEST(WorkPool, KeepsTheRestWhenADoneThrows) {
  Gate third_started, release;
  std::vector<int> delivered;
  WorkPool pool(1);
  WorkQueue queue(pool);
  queue.post([] {},
             [&] {
               delivered.push_back(1);
               throw std::runtime_error("done failed");
             });
  queue.post([] {}, [&] { delivered.push_back(2); });
  queue.post(
      [&] {
        third_started.open();
        (void)release.wait();
      },
      [&] { delivered.push_back(3); });
  ASSERT_TRUE(third_started.wait());  // 1 and 2 are waiting for the loop
  EXPECT_THROW(pool.run_completions(), std::runtime_error);
  EXPECT_EQ(delivered, std::vector<int>{1});
  EXPECT_TRUE(readable(pool.ready_fd(), 0ms));  // 2 is still waiting
  release.open();
  ASSERT_TRUE(run_until(pool, [&] { return delivered.size() == 3; }));
  EXPECT_EQ(delivered, (std::vector<int>{1, 2, 3}));
}

TEST(WorkPool, DonePostsTheNextJob) {
  WorkPool pool(2);
  WorkQueue queue(pool);
  int chain = 0;
  std::function<void()> next = [&] {
    if (++chain < 10) queue.post([] {}, next);
  };
  queue.post([] {}, next);
  ASSERT_TRUE(run_until(pool, [&] { return chain == 10; }));
  EXPECT_TRUE(queue.idle());
}

TEST(WorkPool, SignalsTheEventFdWhenAJobFinishes) {
  Gate started, release;
  WorkPool pool(1);
  WorkQueue queue(pool);
  EXPECT_FALSE(readable(pool.ready_fd(), 0ms));
  queue.post(
      [&] {
        started.open();
        (void)release.wait();
      },
      [] {});
  ASSERT_TRUE(started.wait());
  EXPECT_FALSE(readable(pool.ready_fd(), 0ms));  // running, not finished
  release.open();
  EXPECT_TRUE(readable(pool.ready_fd(), kBound));
  EXPECT_EQ(pool.run_completions(), 1U);
  EXPECT_FALSE(readable(pool.ready_fd(), 0ms));  // run_completions() read it
}

TEST(WorkPool, DestructionWaitsForTheRunningJob) {
  Gate started, release;
  std::atomic<bool> finished{false};
  auto pool = std::make_unique<WorkPool>(1);
  {
    WorkQueue queue(*pool);
    queue.post(
        [&] {
          started.open();
          (void)release.wait();
          finished = true;
        },
        [] {});
    ASSERT_TRUE(started.wait());
  }  // the queue goes first (the pool outlives it); its running job does not
  release.open();
  pool.reset();  // joins the thread, after its job
  EXPECT_TRUE(finished.load());
}

}  // namespace
TEST(WorkPool, WorkersBlockEverySignal) {
  // The process's signals belong to the event loop's signalfd: a worker that let SIGTERM in
  // would take its default action and kill the daemon.
  WorkPool pool(1);
  WorkQueue queue(pool);
  bool term_blocked = false, int_blocked = false, done = false;
  queue.post(
      [&] {
        sigset_t mask;
        pthread_sigmask(SIG_BLOCK, nullptr, &mask);
        term_blocked = sigismember(&mask, SIGTERM) == 1;
        int_blocked = sigismember(&mask, SIGINT) == 1;
      },
      [&] { done = true; });
  ASSERT_TRUE(run_until(pool, [&] { return done; }));
  EXPECT_TRUE(term_blocked);
  EXPECT_TRUE(int_blocked);
}

// What a benchmark reads (tests/bench/pipeline_bench.cpp): each named stage's CPU time,
// its busiest queue's, and its queues; unnamed queues are "other".
TEST(WorkPool, AddsUpEachStagesCpuTimeAndItsBusiestQueue) {
  auto spin = [](std::chrono::milliseconds cpu) {
    timespec t{};
    const auto until = [&] {
      ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
      return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
    };
    const auto end = until() + cpu;
    while (until() < end) {
    }
  };
  WorkPool pool(2);
  WorkQueue busy(pool, "stage a");
  WorkQueue light(pool, "stage a");
  WorkQueue other(pool);
  int done = 0;
  for (int i = 0; i < 3; ++i) busy.post([&] { spin(20ms); }, [&] { ++done; });
  light.post([&] { spin(10ms); }, [&] { ++done; });
  other.post([&] { spin(5ms); }, [&] { ++done; });
  ASSERT_TRUE(run_until(pool, [&] { return done == 5; }));
  const auto costs = pool.stage_costs();
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].stage, "stage a");
  EXPECT_EQ(costs[0].queues, 2u);
  EXPECT_GE(costs[0].cpu, 70ms);
  EXPECT_LT(costs[0].cpu, 140ms);
  EXPECT_GE(costs[0].busiest, 60ms);
  EXPECT_LT(costs[0].busiest, costs[0].cpu);
  EXPECT_EQ(costs[1].stage, "other");
  EXPECT_GE(costs[1].cpu, 5ms);
  EXPECT_LE(costs[0].cpu + costs[1].cpu, pool.cpu_time());
}

}  // namespace rdmax
