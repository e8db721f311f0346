#pragma once
// One transfer's file on the receiver, with every disk and hashing step on the daemon's
// worker pool so the event loop never waits for the disk: creating and preallocating the
// temporary, hashing and writing each chunk, fsync and rename on commit, removing the
// temporary on discard.
//
// Order. Disk steps run on one WorkQueue (create, writes in file order, commit or
// discard). Hashing depends on the digest algorithm of the Hello:
// - whole-file SHA-256 is one sequential stream over the chunks in file order: one more
//   queue, so one chunk's hash overlaps another's write while both stay in order;
// - the fs-verity digest hashes each chunk's blocks independently (common/merkle.hpp): the
//   chunks are spread over one queue per pool thread and hashed in any order, on every
//   core; their tree nodes wait in the chunk's entry and are folded in file order when the
//   chunk is stored. Memory: the nodes of the chunks outstanding (32 bytes per 4 KiB, at
//   most one window's worth) and the folder's one partial block per tree level.
// A chunk is stored when both of its jobs are done; store() results come back in
// submission order.
//
// Threads. Every public function and every callback runs on the event loop thread (the
// callbacks from WorkPool::run_completions()). The OutputFile is touched only by jobs of
// the disk queue, the hash only by jobs of the hash queue and by finish_hash() once no
// store is outstanding: each queue runs one job at a time, and the pool's hand-over
// orders them. A tree-hashing job touches only its chunk's bytes and its own node list.
//
// Lifetime. The owner keeps this object, and the memory a store() reads, alive until
// idle(): discard() cancels what has not started, then removes the temporary.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/merkle.hpp"
#include "common/output_file.hpp"
#include "common/sha256.hpp"
#include "common/work_pool.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {

class IncomingFile {
 public:
  struct Outcome {
    enum class Kind : std::uint8_t {
      Ok,
      Exists,   // create/commit: the name is taken (and overwriting is off)
      NoSpace,  // create: the file system has less free space than the file needs
      BadPath,  // create: the path leads through a symbolic link or a non-directory
      Failed,   // anything else: `error` says what
    };
    Kind kind = Kind::Ok;
    std::string error;
    bool ok() const { return kind == Kind::Ok; }
  };
  using Done = std::function<void(const Outcome&)>;
  struct Stored {
    std::uint32_t slot = 0;
    std::uint32_t length = 0;
    Outcome outcome;
  };
  using StoreDone = std::function<void(const Stored&)>;

  // `path` is relative to dir_fd and checked (protocol/paths.hpp): one file name, or
  // directories and a name; missing directories are created (receiver/output_tree.hpp),
  // none through a symbolic link.
  IncomingFile(WorkPool& pool, int dir_fd, std::string path, bool overwrite,
               proto::DigestAlgorithm algorithm);
  IncomingFile(const IncomingFile&) = delete;
  IncomingFile& operator=(const IncomingFile&) = delete;

  // Checks the free space (keeping `spoken_for` bytes free besides: promised to other
  // files and not reserved by a preallocation), creates the temporary and preallocates
  // `size` bytes.
  void create(std::uint64_t size, std::uint64_t spoken_for, Done done);
  // Whether create() reserved the file's space on the disk (the file system preallocates).
  bool preallocated() const { return preallocated_; }
  // The permission bits and modification time commit() gives the file (default: 0666 &
  // ~umask, and the time of the commit).
  void set_metadata(std::uint32_t mode, std::int64_t mtime_sec, std::uint32_t mtime_nsec);
  // Hashes and writes `bytes` at `offset`; `bytes` must stay valid until `done` ran. For
  // the fs-verity digest `offset` must be a multiple of 4096 (else the store fails).
  void store(std::uint32_t slot, std::uint64_t offset, std::span<const std::uint8_t> bytes,
             StoreDone done);
  std::size_t stores_outstanding() const { return stores_.size(); }
  std::uint64_t bytes_stored() const { return bytes_stored_; }
  // The digest (by the algorithm given) of every chunk stored, in order; all zero for the
  // fs-verity digest once a store failed. Only when no store is outstanding.
  Digest finish_hash();
  // fsync, rename into place, fsync the directory. `done` says whether the file is there.
  void commit(Done done);
  // Drops every job not started and removes the temporary (unless committed).
  void discard();
  bool idle() const;
  bool committed() const { return committed_; }

 private:
  struct PendingStore {
    std::uint64_t sequence = 0;
    Stored stored;
    bool hashed = false;
    bool written = false;
    std::vector<merkle::Node> tree_nodes;  // fs-verity: this chunk's, folded when stored
    StoreDone done;
  };
  PendingStore* entry(std::uint64_t sequence);
  void hash_sequential(std::uint64_t sequence, std::span<const std::uint8_t> bytes);
  void hash_tree(std::uint64_t sequence, std::uint64_t offset, std::span<const std::uint8_t> bytes);
  void on_hashed(std::uint64_t sequence, const std::string& error);
  void finish_stores();

  int dir_fd_;
  std::string path_;
  bool overwrite_;
  proto::DigestAlgorithm algorithm_;
  std::optional<OutputFile> file_;  // the disk queue's
  Sha256 hash_;                     // the hash queue's (whole-file SHA-256)
  merkle::TreeFolder tree_;         // the loop's (fs-verity), fed by finish_stores()
  bool tree_gap_ = false;           // a store failed: tree_ misses its nodes
  std::deque<PendingStore> stores_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t bytes_stored_ = 0;
  bool committed_ = false;
  bool discarded_ = false;
  bool preallocated_ = false;  // written by the create job, read after its completion
  struct Metadata {
    std::uint32_t mode = 0;
    std::int64_t mtime_sec = 0;
    std::uint32_t mtime_nsec = 0;
  };
  std::optional<Metadata> metadata_;
  // Last: destroyed first, so no job outlives what it uses (they cancel what has not
  // started; the owner waited for idle() before destroying this).
  WorkQueue disk_;
  WorkQueue hashing_;
  std::vector<std::unique_ptr<WorkQueue>> tree_queues_;  // fs-verity: one per pool thread
  std::size_t next_tree_queue_ = 0;
};

}  // namespace rdmax::receiver
