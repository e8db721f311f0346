#pragma once
// The fs-verity file digest (Linux Documentation/filesystems/fsverity.rst) with SHA-256,
// 4096-byte blocks and no salt: what `fsverity digest --hash-alg=sha256 --block-size=4096`
// prints (docs/PROTOCOL.md 7.4; rdma-send --digest fsverity, and what a receiver without
// BLAKE3 gets).
//
// Why a Merkle tree: the leaves (one hash per 4096-byte block) are independent, so every
// core can hash a part of the file, and chunks can be hashed in whatever order they
// complete; only the small upper levels are folded in file order.
//
// Memory: TreeFolder keeps one partial block per level (at most 8 levels for a 2^64-byte
// file), whatever the file's size.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/digest/sha256.hpp"

namespace rdmax::merkle {

inline constexpr std::size_t kBlockSize = 4096;
inline constexpr std::size_t kHashesPerBlock = kBlockSize / sizeof(Digest);  // 128
// The data under one level-1 node: 128 blocks.
inline constexpr std::uint64_t kGroupBytes = std::uint64_t{kBlockSize} * kHashesPerBlock;

// A hash of the tree in file order: level 0 hashes one data block, level 1 one tree block
// of 128 level-0 hashes, and so on.
struct Node {
  std::uint8_t level = 0;
  Digest hash{};
};

// SHA-256 of blocks, zero-padded to kBlockSize; one OpenSSL context reused (a context per
// 4 KiB block would cost a noticeable fraction of the hashing itself).
class BlockHasher {
 public:
  BlockHasher();
  // `data`: at most kBlockSize bytes; a shorter block is hashed as if padded with zeros.
  Digest block(std::span<const std::uint8_t> data);
  // The nodes for the file bytes [offset, offset + data.size()), appended to `out`: for
  // every whole group (kGroupBytes, aligned) inside the range one level-1 node, for every
  // other block one level-0 node. `offset` must be a multiple of kBlockSize, and so must
  // data.size() unless the range ends the file (std::invalid_argument otherwise).
  void nodes(std::uint64_t offset, std::span<const std::uint8_t> data, std::vector<Node>& out);

 private:
  struct CtxDeleter {
    void operator()(evp_md_ctx_st* ctx) const noexcept;
  };
  std::unique_ptr<evp_md_ctx_st, CtxDeleter> ctx_;
};

// Folds nodes, added in file order, into the root hash. A level-1 (or higher) node may only
// be added where the levels below hold no partial block: at a group boundary, which
// BlockHasher::nodes() guarantees when ranges are added in order and start on block
// boundaries.
class TreeFolder {
 public:
  void add(const Node& node);
  void add(std::span<const Node> nodes);
  // The root hash of the tree over everything added so far (all zeros when nothing was):
  // the lone hash of the top level once every partial block is padded and hashed.
  Digest root() const;

 private:
  void push(std::size_t level, const Digest& hash, BlockHasher& hasher,
            std::vector<std::vector<std::uint8_t>>& levels) const;
  std::vector<std::vector<std::uint8_t>> levels_;  // per level: the partial tree block
  mutable std::unique_ptr<BlockHasher> hasher_;
};

// The bytes a node stands for: one block (level 0) or one group of 128 (level 1).
constexpr std::uint64_t node_bytes(const Node& node) {
  return node.level == 0 ? kBlockSize : kGroupBytes;
}

// `nodes` describe a prefix of a file from offset 0, in file order. Cuts them to the longest
// run that ends at most at `limit` and at a multiple of `align` (itself a multiple of
// kBlockSize), dropping a node that would be split whole; returns the bytes that run covers.
// (A node covering the file's short last block counts as a whole block: only a cut below
// the end of the file is meaningful.)
// `bytes`: what a node covers, by its tree (fs-verity's by default; BLAKE3's nodes are
// common/digest/blake3_tree.hpp's node_bytes()).
using NodeBytes = std::uint64_t (*)(const Node&);
std::uint64_t cut_nodes(std::vector<Node>& nodes, std::uint64_t limit, std::uint64_t align,
                        NodeBytes bytes = node_bytes);

// The fs-verity file digest: SHA-256 of the 256-byte fsverity_descriptor (version 1,
// SHA-256, log2 block size 12, no salt, data_size, root hash).
Digest file_digest(std::uint64_t data_size, const Digest& root);

// The digest of a whole buffer, on the calling thread (tests, small files).
Digest digest_of(std::span<const std::uint8_t> data);

}  // namespace rdmax::merkle
