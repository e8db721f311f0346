#include "common/work_emulation.hpp"

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

bool instead(Work work, std::size_t bytes) {
  if (!on) return false;
  const double per_byte = work == Work::Hash   ? costs.hash
                          : work == Work::Read ? costs.read
                                               : costs.write;
  {
    std::unique_lock lock(mutex);
    freed.wait(lock, [] { return free_cores > 0; });
    --free_cores;
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(per_byte * static_cast<double>(bytes)));
  {
    std::lock_guard lock(mutex);
    ++free_cores;
  }
  freed.notify_one();
  return true;
}

}  // namespace rdmax::emulation
