#include "common/work/work_emulation.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace rdmax::emulation {
namespace {

std::atomic<bool> on{false};
Costs costs;  // written by start() only while off
std::mutex mutex;
std::condition_variable freed;
unsigned free_cores = 0;

}  // namespace

void start(unsigned cores, const Costs& measured) {
  std::lock_guard lock(mutex);
  costs = measured;
  free_cores = cores == 0 ? 1 : cores;
  on = true;
}

void stop() {
  std::lock_guard lock(mutex);
  on = false;
}

bool active() {
  return on;
}

namespace {

// Waits `want` seconds holding one of the emulated cores.
void wait_on_a_core(double want) {
  {
    std::unique_lock lock(mutex);
    freed.wait(lock, [] { return free_cores > 0; });
    --free_cores;
  }
  // A wake-up comes late (tens of microseconds, more than a short job's own length at
  // times): the thread pays it back from its next waits, so that its waits add up to the
  // work they stand for.
  thread_local double late = 0;
  const double wait = std::max(0.0, want - late);
  const auto begin = std::chrono::steady_clock::now();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  late += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() - want;
  late = std::max(late, 0.0);
  {
    std::lock_guard lock(mutex);
    ++free_cores;
  }
  freed.notify_one();
}

}  // namespace

bool instead(Work work, std::size_t bytes) {
  if (!on) return false;
  const double per_byte = work == Work::Hash   ? costs.hash
                          : work == Work::Read ? costs.read
                                               : costs.write;
  wait_on_a_core(per_byte * static_cast<double>(bytes));
  return true;
}

bool spend(std::chrono::nanoseconds cpu) {
  if (!on) return false;
  wait_on_a_core(std::chrono::duration<double>(cpu).count());
  return true;
}

}  // namespace rdmax::emulation
