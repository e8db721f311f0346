#pragma once
// One transfer's file on the receiver, with every disk and hashing step on the daemon's
// worker pool so the event loop never waits for the disk: creating and preallocating the
// temporary, hashing and writing each chunk, fsync and rename on commit, removing the
// temporary on discard.
//
// Order. The file's own steps run on one WorkQueue, in order (create, checkpoints, commit
// or discard); its chunks are written on lanes of their own, one per slot of the window
// (set_write_lanes()), so that one file's chunks are stored as many at once as the window
// holds (through a shared mapping where the page cache would serialise them,
// receiver/mapped_writes.hpp). A chunk arrives only once create() is done, and commit()
// comes only once every chunk is stored; discard() and keep() wait for the lanes' running
// writes before they close the file. Hashing is its FileHasher's (common/digest/file_hasher.hpp),
// by the digest algorithm. What a chunk's write and hash do is the StoreWork it is given
// (receiver/store_work.hpp: the real ones, or a benchmark's stand-ins). A chunk is stored when both
// its hash and its write are done, and its result comes back then, whatever chunks before it still
// do: its slot is free again at once. Its tree nodes (fs-verity's, BLAKE3's) wait until every byte
// before it is stored and are folded in file order, so chunks may arrive in any order (as they do
// when one file is striped over several connections, docs/STRIPING.md); bytes_stored() is the
// stored prefix.
//
// Threads. Every public function and every callback runs on the event loop thread (the
// callbacks from WorkPool::run_completions()). The OutputFile is touched only by jobs of
// the disk queue and of the lanes (write_at from several at once; the create before and
// the commit, discard or keep after them all), the hash only by jobs of the hash queue and by
// finish_hash() once no store is outstanding: each queue runs one job at a time, and the pool's
// hand-over orders them. A tree-hashing job touches only its chunk's bytes and its own node list.
//
// Lifetime. The owner keeps this object, and the memory a store() reads, alive until
// idle(): discard() cancels what has not started, then removes the temporary.
//
// Resume (docs/PROTOCOL.md 7.6). With set_resume(), create() first looks for a file already
// in place with the offered digest (Outcome::Kind::Have, is_identical_file() of
// receiver/file_record.hpp), then continues a partial file of the same path, size and
// digest (its ResumeProgress, receiver/resume_progress.hpp): its verified prefix is fed to
// the hash tree and resumed_from() says where the sender starts. While chunks are stored,
// checkpoints make the stored prefix durable; keep() makes everything stored durable and
// leaves the partial for the next attempt, discard() removes it.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/digest/file_hasher.hpp"
#include "common/digest/merkle.hpp"
#include "common/digest/sha256.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/wire.hpp"
#include "receiver/output_file.hpp"
#include "receiver/partial_store.hpp"
#include "receiver/resume_progress.hpp"
#include "receiver/space_reservations.hpp"
#include "receiver/store_work.hpp"

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
      Have,     // create: a file of that path, size and digest is in place already
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
  // none through a symbolic link. `work`: how each chunk is written and the file hashed
  // (empty: the real write and digest).
  IncomingFile(WorkPool& pool, int dir_fd, std::string path, bool overwrite,
               proto::DigestAlgorithm algorithm, StoreWork work = {});
  IncomingFile(const IncomingFile&) = delete;
  IncomingFile& operator=(const IncomingFile&) = delete;

  struct Resume {
    PartialStore* partials = nullptr;  // null: no partial is kept or continued
    proto::Digest digest{};            // the offered digest
    std::uint32_t align = 0;           // where a resumed transfer may start (the slot size)
    bool may_have = false;             // the sender understands Have
    // The digest at the end (PROTOCOL.md 7.9): which kept partial is continued, up to where.
    PartialStore::Match match = PartialStore::Match::SameDigest;
    std::uint64_t limit = UINT64_MAX;
  };
  // Before create().
  void set_resume(const Resume& resume) { resume_ = resume; }
  // Before create(): rdma-recv --direct-io (receiver/output_file.hpp use_direct_io()).
  void set_direct_io(bool on) { direct_io_ = on; }
  // Before commit(): the receiver's partial area, told of the commit, whatever this transfer
  // kept (a partial of the same path held by another transfer is then of a completed one).
  void set_partial_area(PartialStore* partials) { partial_area_ = partials; }
  // With overwrite: a file in place that is identical is still kept (Have), and only a
  // different one replaced (a fetch, ReceiverOptions::keep_identical).
  void set_keep_identical(bool on) { keep_identical_ = on; }
  // Before create(): how many of its chunks may be written at once (the window's slots; a
  // chunk is written on the lane of its slot). Default 1.
  void set_write_lanes(std::uint32_t lanes);
  // After a create() that succeeded: the bytes already stored from a partial (0: none).
  std::uint64_t resumed_from() const { return progress_ ? progress_->resumed_from() : 0; }

  // Checks the free space against the bytes `space` holds for other files, creates the
  // temporary and preallocates `size` bytes; a file system that does not preallocate keeps
  // the bytes still to be written reserved in `space` until they are written or the file
  // is committed, kept or discarded. `space` must outlive this object.
  void create(std::uint64_t size, SpaceReservations& space, Done done);
  // The permission bits and modification time commit() gives the file (default: 0666 &
  // ~umask, and the time of the commit).
  void set_metadata(std::uint32_t mode, std::int64_t mtime_sec, std::uint32_t mtime_nsec);
  // Hashes and writes `bytes` at `offset`; `bytes` must stay valid until `done` ran. For
  // the fs-verity digest `offset` must be a multiple of 4096 (else the store fails).
  void store(std::uint32_t slot, std::uint64_t offset, std::span<const std::uint8_t> bytes,
             StoreDone done);
  // The bytes stored from the start of the file with no hole (what a resume may keep).
  std::uint64_t bytes_stored() const { return bytes_stored_; }
  // The digest (by the algorithm given) of every chunk stored, in order; all zero for the
  // fs-verity digest once a store failed. Only when no store is outstanding.
  Digest finish_hash();
  // fsync, rename into place, fsync the directory. `done` says whether the file is there.
  void commit(Done done);
  // Drops every job not started and removes the temporary (unless committed), and the
  // partial with it.
  void discard();
  // The transfer was interrupted: drops every job not started, makes every stored byte
  // durable in the partial (with its tree nodes) and keeps it. Without a partial, or once
  // its data is known bad, discard().
  void keep();
  // Its data is bad (a verdict other than Good, a write that failed, a file its sender
  // abandoned): nothing of it is worth a resume, and keep() discards it.
  void keep_nothing() { bad_ = true; }
  bool idle() const;
  bool committed() const { return committed_; }
  bool committing() const { return committing_; }  // commit() called, its done not yet

 private:
  struct PendingStore {
    std::uint64_t offset = 0;
    Stored stored;
    bool hashed = false;
    bool written = false;
    std::vector<merkle::Node> tree_nodes;  // this chunk's, folded once the bytes before are
    StoreDone done;
  };
  // A chunk stored whose tree nodes wait for the bytes before it.
  struct Unfolded {
    std::uint32_t length = 0;
    std::vector<merkle::Node> nodes;
  };
  PendingStore* entry(std::uint64_t sequence);
  void finish_store(std::uint64_t sequence);
  void fold_stored_prefix();
  struct Metadata;
  void record_digest(const std::optional<Metadata>& metadata);
  void stop_jobs();
  bool lanes_idle() const;
  // Posts `work` on the disk queue once no lane runs a write (what closes the file must
  // not pull it from under a write).
  void after_writes(std::function<void()> work);

  int dir_fd_;
  std::string path_;
  bool overwrite_;
  proto::DigestAlgorithm algorithm_;
  StoreWork work_;
  std::optional<OutputFile> file_;                // the disk queue's
  std::map<std::uint64_t, PendingStore> stores_;  // by sequence number: each job finds its own
  std::map<std::uint64_t, Unfolded> unfolded_;    // by offset, all past bytes_stored_
  std::uint64_t next_sequence_ = 0;
  std::uint64_t bytes_stored_ = 0;
  bool committed_ = false;
  bool committing_ = false;
  bool discarded_ = false;
  bool bad_ = false;           // keep_nothing()
  bool preallocated_ = false;  // written by the create job, read after its completion
  bool direct_io_ = false;
  PartialStore* partial_area_ = nullptr;
  bool keep_identical_ = false;
  SpaceReservations::Hold space_;  // the create job's, then the loop's
  struct Metadata {
    std::uint32_t mode = 0;
    std::int64_t mtime_sec = 0;
    std::uint32_t mtime_nsec = 0;
  };
  std::optional<Metadata> metadata_;
  Resume resume_;
  Digest final_digest_{};  // finish_hash()'s, recorded with the committed file
  // Resume: the partial and its checkpoints; set by create() (on the loop, before its job).
  std::optional<ResumeProgress> progress_;
  // Last: destroyed first, so no job outlives what it uses (they cancel what has not
  // started; the owner waited for idle() before destroying this).
  WorkPool& pool_;
  // Made by create(); fed by store(), folded by fold_stored_prefix().
  std::unique_ptr<FileHasher> hasher_;
  WorkQueue disk_;
  std::deque<WorkQueue> lanes_;         // chunk writes, by slot
  std::function<void()> after_writes_;  // after_writes()'s work, until the lanes are idle
};

}  // namespace rdmax::receiver
