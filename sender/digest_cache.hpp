#pragma once
// The sender's digest cache: sending an unchanged file again skips its hashing pass.
//
// An entry maps (digest algorithm, file identity) to a digest, where the identity is what
// fstat says about the inode: device, inode number, size, mtime and ctime. Any write to the
// file changes its ctime (which no user call can set back), so a changed file misses.
//
// Why a cache file and not an extended attribute on the file itself: setting an xattr
// changes the file's ctime, which is part of the key, so the entry would invalidate itself.
// And a sender that only reads a file must not modify its inode: backup tools and
// `find -newer` see ctime changes, and read-only files and files of other users could not
// be cached at all.
//
// Racy entries (git's "racy clean" problem): timestamps have a granularity, so a write in
// the same tick as the last one leaves mtime and ctime unchanged. An identity whose newest
// timestamp is within kRacyWindowNs of the clock is therefore not stored.
//
// The file is text: a format tag line, then one entry per line,
//   <algorithm u8> <dev> <ino> <size> <mtime_ns> <ctime_ns> <64 hex digits>
// oldest first. Lines that do not parse are ignored; a file whose first line is not the tag
// is read as empty, and of a file larger than 4 MiB only the first 4 MiB are read (the next
// update replaces either). Updates hold an exclusive flock on
// "<file name>.lock" beside the file, re-read it under the lock, and rename a new file into
// place, so concurrent senders neither lose each other's entries nor see a torn file.
//
// A command that hashes many files uses a DigestCacheBatch: the file is read once for all
// its lookups and written once for all its new entries (remember_all), instead of a read
// per lookup and a locked read and rewrite per remember.
//
// The cache is advisory: no method throws. lookup() and remember() report what went wrong
// (the cache file unreadable, its directory unwritable, ...) as one line in `*problem`
// when `problem` is given, for the caller to log at debug level; a miss or an entry not
// stored because it was racy is not a problem. `*problem` is cleared on entry.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "common/digest/sha256.hpp"
#include "protocol/wire.hpp"

namespace rdmax {

// What fstat says about an inode; the times are nanoseconds since the epoch.
struct FileIdentity {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::uint64_t mtime_ns = 0;
  std::uint64_t ctime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

// Throws SysError if fstat fails.
FileIdentity identity_of(int fd);

struct DigestCacheEntry {
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::WholeFileSha256;
  FileIdentity identity;
  Digest digest{};
  bool operator==(const DigestCacheEntry&) const = default;
};

// Wall-clock time in nanoseconds since the epoch.
using WallClock = std::function<std::uint64_t()>;
std::uint64_t wall_clock_now_ns();

class DigestCache {
 public:
  static constexpr std::size_t kMaxEntries = 4096;
  static constexpr std::uint64_t kRacyWindowNs = 2'000'000'000;
  static constexpr const char* kFormatTag = "rdmax-digest-cache 1";

  // Nothing is read or created until the first lookup or remember. `now` is for tests.
  explicit DigestCache(std::filesystem::path file, WallClock now = wall_clock_now_ns);

  // $XDG_CACHE_HOME/rdmax/digests if XDG_CACHE_HOME is set and absolute, else
  // $HOME/.cache/rdmax/digests if HOME is set and absolute, else nullopt.
  static std::optional<std::filesystem::path> default_path();

  // The digest remembered for exactly this identity, if any. Reads the file on every call
  // (no lock: updates replace it atomically), so it sees other senders' entries.
  std::optional<Digest> lookup(proto::DigestAlgorithm algorithm, const FileIdentity& identity,
                               std::string* problem = nullptr) const;

  // Stores the entry, replacing any entry for the same (algorithm, dev, ino) and dropping
  // the oldest entries beyond kMaxEntries; does nothing if the identity is racy. Creates
  // the directory (mode 0700) if missing. `identity` must be the one taken before the
  // hashing pass; a caller should remember only if identity_of after the pass is equal.
  void remember(proto::DigestAlgorithm algorithm, const FileIdentity& identity,
                const Digest& digest, std::string* problem = nullptr);

  // remember() for many entries in one update: one lock, one read, one write (none when
  // every entry is racy). The racy ones are left out; of several for one (algorithm, dev,
  // ino) the last is kept; when more than kMaxEntries remain, the oldest are dropped,
  // which may include the first of `entries`.
  void remember_all(std::span<const DigestCacheEntry> entries, std::string* problem = nullptr);

  // Every entry of the file, oldest first: empty if it does not exist or on a problem.
  std::vector<DigestCacheEntry> load(std::string* problem = nullptr) const;

  // Too recent to be stored (see above).
  bool racy(const FileIdentity& identity) const;

  // How often this object read the cache file and replaced it, for tests and logs.
  struct Stats {
    std::size_t reads = 0;
    std::size_t writes = 0;
  };
  Stats stats() const { return stats_; }

 private:
  void update(std::span<const DigestCacheEntry> fresh);

  std::filesystem::path file_;
  WallClock now_;
  mutable Stats stats_;
};

// One command's use of the cache: the file is read once, when the batch is made, and
// lookups are answered from that snapshot (entries other senders store meanwhile are not
// seen, which only costs a hashing pass); remembered entries are collected and written by
// commit() in one update. Entries not committed are dropped. Not thread-safe.
class DigestCacheBatch {
 public:
  // Reads the cache; a problem leaves the snapshot empty.
  explicit DigestCacheBatch(DigestCache& cache, std::string* problem = nullptr);

  // As DigestCache::lookup, from the snapshot and what this batch remembered.
  std::optional<Digest> lookup(proto::DigestAlgorithm algorithm,
                               const FileIdentity& identity) const;
  // As DigestCache::remember, kept for commit(); a racy identity is not kept.
  void remember(proto::DigestAlgorithm algorithm, const FileIdentity& identity,
                const Digest& digest);
  // The entries remember() kept since the last commit().
  std::size_t pending() const { return pending_.size(); }
  // Writes the pending entries (DigestCache::remember_all) and forgets them; nothing to
  // write, no I/O.
  void commit(std::string* problem = nullptr);

 private:
  using Key = std::tuple<std::uint8_t, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                         std::uint64_t>;
  static Key key_of(proto::DigestAlgorithm algorithm, const FileIdentity& identity);

  DigestCache* cache_;
  std::map<Key, Digest> known_;
  std::vector<DigestCacheEntry> pending_;
};

}  // namespace rdmax
