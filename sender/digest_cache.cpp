#include "sender/digest_cache.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/os/fd.hpp"

namespace rdmax {
namespace {

namespace fs = std::filesystem;

// 4096 lines of at most ~175 bytes fit with room to spare. A larger file is not ours:
// only this much of it is read (a line cut short does not parse), and the next update
// replaces it.
constexpr std::size_t kMaxFileBytes = 4 << 20;
// How long remember() waits for a lock held by a sender that updates nothing before giving
// up on its own update.
constexpr auto kLockTimeout = std::chrono::seconds(2);
constexpr auto kLockRetry = std::chrono::milliseconds(5);

struct Entry {
  std::uint8_t algorithm = 0;
  FileIdentity identity;
  Digest digest{};
};

// What one entry replaces: an entry for the same inode under the same algorithm.
using InodeKey = std::tuple<std::uint8_t, std::uint64_t, std::uint64_t>;
InodeKey inode_key(const DigestCacheEntry& entry) {
  return {static_cast<std::uint8_t>(entry.algorithm), entry.identity.dev, entry.identity.ino};
}

std::uint64_t nanoseconds(const struct timespec& time) {
  // A time before 1970 wraps to a huge value: it then looks like the future, which is racy,
  // so such files are never cached.
  return static_cast<std::uint64_t>(time.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(time.tv_nsec);
}

template <typename Number>
bool parse_number(std::string_view text, Number& value) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool parse_digest(std::string_view text, Digest& digest) {
  if (text.size() != digest.size() * 2) return false;
  for (std::size_t i = 0; i < digest.size(); ++i) {
    const int high = hex_value(text[2 * i]);
    const int low = hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    digest[i] = static_cast<std::uint8_t>(high << 4 | low);
  }
  return true;
}

// Exactly seven fields separated by single spaces, or nullopt.
std::optional<Entry> parse_entry(std::string_view line) {
  std::string_view fields[7];
  for (std::size_t i = 0; i < 7; ++i) {
    const std::size_t space = line.find(' ');
    if ((space == std::string_view::npos) != (i == 6)) return std::nullopt;
    fields[i] = line.substr(0, space);
    line.remove_prefix(i == 6 ? line.size() : space + 1);
  }
  Entry entry;
  FileIdentity& id = entry.identity;
  if (!parse_number(fields[0], entry.algorithm) || !parse_number(fields[1], id.dev) ||
      !parse_number(fields[2], id.ino) || !parse_number(fields[3], id.size) ||
      !parse_number(fields[4], id.mtime_ns) || !parse_number(fields[5], id.ctime_ns) ||
      !parse_digest(fields[6], entry.digest)) {
    return std::nullopt;
  }
  return entry;
}

std::string format_entry(const Entry& entry) {
  const FileIdentity& id = entry.identity;
  return std::to_string(entry.algorithm) + ' ' + std::to_string(id.dev) + ' ' +
         std::to_string(id.ino) + ' ' + std::to_string(id.size) + ' ' +
         std::to_string(id.mtime_ns) + ' ' + std::to_string(id.ctime_ns) + ' ' +
         to_hex(entry.digest);
}

// Calls `visit` with each entry of the file's text, oldest first. Text that does not start
// with the format tag line (another version's file, or garbage) holds no entries.
template <typename Visit>
void for_each_entry(std::string_view text, Visit&& visit) {
  const std::string_view tag = DigestCache::kFormatTag;
  const std::size_t tag_end = text.find('\n');
  if (text.substr(0, tag_end) != tag) return;
  text.remove_prefix(tag_end == std::string_view::npos ? text.size() : tag_end + 1);
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    if (auto entry = parse_entry(text.substr(0, end))) visit(*entry);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
}

// The file's content, at most kMaxFileBytes of it; empty if it does not exist.
std::string read_cache_file(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return {};
    throw_sys("open " + file.string());
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_sys("fstat " + file.string());
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(file.string() + ": not a regular file");
  std::string text;
  char buffer[64 * 1024];
  while (text.size() < kMaxFileBytes) {
    const std::size_t want = std::min(sizeof buffer, kMaxFileBytes - text.size());
    const ssize_t got = ::read(fd.get(), buffer, want);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_sys("read " + file.string());
    }
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

void make_directories(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return;
  if (errno != ENOENT || !dir.has_relative_path() || dir.parent_path() == dir) {
    throw_sys("mkdir " + dir.string());
  }
  make_directories(dir.parent_path());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw_sys("mkdir " + dir.string());
}

// The identity of the cache file as it stands, to tell whether another sender is still
// updating it: every update renames a new file in, so the inode changes.
std::pair<ino_t, std::int64_t> generation_of(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return {0, 0};
  return {st.st_ino, static_cast<std::int64_t>(nanoseconds(st.st_mtim))};
}

// An exclusive flock on `lock_file`, released when the returned descriptor closes. Gives up
// once the lock has been held for kLockTimeout without `file` changing: a sender that hangs
// while holding it must not hang the others, but senders busy updating the cache one after
// the other are making progress and are waited for (polling is not fair, so a waiter can
// lose many rounds in a row).
Fd lock_exclusive(const fs::path& lock_file, const fs::path& file) {
  Fd fd(::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600));
  if (!fd) throw_sys("open " + lock_file.string());
  auto deadline = std::chrono::steady_clock::now() + kLockTimeout;
  auto generation = generation_of(file);
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) throw_sys("flock " + lock_file.string());
    const auto now = std::chrono::steady_clock::now();
    if (const auto seen = generation_of(file); seen != generation) {
      generation = seen;
      deadline = now + kLockTimeout;
    } else if (now >= deadline) {
      errno = EWOULDBLOCK;
      throw_sys("flock " + lock_file.string() + " (held without progress)");
    }
    std::this_thread::sleep_for(kLockRetry);
  }
  return fd;
}

void write_all(int fd, std::string_view text, const fs::path& file) {
  while (!text.empty()) {
    const ssize_t put = ::write(fd, text.data(), text.size());
    if (put < 0) {
      if (errno == EINTR) continue;
      throw_sys("write " + file.string());
    }
    text.remove_prefix(static_cast<std::size_t>(put));
  }
}

// Writes `text` to a new file (mode 0600) beside `file` and renames it over `file`. No
// fsync: after a crash the cache may be lost or empty, which costs one hashing pass.
void replace_file(const fs::path& file, const std::string& text) {
  std::string temporary = file.string() + ".tmp.XXXXXX";
  Fd fd(::mkostemp(temporary.data(), O_CLOEXEC));
  if (!fd) throw_sys("mkostemp " + temporary);
  try {
    write_all(fd.get(), text, temporary);
    if (::close(fd.release()) != 0) throw_sys("close " + temporary);
    if (::rename(temporary.c_str(), file.c_str()) != 0) {
      throw_sys("rename " + temporary + " to " + file.string());
    }
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
}

void report(std::string* problem, const fs::path& file, const char* what) {
  if (problem != nullptr) *problem = "digest cache " + file.string() + ": " + what;
}

std::optional<fs::path> absolute_from_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] != '/') return std::nullopt;
  return fs::path(value);
}

}  // namespace

FileIdentity identity_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_sys("fstat");
  return FileIdentity{
      .dev = static_cast<std::uint64_t>(st.st_dev),
      .ino = static_cast<std::uint64_t>(st.st_ino),
      .size = static_cast<std::uint64_t>(st.st_size),
      .mtime_ns = nanoseconds(st.st_mtim),
      .ctime_ns = nanoseconds(st.st_ctim),
  };
}

std::uint64_t wall_clock_now_ns() {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return nanoseconds(now);
}

DigestCache::DigestCache(std::filesystem::path file, WallClock now)
    : file_(std::move(file)), now_(std::move(now)) {}

std::optional<std::filesystem::path> DigestCache::default_path() {
  if (auto cache_home = absolute_from_env("XDG_CACHE_HOME")) {
    return *cache_home / "rdmax" / "digests";
  }
  if (auto home = absolute_from_env("HOME")) return *home / ".cache" / "rdmax" / "digests";
  return std::nullopt;
}

std::optional<Digest> DigestCache::lookup(proto::DigestAlgorithm algorithm,
                                          const FileIdentity& identity,
                                          std::string* problem) const {
  if (problem != nullptr) problem->clear();
  try {
    const auto wanted = static_cast<std::uint8_t>(algorithm);
    std::optional<Digest> found;
    // The last match wins: remember() leaves one per (algorithm, dev, ino), but a file
    // edited by hand may hold more, and the later line is the newer.
    ++stats_.reads;
    for_each_entry(read_cache_file(file_), [&](const Entry& entry) {
      if (entry.algorithm == wanted && entry.identity == identity) found = entry.digest;
    });
    return found;
  } catch (const std::exception& error) {
    report(problem, file_, error.what());
  } catch (...) {
    report(problem, file_, "unknown error");
  }
  return std::nullopt;
}

void DigestCache::remember(proto::DigestAlgorithm algorithm, const FileIdentity& identity,
                           const Digest& digest, std::string* problem) {
  const DigestCacheEntry entry{algorithm, identity, digest};
  remember_all(std::span(&entry, 1), problem);
}

void DigestCache::remember_all(std::span<const DigestCacheEntry> entries, std::string* problem) {
  if (problem != nullptr) problem->clear();
  try {
    std::vector<DigestCacheEntry> fresh;
    for (const DigestCacheEntry& entry : entries)
      if (!racy(entry.identity)) fresh.push_back(entry);
    if (!fresh.empty()) update(fresh);
  } catch (const std::exception& error) {
    report(problem, file_, error.what());
  } catch (...) {
    report(problem, file_, "unknown error");
  }
}

std::vector<DigestCacheEntry> DigestCache::load(std::string* problem) const {
  if (problem != nullptr) problem->clear();
  std::vector<DigestCacheEntry> entries;
  try {
    ++stats_.reads;
    for_each_entry(read_cache_file(file_), [&](const Entry& entry) {
      entries.push_back(DigestCacheEntry{static_cast<proto::DigestAlgorithm>(entry.algorithm),
                                         entry.identity, entry.digest});
    });
  } catch (const std::exception& error) {
    entries.clear();
    report(problem, file_, error.what());
  } catch (...) {
    entries.clear();
    report(problem, file_, "unknown error");
  }
  return entries;
}

bool DigestCache::racy(const FileIdentity& identity) const {
  const std::uint64_t newest = std::max(identity.mtime_ns, identity.ctime_ns);
  const std::uint64_t now = now_();
  return newest > now || now - newest < kRacyWindowNs;
}

void DigestCache::update(std::span<const DigestCacheEntry> fresh) {
  const fs::path dir = file_.has_parent_path() ? file_.parent_path() : fs::path(".");
  make_directories(dir);
  const Fd lock = lock_exclusive(fs::path(file_).concat(".lock"), file_);

  // One entry per (algorithm, dev, ino): the fresh ones replace the file's, and of several
  // fresh ones the last wins. Oldest first, so the fresh entries go at the end.
  std::map<InodeKey, std::size_t> last;  // the index in `fresh` of each key's last entry
  for (std::size_t i = 0; i < fresh.size(); ++i) last[inode_key(fresh[i])] = i;
  std::vector<Entry> entries;
  ++stats_.reads;
  for_each_entry(read_cache_file(file_), [&](const Entry& entry) {
    if (!last.contains(InodeKey{entry.algorithm, entry.identity.dev, entry.identity.ino}))
      entries.push_back(entry);
  });
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    if (last[inode_key(fresh[i])] != i) continue;
    entries.push_back(
        Entry{static_cast<std::uint8_t>(fresh[i].algorithm), fresh[i].identity, fresh[i].digest});
  }
  const std::size_t dropped = entries.size() - std::min(entries.size(), kMaxEntries);

  std::string text = std::string(kFormatTag) + '\n';
  for (auto entry = entries.begin() + static_cast<std::ptrdiff_t>(dropped); entry != entries.end();
       ++entry) {
    text += format_entry(*entry);
    text += '\n';
  }
  replace_file(file_, text);
  ++stats_.writes;
}

DigestCacheBatch::DigestCacheBatch(DigestCache& cache, std::string* problem) : cache_(&cache) {
  for (const DigestCacheEntry& entry : cache.load(problem))
    known_[key_of(entry.algorithm, entry.identity)] = entry.digest;  // the later line wins
}

DigestCacheBatch::Key DigestCacheBatch::key_of(proto::DigestAlgorithm algorithm,
                                               const FileIdentity& identity) {
  return {static_cast<std::uint8_t>(algorithm),
          identity.dev,
          identity.ino,
          identity.size,
          identity.mtime_ns,
          identity.ctime_ns};
}

std::optional<Digest> DigestCacheBatch::lookup(proto::DigestAlgorithm algorithm,
                                               const FileIdentity& identity) const {
  const auto it = known_.find(key_of(algorithm, identity));
  if (it == known_.end()) return std::nullopt;
  return it->second;
}

void DigestCacheBatch::remember(proto::DigestAlgorithm algorithm, const FileIdentity& identity,
                                const Digest& digest) {
  if (cache_->racy(identity)) return;
  known_[key_of(algorithm, identity)] = digest;
  pending_.push_back(DigestCacheEntry{algorithm, identity, digest});
}

void DigestCacheBatch::commit(std::string* problem) {
  if (problem != nullptr) problem->clear();
  if (pending_.empty()) return;
  cache_->remember_all(pending_, problem);
  pending_.clear();
}

}  // namespace rdmax
