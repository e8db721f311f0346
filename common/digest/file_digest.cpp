#include "common/digest/file_digest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/digest/blake3_tree.hpp"
#include "common/digest/merkle.hpp"
#include "common/error.hpp"
#include "common/os/mapping_guard.hpp"

namespace rdmax {
namespace {

// 4 MiB: large enough that taking a segment costs nothing next to hashing it, small enough
// that a few per thread keep every core busy on a file of tens of megabytes. A whole number
// of fs-verity groups, and a power of two of BLAKE3 chunks (one subtree per segment).
constexpr std::uint64_t kSegmentBytes = 8 * merkle::kGroupBytes;
static_assert(kSegmentBytes % merkle::kGroupBytes == 0 &&
              std::has_single_bit(kSegmentBytes / blake3::kChunkBytes));
constexpr unsigned kSegmentsAhead = 4;

// A tree digest's two halves: the nodes of a range, on any thread, and their fold, in file
// order (common/digest/merkle.hpp, common/digest/blake3_tree.hpp).
class TreeNodes {
 public:
  // `continues`: the `size` bytes are a prefix of a longer file, whose nodes a tree over
  // that file continues from (BLAKE3 then hashes the last chunk as inside the file).
  TreeNodes(proto::DigestAlgorithm algorithm, std::uint64_t size, bool continues = false)
      : blake3_(algorithm == proto::DigestAlgorithm::Blake3), size_(size), continues_(continues) {
    if (!blake3_ && algorithm != proto::DigestAlgorithm::FsVeritySha256)
      throw std::invalid_argument("not a tree digest");
  }
  // On a worker thread; the hasher is the thread's own.
  void nodes(std::uint64_t offset, std::span<const std::uint8_t> bytes, merkle::BlockHasher& hasher,
             std::vector<merkle::Node>& out) const {
    if (blake3_)
      blake3::nodes(offset, bytes, !continues_ && offset + bytes.size() == size_, out);
    else
      hasher.nodes(offset, bytes, out);
  }
  void fold(std::span<const merkle::Node> nodes) {
    if (blake3_)
      blake3_folder_.add(nodes);
    else
      fsverity_folder_.add(nodes);
  }
  Digest digest() const {
    return blake3_ ? blake3_folder_.finish(size_)
                   : merkle::file_digest(size_, fsverity_folder_.root());
  }

 private:
  bool blake3_;
  std::uint64_t size_;
  bool continues_;
  merkle::TreeFolder fsverity_folder_;
  blake3::Folder blake3_folder_;
};

// Hashes one segment [offset, offset + length) into `out` on a worker thread. Throws on a
// failed read.
using SegmentHasher =
    std::function<void(std::uint64_t offset, std::size_t length, merkle::BlockHasher& hasher,
                       std::vector<std::uint8_t>& scratch, std::vector<merkle::Node>& out)>;

Digest parallel_digest(TreeNodes& tree, std::uint64_t size, unsigned threads,
                       const SegmentHasher& hash_segment, const HashProgress& progress,
                       std::vector<merkle::Node>* all_nodes = nullptr) {
  if (threads == 0) throw std::invalid_argument("hashing needs at least one thread");
  const std::uint64_t segments = (size + kSegmentBytes - 1) / kSegmentBytes;
  const std::size_t window = static_cast<std::size_t>(threads) * kSegmentsAhead;
  struct Result {
    bool ready = false;
    std::vector<merkle::Node> nodes;
    std::exception_ptr error;
  };
  std::vector<Result> ring(window);
  std::mutex mutex;
  std::condition_variable changed;
  std::uint64_t next_to_take = 0;
  std::uint64_t next_to_fold = 0;
  bool stopping = false;

  auto work = [&] {
    merkle::BlockHasher hasher;
    std::vector<std::uint8_t> scratch;
    std::vector<merkle::Node> nodes;
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [&] {
        return stopping || next_to_take >= segments || next_to_take < next_to_fold + window;
      });
      if (stopping || next_to_take >= segments) return;
      const std::uint64_t index = next_to_take++;
      lock.unlock();
      const std::uint64_t offset = index * kSegmentBytes;
      std::exception_ptr error;
      nodes.clear();
      try {
        hash_segment(offset, static_cast<std::size_t>(std::min(kSegmentBytes, size - offset)),
                     hasher, scratch, nodes);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      Result& r = ring[index % window];
      r.nodes.swap(nodes);
      r.error = error;
      r.ready = true;
      changed.notify_all();
    }
  };

  std::vector<std::jthread> workers;
  // Stops and joins the workers on every way out, exceptions included.
  struct Stop {
    std::mutex& mutex;
    std::condition_variable& changed;
    bool& stopping;
    std::vector<std::jthread>& workers;
    ~Stop() {
      {
        std::lock_guard lock(mutex);
        stopping = true;
      }
      changed.notify_all();
      workers.clear();
    }
  } stop{mutex, changed, stopping, workers};
  const unsigned started = static_cast<unsigned>(std::min<std::uint64_t>(threads, segments));
  for (unsigned i = 0; i < started; ++i) workers.emplace_back(work);

  std::vector<merkle::Node> nodes;
  for (std::uint64_t index = 0; index < segments; ++index) {
    std::exception_ptr error;
    {
      std::unique_lock lock(mutex);
      Result& r = ring[index % window];
      changed.wait(lock, [&] { return r.ready; });
      r.ready = false;
      nodes.swap(r.nodes);
      error = r.error;
      next_to_fold = index + 1;
    }
    changed.notify_all();
    if (error) std::rethrow_exception(error);
    tree.fold(nodes);
    if (all_nodes != nullptr) all_nodes->insert(all_nodes->end(), nodes.begin(), nodes.end());
    if (progress) progress(std::min(size, (index + 1) * kSegmentBytes));
  }
  return tree.digest();
}

}  // namespace

merkle::NodeBytes node_bytes_of(proto::DigestAlgorithm algorithm) {
  return algorithm == proto::DigestAlgorithm::Blake3 ? blake3::node_bytes : merkle::node_bytes;
}

Digest digest_of_nodes(proto::DigestAlgorithm algorithm, std::span<const merkle::Node> nodes,
                       std::uint64_t bytes) {
  TreeNodes tree(algorithm, bytes);
  tree.fold(nodes);
  return tree.digest();
}

Digest tree_digest_of_mapping(proto::DigestAlgorithm algorithm,
                              std::span<const std::uint8_t> mapping, unsigned threads,
                              const HashProgress& progress) {
  SigbusScope scope;
  TreeNodes tree(algorithm, mapping.size());
  auto hash_segment = [mapping, &tree](std::uint64_t offset, std::size_t length,
                                       merkle::BlockHasher& hasher, std::vector<std::uint8_t>&,
                                       std::vector<merkle::Node>& out) {
    // The guarded read may be left by a jump: it only hashes into storage reserved here.
    out.reserve(length / merkle::kBlockSize + 1);
    struct Read {
      const TreeNodes* tree;
      merkle::BlockHasher* hasher;
      std::uint64_t offset;
      std::span<const std::uint8_t> bytes;
      std::vector<merkle::Node>* out;
      const char* error;
    } read{&tree, &hasher, offset, mapping.subspan(static_cast<std::size_t>(offset), length),
           &out,  nullptr};
    const bool whole = read_mapping_guarded(
        read.bytes,
        [](void* context) {
          auto* r = static_cast<Read*>(context);
          try {
            r->tree->nodes(r->offset, r->bytes, *r->hasher, *r->out);
          } catch (...) {
            r->error = "hashing failed";
          }
        },
        &read);
    if (!whole) {
      throw std::runtime_error("the file shrank while it was being hashed (at byte " +
                               std::to_string(offset) + " of " + std::to_string(mapping.size()) +
                               ")");
    }
    if (read.error != nullptr) throw std::runtime_error(read.error);
  };
  return parallel_digest(tree, mapping.size(), threads, hash_segment, progress);
}

Digest tree_digest_of_file(proto::DigestAlgorithm algorithm, int fd, std::uint64_t size,
                           unsigned threads, std::vector<merkle::Node>* nodes,
                           const HashProgress& progress) {
  // Advisory only (doubles the readahead window); failure changes nothing but speed.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  TreeNodes tree(algorithm, size, nodes != nullptr);
  auto hash_segment = [fd, size, &tree](
                          std::uint64_t offset, std::size_t length, merkle::BlockHasher& hasher,
                          std::vector<std::uint8_t>& scratch, std::vector<merkle::Node>& out) {
    scratch.resize(length);
    std::size_t got = 0;
    while (got < length) {
      const ssize_t n =
          ::pread(fd, scratch.data() + got, length - got, static_cast<off_t>(offset + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw_sys("pread");
      }
      if (n == 0) {
        throw std::runtime_error("file shrank while hashing: expected " + std::to_string(size) +
                                 " bytes, got " + std::to_string(offset + got));
      }
      got += static_cast<std::size_t>(n);
    }
    tree.nodes(offset, std::span<const std::uint8_t>(scratch.data(), length), hasher, out);
  };
  return parallel_digest(tree, size, threads, hash_segment, progress, nodes);
}

}  // namespace rdmax
