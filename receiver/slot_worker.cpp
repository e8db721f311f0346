#include "receiver/slot_worker.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

namespace rdmax::receiver {

SlotWorker::SlotWorker(OutputFile& file, EventFd& done, std::size_t capacity)
    : file_(file), done_(done), ring_(capacity) {
  if (capacity == 0) throw std::invalid_argument("SlotWorker: capacity must be positive");
  hasher_ = std::jthread([this](std::stop_token stop) { run(Stage::Hash, stop); });
  writer_ = std::jthread([this](std::stop_token stop) { run(Stage::Write, stop); });
}

void SlotWorker::submit(const Chunk& chunk) {
  if (outstanding_ >= ring_.size())
    throw std::logic_error("SlotWorker: more chunks outstanding than slots");
  {
    std::lock_guard lock(mutex_);
    Entry& entry = ring_[submitted_ % ring_.size()];
    entry = Entry{};
    entry.result.chunk = chunk;
    ++submitted_;
  }
  ++outstanding_;
  wake_.notify_all();
}

std::optional<SlotWorker::Result> SlotWorker::take_finished() {
  std::lock_guard lock(mutex_);
  if (taken_ >= std::min(hashed_, written_)) return std::nullopt;
  Entry& entry = ring_[taken_ % ring_.size()];
  Result result = std::move(entry.result);
  if (!entry.hash_error.empty() && result.stored) {
    result.stored = false;
    result.error = std::move(entry.hash_error);
  }
  ++taken_;
  --outstanding_;
  return result;
}

Digest SlotWorker::finish_hash() {
  if (outstanding_ != 0) throw std::logic_error("SlotWorker: hash finished while storing");
  std::lock_guard lock(mutex_);
  return hash_.finish();
}

void SlotWorker::run(Stage stage, const std::stop_token& stop) {
  std::uint64_t& done = stage == Stage::Hash ? hashed_ : written_;
  std::unique_lock lock(mutex_);
  for (;;) {
    // Wakes for a chunk, or to stop: chunks still queued are then dropped.
    wake_.wait(lock, stop, [&] { return done < submitted_; });
    if (stop.stop_requested()) return;
    // This thread alone touches its half of the entry (the hash, or the write and its
    // outcome) until it advances its count; the ring slot is not reused before the
    // result is taken, which needs both counts past it.
    Entry& entry = ring_[done % ring_.size()];
    lock.unlock();
    if (stage == Stage::Hash)
      hash_one(entry);
    else
      write_one(entry.result);
    lock.lock();
    const std::uint64_t complete = std::min(hashed_, written_);
    ++done;
    // One signal per chunk both hashed and written: this stage was the one behind.
    if (std::min(hashed_, written_) > complete) done_.signal();
    // A hole in the file, or a hash that missed a chunk: this stage stops (the transfer
    // is over; the other stage's further work is discarded with it).
    if (stage == Stage::Write ? !entry.result.stored : !entry.hash_error.empty()) return;
  }
}

void SlotWorker::hash_one(Entry& entry) {
  const auto t0 = Clock::now();
  try {
    hash_.update(entry.result.chunk.bytes);
  } catch (const std::exception& e) {
    try {
      entry.hash_error = std::string("hashing failed: ") + e.what();
    } catch (...) {
      entry.hash_error.assign(1, '?');  // SSO: no allocation; the failure still gets through
    }
  }
  entry.result.hashing = Clock::now() - t0;
}

void SlotWorker::write_one(Result& result) {
  const auto t0 = Clock::now();
  try {
    file_.write_at(result.chunk.offset, result.chunk.bytes);
    result.writing = Clock::now() - t0;
  } catch (const std::exception& e) {
    result.stored = false;
    try {
      result.error = e.what();
    } catch (...) {
      // No memory even for the message: the failure itself still gets through.
    }
  }
}

}  // namespace rdmax::receiver
