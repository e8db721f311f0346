#include "work_emulation.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/digest/sha256.hpp"
#include "common/work/work_pool.hpp"

namespace rdmax::bench {

EmulatedCores::EmulatedCores(unsigned cores, const Costs& costs)
    : costs_(costs), free_cores_(std::max(cores, 1u)) {}

void EmulatedCores::work(Work work, std::size_t bytes) {
  const double per_byte = work == Work::Hash   ? costs_.hash
                          : work == Work::Read ? costs_.read
                                               : costs_.write;
  wait_on_a_core(per_byte * static_cast<double>(bytes));
}

void EmulatedCores::spend(std::chrono::nanoseconds cpu) {
  wait_on_a_core(std::chrono::duration<double>(cpu).count());
}

void EmulatedCores::wait_on_a_core(double want) {
  {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [this] { return free_cores_ > 0; });
    --free_cores_;
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
    std::lock_guard lock(mutex_);
    ++free_cores_;
  }
  freed_.notify_one();
}

namespace {

// A file's hashing emulated: each chunk's hash a wait, on one queue per pool thread named as
// the real tree's queues, round robin; no nodes. Its digest is the SHA-256 of the bytes'
// count, which both sides compute alike (all zero after a gap, as the real trees' is).
class EmulatedHasher final : public FileHasher {
 public:
  EmulatedHasher(WorkPool& pool, EmulatedCores& cores) : cores_(cores) {
    for (unsigned i = 0; i < pool.threads(); ++i)
      queues_.push_back(std::make_unique<WorkQueue>(pool, "hashing: a file's tree"));
  }

  void hash(std::uint64_t, std::span<const std::uint8_t> bytes, Hashed done) override {
    WorkQueue& queue = *queues_[next_];
    next_ = (next_ + 1) % queues_.size();
    auto error = std::make_shared<std::string>();
    queue.post(
        [this, size = bytes.size(), error] {
          try {
            cores_.work(Work::Hash, size);
          } catch (const std::exception& e) {
            *error = e.what();
          }
        },
        [error, done = std::move(done)] { done({}, *error); });
  }
  void fold(std::span<const merkle::Node>) override {}
  Digest finish(std::uint64_t bytes) override {
    if (gap_) return Digest{};
    Sha256 hash;
    hash.update({reinterpret_cast<const std::uint8_t*>(&bytes), sizeof bytes});
    return hash.finish();
  }
  void cancel() override {
    for (auto& queue : queues_) queue->cancel();
  }
  bool idle() const override {
    return std::all_of(queues_.begin(), queues_.end(), [](const auto& q) { return q->idle(); });
  }
  bool running() const override {
    return std::any_of(queues_.begin(), queues_.end(), [](const auto& q) { return q->running(); });
  }

 private:
  EmulatedCores& cores_;
  std::vector<std::unique_ptr<WorkQueue>> queues_;  // one per pool thread; last: destroyed first
  std::size_t next_ = 0;
};

}  // namespace

sender::ChunkRead EmulatedCores::read() {
  return
      [this](int, std::span<std::uint8_t> into, std::uint64_t) { work(Work::Read, into.size()); };
}

FileHashing EmulatedCores::hashing() {
  FileHashing hashing;
  // Every digest algorithm alike: a tree's queues, SHA-256's too.
  hashing.make_hasher = [this](WorkPool& pool, proto::DigestAlgorithm, std::uint64_t) {
    return std::make_unique<EmulatedHasher>(pool, *this);
  };
  // A job that has the chunk anyway (the sender's sealed read) hashes it with no nodes.
  hashing.make_chunk_nodes = [this](proto::DigestAlgorithm, std::uint64_t) {
    return [this](std::uint64_t, std::span<const std::uint8_t> bytes, std::vector<merkle::Node>&) {
      work(Work::Hash, bytes.size());
    };
  };
  return hashing;
}

receiver::StoreWork EmulatedCores::store_work() {
  return {[this](OutputFile&, std::uint64_t, std::span<const std::uint8_t> bytes) {
            work(Work::Write, bytes.size());
          },
          hashing()};
}

}  // namespace rdmax::bench
