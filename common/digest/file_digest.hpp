#pragma once
// The sender's hashing pass: the fs-verity digest (common/digest/merkle.hpp) or BLAKE3
// (common/digest/blake3_tree.hpp) of a file on several threads, reading it once, with memory
// bounded whatever its size.
//
// How: the file is cut into segments (a few whole tree groups each). Worker threads take
// segments in order and hash them into tree nodes; the calling thread folds the nodes in
// file order and reports progress. At most kSegmentsAhead segments per thread are hashed
// ahead of the fold, so memory is bounded by the threads, not by the file.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/digest/merkle.hpp"
#include "common/digest/sha256.hpp"
#include "protocol/wire.hpp"

namespace rdmax {

// A file's digest and how it was computed (the Hello carries both).
struct FileDigest {
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256;
  Digest value{};
  bool operator==(const FileDigest&) const = default;
};

using HashProgress = std::function<void(std::uint64_t bytes_done)>;

// The tree digests, `algorithm` FsVeritySha256 or Blake3 (std::invalid_argument otherwise):
// the segments are hashed on `threads` threads into tree nodes (common/digest/merkle.hpp,
// common/digest/blake3_tree.hpp) and folded in file order.
//
// The digest of a read-only mapping of the whole file, hashed in place. A file truncated
// meanwhile is reported as an exception ("the file shrank while it was being hashed").
Digest tree_digest_of_mapping(proto::DigestAlgorithm algorithm,
                              std::span<const std::uint8_t> mapping, unsigned threads,
                              const HashProgress& progress = {});
// The digest of the first `size` bytes of `fd`, read with pread (independent of the file
// offset), for files that cannot be mapped. Throws if the file is shorter than `size`. With
// `nodes`, the tree nodes of those bytes in file order are appended to it: what a tree over
// a longer file continues from (the sender's check of a prefix the receiver holds,
// docs/PROTOCOL.md 7.9); `size` is then a multiple of the receiver's slot, and the last
// nodes are hashed as inside the file, not as its end.
Digest tree_digest_of_file(proto::DigestAlgorithm algorithm, int fd, std::uint64_t size,
                           unsigned threads, std::vector<merkle::Node>* nodes = nullptr,
                           const HashProgress& progress = {});

// A tree's rules for nodes read back: what a node covers, and the digest of the bytes that
// nodes of a prefix cover, taken as a whole file (a kept partial's, docs/PROTOCOL.md 7.9).
merkle::NodeBytes node_bytes_of(proto::DigestAlgorithm algorithm);
Digest digest_of_nodes(proto::DigestAlgorithm algorithm, std::span<const merkle::Node> nodes,
                       std::uint64_t bytes);

inline Digest fsverity_digest_of_mapping(std::span<const std::uint8_t> mapping, unsigned threads,
                                         const HashProgress& progress = {}) {
  return tree_digest_of_mapping(proto::DigestAlgorithm::FsVeritySha256, mapping, threads, progress);
}
inline Digest fsverity_digest_of_file(int fd, std::uint64_t size, unsigned threads,
                                      const HashProgress& progress = {}) {
  return tree_digest_of_file(proto::DigestAlgorithm::FsVeritySha256, fd, size, threads, nullptr,
                             progress);
}
inline Digest fsverity_digest_of_file(int fd, std::uint64_t size, unsigned threads,
                                      std::vector<merkle::Node>* nodes,
                                      const HashProgress& progress = {}) {
  return tree_digest_of_file(proto::DigestAlgorithm::FsVeritySha256, fd, size, threads, nodes,
                             progress);
}

}  // namespace rdmax
