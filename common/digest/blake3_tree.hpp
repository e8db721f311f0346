#pragma once
// The BLAKE3 hash of a file (https://github.com/BLAKE3-team/BLAKE3-specs), exactly what
// `b3sum` prints, computed as a tree so that every core can hash a part of one file and the
// receiver can hash chunks in whatever order they are stored (docs/PROTOCOL.md 7.10).
//
// BLAKE3 cuts its input into 1024-byte chunks and builds a binary tree over them whose left
// subtree always holds the largest power of two of chunks that leaves at least one chunk to
// the right. So a run of 2^k chunks that starts at a multiple of 2^k chunks is a subtree of
// the whole file's tree, whatever the file's size: its chaining value can be computed apart,
// from its bytes and its position alone. A range of the file (a chunk of ours, a segment of
// the hashing pass) is cut into such aligned runs; each becomes a Node whose level is k. The
// file's last run may end inside a chunk (level 0, fewer than 1024 bytes, or none for an
// empty file). Folding the nodes in file order is BLAKE3's own chaining-value stack: two
// subtrees are joined under a parent node as soon as it is certain more input follows; the
// last join gets the ROOT flag.
//
// The whole file in one range (offset 0, ending the file) is hashed with BLAKE3's own
// hasher into one node of level kRootLevel that carries the digest itself: the root flag
// then belongs to a node inside that range, which a chaining value cannot carry. For the
// same reason the run a range at offset 0 begins with is given as its two halves: then any
// prefix of the file made of whole nodes holds two at least, and its own hash (a prefix
// taken as a file: what a kept partial and the sender's check of it compare, docs/PROTOCOL.md
// 7.9) folds from them like the whole file's.
//
// The compression and many-chunk functions come from BLAKE3's official C sources (their
// SSE2/SSE4.1/AVX2/AVX-512 code picked at run time), built from Debian's package
// (common/digest/blake3_sources.cmake); this file only arranges the tree.

#include <cstdint>
#include <span>
#include <vector>

#include "common/digest/merkle.hpp"  // Node: a level and a 32-byte value, as fs-verity's
#include "common/digest/sha256.hpp"  // Digest

namespace rdmax::blake3 {

inline constexpr std::uint64_t kChunkBytes = 1024;
inline constexpr std::uint8_t kRootLevel = 0xff;
// 2^54 chunks of 1 KiB: BLAKE3's limit (BLAKE3_MAX_DEPTH), far beyond any file.
inline constexpr std::uint8_t kMaxLevel = 54;

// The nodes for the file bytes [offset, offset + data.size()), appended to `out`: one per
// aligned run of 2^k whole chunks (largest first), then, when the range ends the file inside
// a chunk, one for that chunk's bytes. `offset` must be a multiple of kChunkBytes, and so
// must the range's end unless `ends_file` (std::invalid_argument otherwise).
void nodes(std::uint64_t offset, std::span<const std::uint8_t> data, bool ends_file,
           std::vector<merkle::Node>& out);

// The chaining value of exactly one aligned run: `data` is 2^k whole chunks starting at a
// multiple of 2^k chunks (std::invalid_argument otherwise). A node read back (a kept
// partial's) is checked against its bytes with it.
merkle::Node run_node(std::uint64_t offset, std::span<const std::uint8_t> data);

// The bytes a node covers: 2^level chunks (the file's last node may cover fewer); 0 for a
// level no node can have.
constexpr std::uint64_t node_bytes(const merkle::Node& node) {
  return node.level <= kMaxLevel ? kChunkBytes << node.level : 0;
}

// Folds nodes, added in file order from offset 0, into the file's BLAKE3 hash. Memory: one
// chaining value per level (at most 54).
class Folder {
 public:
  void add(const merkle::Node& node);
  void add(std::span<const merkle::Node> nodes);
  static Folder of(std::span<const merkle::Node> nodes) {
    Folder folder;
    folder.add(nodes);
    return folder;
  }
  // The hash of a file of `size` bytes whose nodes were all added (std::logic_error when
  // what was added cannot be a whole file: nodes still missing).
  Digest finish(std::uint64_t size) const;

 private:
  std::vector<Digest> stack_;  // complete subtrees, left to right, not yet joined
  merkle::Node last_{};        // the latest node: joined only once it is known to be last
  bool has_last_ = false;
  std::uint64_t last_chunk_ = 0;  // the chunk the latest node starts at
  std::uint64_t chunks_ = 0;      // chunks covered by everything added
  bool root_ = false;             // a kRootLevel node was added
};

// The BLAKE3 hash of a whole buffer, by BLAKE3's own one-thread hasher (small files, tests).
Digest digest_of(std::span<const std::uint8_t> data);

}  // namespace rdmax::blake3
