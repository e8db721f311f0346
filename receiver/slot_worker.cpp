#include "receiver/slot_worker.hpp"

#include <exception>
#include <stdexcept>
#include <utility>

namespace rdmax::receiver {

SlotWorker::SlotWorker(OutputFile& file, EventFd& done, std::size_t capacity)
    : file_(file), done_(done), finished_(capacity) {
  if (capacity == 0) throw std::invalid_argument("SlotWorker: capacity must be positive");
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void SlotWorker::submit(const Chunk& chunk) {
  if (outstanding_ >= finished_.size())
    throw std::logic_error("SlotWorker: more chunks outstanding than slots");
  {
    std::lock_guard lock(mutex_);
    queued_.push_back(chunk);
  }
  ++outstanding_;
  wake_.notify_one();
}

std::optional<SlotWorker::Result> SlotWorker::take_finished() {
  std::lock_guard lock(mutex_);
  if (finished_count_ == 0) return std::nullopt;
  Result result = std::move(finished_[first_finished_]);
  first_finished_ = (first_finished_ + 1) % finished_.size();
  --finished_count_;
  --outstanding_;
  return result;
}

Digest SlotWorker::finish_hash() {
  if (outstanding_ != 0) throw std::logic_error("SlotWorker: hash finished while storing");
  std::lock_guard lock(mutex_);
  return hash_.finish();
}

void SlotWorker::run(const std::stop_token& stop) {
  std::unique_lock lock(mutex_);
  for (;;) {
    // Wakes for a chunk, or to stop: chunks still queued are then dropped.
    wake_.wait(lock, stop, [&] { return !queued_.empty(); });
    if (stop.stop_requested()) return;
    const Chunk chunk = queued_.front();
    queued_.pop_front();
    lock.unlock();
    Result result = store(chunk);
    const bool failed = !result.stored;
    lock.lock();
    // Never full: a chunk is outstanding until its result is taken, and at most
    // finished_.size() are.
    finished_[(first_finished_ + finished_count_) % finished_.size()] = std::move(result);
    ++finished_count_;
    done_.signal();
    // The file now has a hole and the hash misses a chunk: store nothing more.
    if (failed) return;
  }
}

SlotWorker::Result SlotWorker::store(const Chunk& chunk) {
  Result result;
  result.chunk = chunk;
  const auto t0 = Clock::now();
  try {
    hash_.update(chunk.bytes);
    const auto t1 = Clock::now();
    result.hashing = t1 - t0;
    file_.write_at(chunk.offset, chunk.bytes);
    result.writing = Clock::now() - t1;
  } catch (const std::exception& e) {
    result.stored = false;
    try {
      result.error = e.what();
    } catch (...) {
      // No memory even for the message: the failure itself still gets through.
    }
  }
  return result;
}

}  // namespace rdmax::receiver
