#pragma once
// The private area of partial files under the receiver's directory (docs/PROTOCOL.md 7.6,
// docs/SECURITY.md "Partial files"): what an interrupted transfer stored, kept so that the
// same offer later continues where it stopped.
//
// Layout. `<dir>/.rdmax-partial/`, mode 0700, made on first use and removed again when it
// is empty. Per partial, named by the hex SHA-256 of its path (names reveal nothing and
// have a fixed length): `<h>.data` (the file's first bytes, mode 0600), `<h>.nodes` (the
// hash tree nodes of those bytes, 33 bytes each: level, hash; the fs-verity tree's or
// BLAKE3's, by the header's format: 1 or 2) and `<h>.hdr` (format, path, size, digest,
// durable bytes, node count, and a SHA-256 of all that).
//
// Durability. A checkpoint fdatasyncs the data, then the nodes, then replaces the header
// (temporary, fsync, rename, fsync of the area): only what a header names counts, so a
// crash at any point leaves the previous checkpoint intact. Opening a partial re-reads its
// prefix and checks every node against the data (a block altered on disk cuts the prefix
// before it), then cuts it to a multiple of the receiver's slot size. The open that follows
// a peek of the same offer (Holds, then Continue) takes the peek's check instead, unless
// either file changed in between (its size, modification or change time).
//
// Threads. Every function blocks on the disk and is called from worker-pool jobs, several
// at once: the set of partials in use is guarded by a mutex, and a partial is held by one
// transfer at a time (also across processes: an flock on its data file).

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/digest/merkle.hpp"
#include "common/os/fd.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {

class PartialStore {
 public:
  struct Limits {
    std::chrono::seconds ttl{24 * 3600};    // untouched this long: removed
    std::uint64_t max_bytes = 64ull << 30;  // all partials' data together
  };
  struct Key {
    std::string path;  // relative to the directory, already checked
    std::uint64_t size = 0;
    proto::Digest digest{};
    // The tree the nodes are of: FsVeritySha256 or Blake3. A partial kept for one never
    // continues a transfer of the other.
    proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256;
  };
  class Handle;

  PartialStore(int dir_fd, Limits limits);  // duplicates dir_fd; touches nothing on disk
  PartialStore(const PartialStore&) = delete;
  PartialStore& operator=(const PartialStore&) = delete;

  // Which kept partial of key.path an open() continues.
  enum class Match : std::uint8_t {
    SameDigest,  // one of the same size and digest (an offer with its digest)
    // One of the same size, whatever digest it was kept for; the header keeps that digest
    // (the digest at the end, PROTOCOL.md 7.9: the sender checks the prefix itself).
    AnyDigest,
    Fresh,  // none: start empty (a flagged offer whose sender did not continue it)
  };
  // The partial for key.path, held for this transfer: its verified prefix, cut to at most
  // `limit` bytes, when one kept matches, else a new empty one (any other partial of that
  // path is removed). nullopt when another transfer holds it. Throws when the area cannot be
  // made or is not ours (a symbolic link, another owner).
  std::optional<Handle> open(const Key& key, std::uint32_t align, Match match = Match::SameDigest,
                             std::uint64_t limit = UINT64_MAX);
  // What a kept partial of key.path and key.size holds, whatever digest it was kept for:
  // its checked prefix, cut as by open(..., Match::AnyDigest, limit), and that prefix's
  // digest as a file of its length (PROTOCOL.md 7.9, Holds). Creates, changes and removes
  // nothing; nullopt when there is none, it holds nothing usable, or a transfer holds it.
  struct Held {
    std::uint64_t bytes = 0;
    proto::Digest digest{};
  };
  std::optional<Held> peek(const Key& key, std::uint32_t align, std::uint64_t limit) const;
  // Deletes the partial (data, nodes, header).
  void remove(Handle&& handle);
  // A file was committed at `path`. A partial of that path still held by another transfer
  // (an interrupted one whose connection has not ended yet, while the sender's next attempt
  // took the file whole) is of a completed transfer: it goes when its holder lets go of it,
  // instead of being kept for an attempt that will never come (it would wait for the expiry).
  void committed(const std::string& path);

  struct Expired {
    std::uint32_t files = 0;
    std::uint64_t bytes = 0;
  };
  // Removes partials whose last checkpoint is older than the ttl, then the oldest until
  // the rest fit max_bytes, and leftovers (data never checkpointed, stray temporaries);
  // never one in use.
  Expired expire(std::chrono::system_clock::time_point now);
  // Data bytes of every partial in the area.
  std::uint64_t bytes() const;

 private:
  Fd open_area(bool create) const;
  // Ends the claim on a partial (and forgets that it was superseded, committed()).
  void release(const std::string& hash);
  void remove_files(int area, const std::string& hash) const;
  void tidy_area() const;  // with mutex_ held

  // The last check of a kept partial's prefix by peek(), which the next open() of it takes
  // instead of hashing the same bytes again while both files are as they were: a resume
  // with the digest at the end (Holds, Continue) read and hashed the whole prefix twice
  // before its first new byte, and under faults every few seconds a partial of a few hundred
  // MiB never moved again (the soak, docs/RELIABILITY.md).
  struct FileStamp {
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const FileStamp&) const = default;
  };
  static FileStamp stamp_of(int fd);
  // Whether a file last changed long enough ago that a change now would show in its times.
  static bool settled(const FileStamp& stamp);
  struct Checked {
    FileStamp data, nodes;
    std::uint64_t durable = 0, node_count = 0;  // the header's
    proto::DigestAlgorithm algorithm{};
    std::size_t good_nodes = 0;
    std::uint64_t good_bytes = 0;
  };
  // The nodes and bytes a remembered check of `hash` found good, if the files and header are
  // still those it was made of; `take`: forgotten (an open() changes the files). With mutex_
  // held.
  std::optional<std::pair<std::size_t, std::uint64_t>> checked(const std::string& hash,
                                                               const Checked& now, bool take) const;

  Fd dir_;
  Limits limits_;
  mutable std::mutex mutex_;
  std::set<std::string> in_use_;                    // hashes of the partials held
  std::set<std::string> superseded_;                // held ones whose path was committed
  mutable std::map<std::string, Checked> checked_;  // by hash
};

class PartialStore::Handle {
 public:
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&&) = delete;
  Handle(const Handle&) = delete;
  // Lets go of the partial; deletes it only if its path was committed by another transfer
  // meanwhile (PartialStore::committed).
  ~Handle();

  int fd() const { return data_.get(); }  // the data file, read-write
  // Whether its path was committed by another transfer while this one held it: the partial
  // goes when it is let go (PartialStore::committed).
  bool superseded() const;
  int area_fd() const { return area_.get(); }
  const std::string& data_name() const { return data_name_; }
  std::uint64_t durable_bytes() const { return durable_; }
  // The nodes of [0, durable_bytes()) in file order, as opened.
  const std::vector<merkle::Node>& prefix_nodes() const { return prefix_; }

  // Makes [0, bytes) durable; `new_nodes` describe [durable_bytes(), bytes).
  void checkpoint(std::uint64_t bytes, std::span<const merkle::Node> new_nodes);
  // After the data file was renamed into place: removes the nodes and the header.
  void forget_committed();

 private:
  friend class PartialStore;
  Handle() = default;
  void write_header();

  PartialStore* store_ = nullptr;
  std::string hash_;
  std::string data_name_;
  Fd area_;
  Fd data_;
  Fd nodes_;
  Key key_;
  std::uint64_t durable_ = 0;
  std::uint64_t node_count_ = 0;
  std::vector<merkle::Node> prefix_;
};

}  // namespace rdmax::receiver
