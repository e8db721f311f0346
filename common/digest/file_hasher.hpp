#pragma once
// The hashing of one file as its chunks pass, by its digest algorithm, on the process's
// worker pool: the receiver's incoming file (receiver/incoming_file.hpp) as chunks are
// stored, and the sender's file as chunks are read for sending (the digest at the end,
// sender/outgoing_entries_digests.cpp). Two strategies behind one interface:
// - whole-file SHA-256 is one sequential stream over the chunks in file order: one queue,
//   so one chunk's hash overlaps another's write while both stay in order;
// - the fs-verity digest and BLAKE3 (common/digest/merkle.hpp,
//   common/digest/blake3_tree.hpp) hash each chunk independently into tree nodes: the
//   chunks are spread over one queue per pool thread and hashed in any order, on every
//   core; their tree nodes come back with the chunk and are folded, in file order, by
//   fold() as the owner stores the chunks. Memory: the nodes of the chunks outstanding (32
//   bytes per 4 KiB, at most one window's worth) and the folder's one partial block per tree
//   level.
//
// Threads. hash() is called, and its callback runs, on the event loop thread (the callback
// from WorkPool::run_completions()); the SHA-256 stream is touched only by its queue's jobs
// and by finish() once no hash is outstanding; a tree job touches only its chunk's bytes
// and its own node list. Lifetime: the owner keeps the hasher, and the bytes a hash() reads,
// alive until idle(); cancel() drops the jobs not started.
//
// Who hashes is given, not chosen here: an owner makes its files' hashers through the
// FileHashing it was handed (below), so that a benchmark can put stand-ins in their place.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/digest/merkle.hpp"
#include "common/digest/sha256.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/wire.hpp"

namespace rdmax {

class FileHasher {
 public:
  // A chunk is hashed: its tree nodes (fs-verity; none for SHA-256), or why it could not be.
  using Hashed = std::function<void(std::vector<merkle::Node> nodes, const std::string& error)>;

  // `file_size`: the whole file's, whatever part of it is hashed here (BLAKE3's last chunk
  // and a file in one chunk are hashed by where the file ends).
  static std::unique_ptr<FileHasher> make(WorkPool& pool, proto::DigestAlgorithm algorithm,
                                          std::uint64_t file_size);
  // A tree's work on one chunk, for a job that has the chunk's bytes anyway (the sender's
  // read of a sealed chunk, which seals them in place next): its nodes, for fold(). Touches
  // nothing but its arguments. Empty for SHA-256, whose stream needs the chunks in order.
  using ChunkNodes = std::function<void(std::uint64_t offset, std::span<const std::uint8_t> bytes,
                                        std::vector<merkle::Node>& out)>;
  static ChunkNodes chunk_nodes(proto::DigestAlgorithm algorithm, std::uint64_t file_size);
  virtual ~FileHasher() = default;

  // Hashes `bytes`, the file's bytes at `offset`, and calls `done` on the loop. For SHA-256
  // the calls must come in file order; for fs-verity `offset` must be a multiple of 4096.
  virtual void hash(std::uint64_t offset, std::span<const std::uint8_t> bytes, Hashed done) = 0;
  // The nodes of the next stored bytes, in file order (a resumed prefix's first). A store
  // that failed leaves a gap: gap() says so, and the digest is then all zero.
  virtual void fold(std::span<const merkle::Node> nodes) = 0;
  void gap() { gap_ = true; }
  bool has_gap() const { return gap_; }
  // The digest of `bytes` stored; only when no hash is outstanding.
  virtual Digest finish(std::uint64_t bytes) = 0;
  virtual void cancel() = 0;
  virtual bool idle() const = 0;
  // A hash runs on a worker now: it reads bytes its owner must not free yet.
  virtual bool running() const = 0;

 protected:
  bool gap_ = false;
};

// How an owner's files are hashed: the sender's connection (SenderSettings::hashing) and the
// receiver's files (receiver/store_work.hpp) make each FileHasher, and a tree's work on one
// chunk, through it. The programs leave it empty: the real digest (FileHasher::make,
// FileHasher::chunk_nodes). rdmax-pipeline-bench --emulate-cores gives stand-ins
// (tests/bench/work_emulation.hpp).
struct FileHashing {
  using MakeHasher = std::function<std::unique_ptr<FileHasher>(
      WorkPool& pool, proto::DigestAlgorithm algorithm, std::uint64_t file_size)>;
  using MakeChunkNodes = std::function<FileHasher::ChunkNodes(proto::DigestAlgorithm algorithm,
                                                              std::uint64_t file_size)>;
  MakeHasher make_hasher;           // empty: FileHasher::make
  MakeChunkNodes make_chunk_nodes;  // empty: FileHasher::chunk_nodes

  std::unique_ptr<FileHasher> make(WorkPool& pool, proto::DigestAlgorithm algorithm,
                                   std::uint64_t file_size) const;
  FileHasher::ChunkNodes chunk_nodes(proto::DigestAlgorithm algorithm,
                                     std::uint64_t file_size) const;
};

}  // namespace rdmax
