#include "common/work/work_pool.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace rdmax {

// Every field is guarded by the pool's mutex_. A queue is in the pool's runnable_ list at
// most once (`listed`), and never while one of its jobs runs: that is what keeps its jobs
// one at a time and in order.
struct WorkPool::QueueState {
  std::deque<Job> jobs;       // posted, not started
  bool listed = false;        // in runnable_
  bool running = false;       // a worker runs one of its jobs (taken off `jobs`)
  std::size_t finishing = 0;  // in finished_, or taken by run_completions() and not started
  bool alive = true;          // false once the WorkQueue is destroyed: drop its `done`s
  std::size_t stage = 0;      // its index in stages_
  std::chrono::nanoseconds cpu{0};
};

namespace {
std::chrono::nanoseconds this_thread_cpu() {
  timespec used{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used);
  return std::chrono::seconds(used.tv_sec) + std::chrono::nanoseconds(used.tv_nsec);
}
}  // namespace

WorkPool::WorkPool(unsigned threads) {
  if (threads == 0) throw std::invalid_argument("WorkPool: at least one thread");
  threads_.reserve(threads);
  try {
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { run_thread(); });
  } catch (...) {
    stop_threads();  // a std::thread still joinable when destroyed would terminate
    throw;
  }
}

WorkPool::~WorkPool() {
  stop_threads();
}

void WorkPool::stop_threads() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_)
    if (thread.joinable()) thread.join();
}

void WorkPool::schedule(const std::shared_ptr<QueueState>& queue) {
  if (queue->listed || queue->running || queue->jobs.empty()) return;
  runnable_.push_back(queue);
  queue->listed = true;
  wake_.notify_one();
}

std::size_t WorkPool::queued() {
  std::lock_guard lock(mutex_);
  return queued_;
}

std::chrono::nanoseconds WorkPool::cpu_time() {
  std::chrono::nanoseconds total{0};
  for (std::thread& thread : threads_) {
    clockid_t clock{};
    timespec used{};
    if (::pthread_getcpuclockid(thread.native_handle(), &clock) != 0 ||
        ::clock_gettime(clock, &used) != 0)
      continue;
    total += std::chrono::seconds(used.tv_sec) + std::chrono::nanoseconds(used.tv_nsec);
  }
  return total;
}

void WorkPool::run_thread() {
  // Signals are the event loop's (a signalfd reads them there): a worker that let one in
  // would take SIGTERM's default action and kill the process mid-commit.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !runnable_.empty(); });
    if (stopping_) return;  // jobs not started are dropped with their queues
    std::shared_ptr<QueueState> queue = std::move(runnable_.front());
    runnable_.pop_front();
    queue->listed = false;
    if (queue->jobs.empty()) continue;  // cancelled while listed
    Job job = std::move(queue->jobs.front());
    queue->jobs.pop_front();
    --queued_;
    queue->running = true;
    lock.unlock();

    const auto cpu_before = this_thread_cpu();
    try {
      job.work();
    } catch (...) {
      // See the header: swallowed, and `done` is still delivered.
    }
    job.work = nullptr;  // its captures are released here, outside the mutex
    const auto used = this_thread_cpu() - cpu_before;

    lock.lock();
    queue->running = false;
    queue->cpu += used;
    StageCost& stage = stages_[queue->stage];
    stage.cpu += used;
    stage.busiest = std::max(stage.busiest, queue->cpu);
    // A destroyed queue's job goes to finished_ as well: run_completions() drops its
    // `done` on the loop thread, outside the mutex, which is where its captures belong.
    const bool first = finished_.empty();
    ++queue->finishing;
    finished_.emplace_back(queue, std::move(job));
    schedule(queue);  // its next job, if any, now that this one is over
    if (first) {
      // Only a list that was empty needs a signal: run_completions() reads the fd before
      // it takes the list, so a job added to a non-empty list is taken with the others.
      lock.unlock();
      ready_.signal();
      lock.lock();
    }
  }
}

std::size_t WorkPool::run_completions() {
  (void)ready_.read_count();  // first: a job finished after this signals again
  std::deque<std::pair<std::shared_ptr<QueueState>, Job>> batch;
  {
    std::lock_guard lock(mutex_);
    batch.swap(finished_);
  }
  std::size_t ran = 0;
  for (auto it = batch.begin(); it != batch.end(); ++it) {
    auto& [queue, job] = *it;
    {
      // Read here, not when the batch was taken: an earlier `done` may have destroyed it.
      std::lock_guard lock(mutex_);
      if (!queue->alive) continue;
      --queue->finishing;
    }
    if (!job.done) continue;
    try {
      job.done();
    } catch (...) {
      // The rest wait for the next call, ahead of anything finished since.
      {
        std::lock_guard lock(mutex_);
        finished_.insert(finished_.begin(), std::make_move_iterator(std::next(it)),
                         std::make_move_iterator(batch.end()));
      }
      ready_.signal();
      throw;
    }
    ++ran;
  }
  return ran;
}

std::vector<WorkPool::StageCost> WorkPool::stage_costs() {
  std::lock_guard lock(mutex_);
  return stages_;
}

WorkQueue::WorkQueue(WorkPool& pool, const char* stage)
    : pool_(pool), state_(std::make_shared<WorkPool::QueueState>()) {
  std::lock_guard lock(pool_.mutex_);
  auto& stages = pool_.stages_;
  auto it = std::find_if(stages.begin(), stages.end(),
                         [&](const WorkPool::StageCost& c) { return c.stage == stage; });
  if (it == stages.end()) it = stages.insert(stages.end(), WorkPool::StageCost{stage});
  ++it->queues;
  state_->stage = static_cast<std::size_t>(it - stages.begin());
}

WorkQueue::~WorkQueue() {
  std::deque<WorkPool::Job> dropped;  // destroyed after the mutex is released
  std::lock_guard lock(pool_.mutex_);
  state_->alive = false;
  dropped.swap(state_->jobs);
  pool_.queued_ -= dropped.size();
}

void WorkQueue::post(std::function<void()> work, std::function<void()> done) {
  if (!work) throw std::invalid_argument("WorkQueue::post: no work");
  std::lock_guard lock(pool_.mutex_);
  state_->jobs.push_back({std::move(work), std::move(done)});
  ++pool_.queued_;
  pool_.schedule(state_);
}

void WorkQueue::cancel() {
  std::deque<WorkPool::Job> dropped;  // destroyed after the mutex is released
  std::lock_guard lock(pool_.mutex_);
  dropped.swap(state_->jobs);
  pool_.queued_ -= dropped.size();
}

bool WorkQueue::idle() const {
  std::lock_guard lock(pool_.mutex_);
  return state_->jobs.empty() && !state_->running && state_->finishing == 0;
}

bool WorkQueue::running() const {
  std::lock_guard lock(pool_.mutex_);
  return state_->running;
}

std::size_t WorkQueue::outstanding() const {
  std::lock_guard lock(pool_.mutex_);
  return state_->jobs.size() + (state_->running ? 1 : 0) + state_->finishing;
}

}  // namespace rdmax
