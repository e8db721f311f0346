#pragma once
// A bounded pool of worker threads for the work an event loop must never wait on: disk
// (create, write, fsync, rename, unlink; the sender's reads of the chunks it sends) and
// hashing. One pool per process.
//
// Jobs are posted to a WorkQueue: the jobs of one queue run one at a time, in the order
// they were posted (a connection's writes stay in file order), while jobs of different
// queues run in parallel on the pool's threads. A job's `work` runs on a worker thread;
// its `done` runs later on the event loop, in the thread that calls run_completions()
// after ready_fd() became readable, in the order the queue's jobs finished (which is the
// order they were posted).
//
// Lifetime: a WorkQueue must outlive its jobs' `done` callbacks, which usually capture
// its owner. So an owner is destroyed only once its queue is idle(): cancel() drops the
// jobs not started yet (their `done` never runs), and the job running on a worker (it
// cannot be interrupted) has its `done` delivered as usual. The pool must outlive every
// queue; destroying the pool stops the threads after their current jobs and drops the jobs
// not started and the `done` callbacks not run.
//
// Threads: post(), cancel(), idle(), outstanding(), run_completions() and the destructors
// belong to the event loop's thread. `work` must not touch the WorkQueue or the pool.
//
// Stages: a queue may name the stage of the pipeline its jobs are (a string literal, such as
// "receiver: a file's disk work"); the pool adds up the CPU time of each stage's jobs and of
// its busiest queue, so that a benchmark can show what serialises (tests/bench/README.md).
//
// Exceptions: `work` is expected to catch its own and hand the outcome to `done` through
// captured state. One that escapes anyway is swallowed (a daemon must not terminate, and
// the worker thread lives on) and `done` is still delivered, so the owner's bookkeeping
// stays whole; `done` has no way to tell, so a `work` that can fail must catch. An
// exception thrown by `done` leaves run_completions(); the completions not run yet stay
// for the next call (the fd stays readable).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "common/os/event_fd.hpp"

namespace rdmax {

class WorkQueue;

class WorkPool {
 public:
  // Starts `threads` worker threads; throws std::invalid_argument if it is 0.
  explicit WorkPool(unsigned threads);
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;
  ~WorkPool();

  // Readable when finished jobs wait for run_completions(), which reads it (so the loop
  // does not read it itself). It may be readable with nothing to run.
  int ready_fd() const { return ready_.fd(); }
  // Runs the `done` callbacks of every finished job, on the calling thread, skipping those
  // of destroyed queues. Returns how many ran. A `done` may post, cancel, or destroy its
  // own or another queue (whose completions still waiting are then skipped).
  std::size_t run_completions();
  unsigned threads() const { return static_cast<unsigned>(threads_.size()); }
  // Jobs posted and not started yet, of every queue: how far the pool is behind.
  std::size_t queued();
  // CPU time the pool's threads have used so far, all together (what a benchmark charges
  // to the side that owns the pool).
  std::chrono::nanoseconds cpu_time();
  // The CPU time of the jobs of each stage named by a queue (see above).
  struct StageCost {
    std::string_view stage;               // a string literal's
    std::chrono::nanoseconds cpu{0};      // all its queues' jobs together
    std::chrono::nanoseconds busiest{0};  // the queue that used the most
    std::size_t queues = 0;               // made so far
  };
  std::vector<StageCost> stage_costs();

 private:
  friend class WorkQueue;
  struct Job {
    std::function<void()> work;
    std::function<void()> done;
  };
  struct QueueState;  // per WorkQueue, shared with the pool's threads
  void schedule(const std::shared_ptr<QueueState>& queue);  // with mutex_ held
  void run_thread();
  void stop_threads() noexcept;  // sets stopping_, wakes and joins every thread

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<QueueState>> runnable_;  // queues with a job to start
  std::deque<std::pair<std::shared_ptr<QueueState>, Job>> finished_;
  std::vector<StageCost> stages_;  // by first use
  std::size_t queued_ = 0;         // jobs of every queue, posted and not started
  bool stopping_ = false;
  EventFd ready_;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

class WorkQueue {
 public:
  // `stage`: a string literal naming the pipeline stage its jobs are (see WorkPool).
  explicit WorkQueue(WorkPool& pool, const char* stage = "other");
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  // Cancels what has not started. The owner must have waited for idle() (see above):
  // a `done` delivered after this would call into a destroyed owner, so it is dropped.
  ~WorkQueue();

  // `work` must not be empty (std::invalid_argument); an empty `done` is allowed and still
  // counts as outstanding until its turn in run_completions().
  void post(std::function<void()> work, std::function<void()> done);
  // Drops the jobs not started yet; their `done` never runs.
  void cancel();
  // Nothing queued, nothing running, no `done` waiting to run.
  bool idle() const;
  // One of its jobs' `work` runs on a worker now (what a buffer's owner waits out).
  bool running() const;
  // Jobs posted whose `done` has not started yet (and that were not cancelled): inside its
  // own `done`, a job no longer counts, so the last `done` sees idle().
  std::size_t outstanding() const;

 private:
  WorkPool& pool_;
  std::shared_ptr<WorkPool::QueueState> state_;
};

}  // namespace rdmax
