#include "common/digest/file_hasher.hpp"

#include "common/digest/blake3_tree.hpp"

namespace rdmax {

namespace {

class SequentialSha256 final : public FileHasher {
 public:
  explicit SequentialSha256(WorkPool& pool) : queue_(pool, "hashing: a file's SHA-256 stream") {}

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
  bool running() const override { return queue_.running(); }

 private:
  Sha256 hash_;  // the queue's
  WorkQueue queue_;
};

// fs-verity's or BLAKE3's tree: each chunk's nodes on any queue, folded in file order.
class TreeHasher : public FileHasher {
 public:
  explicit TreeHasher(WorkPool& pool) {
    for (unsigned i = 0; i < pool.threads(); ++i)
      queues_.push_back(std::make_unique<WorkQueue>(pool, "hashing: a file's tree"));
  }
  void cancel() override {
    for (auto& queue : queues_) queue->cancel();
  }
  bool idle() const override {
    for (const auto& queue : queues_)
      if (!queue->idle()) return false;
    return true;
  }
  bool running() const override {
    for (const auto& queue : queues_)
      if (queue->running()) return true;
    return false;
  }

 protected:
  // Runs `nodes_of` on the next queue, round robin; `nodes_of` must touch nothing but its
  // arguments.
  void post(std::uint64_t offset, std::span<const std::uint8_t> bytes, const ChunkNodes& nodes_of,
            Hashed done) {
    struct Result {
      std::vector<merkle::Node> nodes;
      std::string error;
    };
    auto result = std::make_shared<Result>();
    WorkQueue& queue = *queues_[next_];
    next_ = (next_ + 1) % queues_.size();
    queue.post(
        [offset, bytes, result, nodes_of] {
          try {
            nodes_of(offset, bytes, result->nodes);
          } catch (const std::exception& e) {
            result->error = e.what();
          }
        },
        [result, done = std::move(done)] { done(std::move(result->nodes), result->error); });
  }

 private:
  std::vector<std::unique_ptr<WorkQueue>> queues_;  // one per pool thread
  std::size_t next_ = 0;
};

// BLAKE3's and fs-verity's tree: each chunk's nodes by FileHasher::chunk_nodes, folded by its
// own rules.
class Tree final : public TreeHasher {
 public:
  Tree(WorkPool& pool, proto::DigestAlgorithm algorithm, std::uint64_t file_size)
      : TreeHasher(pool), algorithm_(algorithm), nodes_of_(chunk_nodes(algorithm, file_size)) {}

  void hash(std::uint64_t offset, std::span<const std::uint8_t> bytes, Hashed done) override {
    post(offset, bytes, nodes_of_, std::move(done));
  }
  void fold(std::span<const merkle::Node> nodes) override {
    if (gap_) return;
    if (algorithm_ == proto::DigestAlgorithm::Blake3)
      blake3_.add(nodes);
    else
      tree_.add(nodes);
  }
  Digest finish(std::uint64_t bytes) override {
    if (gap_) return Digest{};
    if (algorithm_ != proto::DigestAlgorithm::Blake3)
      return merkle::file_digest(bytes, tree_.root());
    try {
      return blake3_.finish(bytes);
    } catch (const std::logic_error&) {
      return Digest{};  // fewer bytes folded than `bytes`: no digest, as for a gap
    }
  }

 private:
  proto::DigestAlgorithm algorithm_;
  ChunkNodes nodes_of_;
  blake3::Folder blake3_;    // the loop's
  merkle::TreeFolder tree_;  // the loop's
};

}  // namespace

std::unique_ptr<FileHasher> FileHasher::make(WorkPool& pool, proto::DigestAlgorithm algorithm,
                                             std::uint64_t file_size) {
  if (algorithm != proto::DigestAlgorithm::WholeFileSha256)
    return std::make_unique<Tree>(pool, algorithm, file_size);
  return std::make_unique<SequentialSha256>(pool);
}

FileHasher::ChunkNodes FileHasher::chunk_nodes(proto::DigestAlgorithm algorithm,
                                               std::uint64_t file_size) {
  if (algorithm == proto::DigestAlgorithm::Blake3) {
    return [file_size](std::uint64_t at, std::span<const std::uint8_t> data,
                       std::vector<merkle::Node>& out) {
      blake3::nodes(at, data, at + data.size() == file_size, out);
    };
  }
  if (algorithm == proto::DigestAlgorithm::FsVeritySha256) {
    return
        [](std::uint64_t at, std::span<const std::uint8_t> data, std::vector<merkle::Node>& out) {
          merkle::BlockHasher hasher;
          hasher.nodes(at, data, out);
        };
  }
  return {};
}

std::unique_ptr<FileHasher> FileHashing::make(WorkPool& pool, proto::DigestAlgorithm algorithm,
                                              std::uint64_t file_size) const {
  return make_hasher ? make_hasher(pool, algorithm, file_size)
                     : FileHasher::make(pool, algorithm, file_size);
}

FileHasher::ChunkNodes FileHashing::chunk_nodes(proto::DigestAlgorithm algorithm,
                                                std::uint64_t file_size) const {
  return make_chunk_nodes ? make_chunk_nodes(algorithm, file_size)
                          : FileHasher::chunk_nodes(algorithm, file_size);
}

}  // namespace rdmax
