#include "common/file_hasher.hpp"

namespace rdmax {

namespace {

class SequentialSha256 final : public FileHasher {
 public:
  explicit SequentialSha256(WorkPool& pool) : queue_(pool) {}

  void hash(std::uint64_t, std::span<const std::uint8_t> bytes, Hashed done) override {
    auto error = std::make_shared<std::string>();
    queue_.post(
        [this, bytes, error] {
          try {
            hash_.update(bytes);
          } catch (const std::exception& e) {
            *error = e.what();
          }
        },
        [error, done = std::move(done)] { done({}, *error); });
  }
  void fold(std::span<const merkle::Node>) override {}  // the stream is in order already
  Digest finish(std::uint64_t) override { return hash_.finish(); }
  void cancel() override { queue_.cancel(); }
  bool idle() const override { return queue_.idle(); }

 private:
  Sha256 hash_;  // the queue's
  WorkQueue queue_;
};

class FsVerityTree final : public FileHasher {
 public:
  explicit FsVerityTree(WorkPool& pool) {
    for (unsigned i = 0; i < pool.threads(); ++i)
      queues_.push_back(std::make_unique<WorkQueue>(pool));
  }

  void hash(std::uint64_t offset, std::span<const std::uint8_t> bytes, Hashed done) override {
    struct Result {
      std::vector<merkle::Node> nodes;
      std::string error;
    };
    auto result = std::make_shared<Result>();
    WorkQueue& queue = *queues_[next_];
    next_ = (next_ + 1) % queues_.size();
    queue.post(
        [offset, bytes, result] {
          try {
            merkle::BlockHasher hasher;
            hasher.nodes(offset, bytes, result->nodes);
          } catch (const std::exception& e) {
            result->error = e.what();
          }
        },
        [result, done = std::move(done)] { done(std::move(result->nodes), result->error); });
  }
  void fold(std::span<const merkle::Node> nodes) override {
    if (!gap_) tree_.add(nodes);
  }
  Digest finish(std::uint64_t bytes) override {
    return gap_ ? Digest{} : merkle::file_digest(bytes, tree_.root());
  }
  void cancel() override {
    for (auto& queue : queues_) queue->cancel();
  }
  bool idle() const override {
    for (const auto& queue : queues_)
      if (!queue->idle()) return false;
    return true;
  }

 private:
  merkle::TreeFolder tree_;                         // the loop's
  std::vector<std::unique_ptr<WorkQueue>> queues_;  // one per pool thread
  std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<FileHasher> FileHasher::make(WorkPool& pool, proto::DigestAlgorithm algorithm) {
  if (algorithm == proto::DigestAlgorithm::FsVeritySha256)
    return std::make_unique<FsVerityTree>(pool);
  return std::make_unique<SequentialSha256>(pool);
}

}  // namespace rdmax
