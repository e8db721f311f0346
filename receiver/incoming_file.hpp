#pragma once
// One transfer's file on the receiver, with every disk and hashing step on the daemon's
// worker pool so the event loop never waits for the disk: creating and preallocating the
// temporary, hashing and writing each chunk, fsync and rename on commit, removing the
// temporary on discard.
//
// Order. Disk steps run on one WorkQueue (create, writes in file order, commit or
// discard), hashing on another (SHA-256 is one sequential stream over the chunks in file
// order), so one chunk's hash overlaps another's write while both stay in order. A chunk
// is stored when both of its jobs are done; store() results come back in submission order.
//
// Threads. Every public function and every callback runs on the event loop thread (the
// callbacks from WorkPool::run_completions()). The OutputFile is touched only by jobs of
// the disk queue, the hash only by jobs of the hash queue and by finish_hash() once no
// store is outstanding: each queue runs one job at a time, and the pool's hand-over
// orders them.
//
// Lifetime. The owner keeps this object, and the memory a store() reads, alive until
// idle(): discard() cancels what has not started, then removes the temporary.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "common/output_file.hpp"
#include "common/sha256.hpp"
#include "common/work_pool.hpp"

namespace rdmax::receiver {

class IncomingFile {
 public:
  struct Outcome {
    enum class Kind : std::uint8_t {
      Ok,
      Exists,   // create/commit: the name is taken (and overwriting is off)
      NoSpace,  // create: the file system has less free space than the file needs
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

  IncomingFile(WorkPool& pool, int dir_fd, std::string name, bool overwrite);
  IncomingFile(const IncomingFile&) = delete;
  IncomingFile& operator=(const IncomingFile&) = delete;

  // Checks the free space, creates the temporary and preallocates `size` bytes.
  void create(std::uint64_t size, Done done);
  // Hashes and writes `bytes` at `offset`; `bytes` must stay valid until `done` ran.
  void store(std::uint32_t slot, std::uint64_t offset, std::span<const std::uint8_t> bytes,
             StoreDone done);
  std::size_t stores_outstanding() const { return stores_.size(); }
  std::uint64_t bytes_stored() const { return bytes_stored_; }
  // SHA-256 of every chunk stored, in order. Only when no store is outstanding.
  Digest finish_hash();
  // fsync, rename into place, fsync the directory. `done` says whether the file is there.
  void commit(Done done);
  // Drops every job not started and removes the temporary (unless committed).
  void discard();
  bool idle() const { return disk_.idle() && hashing_.idle(); }
  bool committed() const { return committed_; }

 private:
  struct PendingStore {
    std::uint64_t sequence = 0;
    Stored stored;
    bool hashed = false;
    bool written = false;
    StoreDone done;
  };
  void finish_stores();

  int dir_fd_;
  std::string name_;
  bool overwrite_;
  std::optional<OutputFile> file_;  // the disk queue's
  Sha256 hash_;                     // the hash queue's
  std::deque<PendingStore> stores_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t bytes_stored_ = 0;
  bool committed_ = false;
  bool discarded_ = false;
  // Last: destroyed first, so no job outlives what it uses (they cancel what has not
  // started; the owner waited for idle() before destroying this).
  WorkQueue disk_;
  WorkQueue hashing_;
};

}  // namespace rdmax::receiver
