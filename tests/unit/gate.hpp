#pragma once
// A one-way gate for tests that hold a worker's job until the test opens it; a wait is
// bounded, so that a broken pool fails the test instead of hanging it.

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace rdmax::test {

class Gate {
 public:
  static constexpr auto kBound = std::chrono::seconds(10);

  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }
  // False if the gate stayed shut for kBound.
  [[nodiscard]] bool wait() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kBound, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

}  // namespace rdmax::test
