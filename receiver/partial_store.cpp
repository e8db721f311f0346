#include "receiver/partial_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

#include "common/digest/blake3_tree.hpp"
#include "common/digest/file_digest.hpp"
#include "common/digest/sha256.hpp"
#include "common/error.hpp"
#include "protocol/receiver_rules.hpp"
#include "receiver/output_tree.hpp"

namespace rdmax::receiver {

namespace {

constexpr char kMagic[8] = {'R', 'D', 'M', 'A', 'X', 'P', 'R', 'T'};
// The header's format: 1 for the fs-verity tree's nodes, 2 for BLAKE3's (the same layout).
// A release that knows only 1 finds nothing usable in a 2 and starts over.
constexpr std::uint64_t kFsVerityFormat = 1;
constexpr std::uint64_t kBlake3Format = 2;
constexpr std::size_t kNodeBytes = 1 + 32;
constexpr std::size_t kMaxHeaderBytes = 4096;

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

Digest sha256_of(std::span<const std::uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

std::string name_of(const std::string& path) {
  const Digest d = sha256_of({reinterpret_cast<const std::uint8_t*>(path.data()), path.size()});
  return to_hex(d);
}

struct Header {
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256;
  std::string path;
  std::uint64_t size = 0;
  proto::Digest digest{};
  std::uint64_t durable = 0;
  std::uint64_t node_count = 0;
};

std::vector<std::uint8_t> encode(const Header& h) {
  std::vector<std::uint8_t> out(kMagic, kMagic + sizeof kMagic);
  put_u64(out, h.algorithm == proto::DigestAlgorithm::Blake3 ? kBlake3Format : kFsVerityFormat);
  put_u64(out, h.size);
  out.insert(out.end(), h.digest.begin(), h.digest.end());
  put_u64(out, h.durable);
  put_u64(out, h.node_count);
  put_u64(out, h.path.size());
  out.insert(out.end(), h.path.begin(), h.path.end());
  const Digest sum = sha256_of(out);
  out.insert(out.end(), sum.begin(), sum.end());
  return out;
}

// nullopt for anything but a whole, unaltered header of this format.
std::optional<Header> decode(std::span<const std::uint8_t> b) {
  constexpr std::size_t kFixed = sizeof kMagic + 8 + 8 + 32 + 8 + 8 + 8;
  if (b.size() < kFixed + 32 || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0) return {};
  const std::size_t body = b.size() - 32;
  const Digest sum = sha256_of(b.first(body));
  if (!std::equal(sum.begin(), sum.end(), b.begin() + static_cast<long>(body))) return {};
  const std::uint8_t* p = b.data() + sizeof kMagic;
  const std::uint64_t format = get_u64(p);
  if (format != kFsVerityFormat && format != kBlake3Format) return {};
  Header h;
  h.algorithm = format == kBlake3Format ? proto::DigestAlgorithm::Blake3
                                        : proto::DigestAlgorithm::FsVeritySha256;
  h.size = get_u64(p + 8);
  std::copy(p + 16, p + 48, h.digest.begin());
  h.durable = get_u64(p + 48);
  h.node_count = get_u64(p + 56);
  const std::uint64_t path_len = get_u64(p + 64);
  if (path_len != body - kFixed) return {};
  h.path.assign(reinterpret_cast<const char*>(b.data() + kFixed), path_len);
  return h;
}

std::vector<std::uint8_t> read_small(int dir, const std::string& name) {
  const Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return {};
  std::vector<std::uint8_t> out(kMaxHeaderBytes + 1);
  const ssize_t n = ::pread(fd.get(), out.data(), out.size(), 0);
  if (n <= 0 || static_cast<std::size_t>(n) > kMaxHeaderBytes) return {};
  out.resize(static_cast<std::size_t>(n));
  return out;
}

void read_exactly(int fd, std::uint8_t* into, std::size_t n, std::uint64_t offset,
                  const char* what) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, into, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_sys(std::string("pread ") + what);
    if (got == 0) throw std::runtime_error(std::string(what) + " is shorter than its header says");
    into += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

void write_exactly(int fd, const std::uint8_t* from, std::size_t n, std::uint64_t offset,
                   const char* what) {
  while (n > 0) {
    const ssize_t put = ::pwrite(fd, from, n, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) throw_sys(std::string("pwrite ") + what, put < 0 ? errno : EIO);
    from += put;
    n -= static_cast<std::size_t>(put);
    offset += static_cast<std::uint64_t>(put);
  }
}

// The bytes of the file a node covers, from `offset`: for fs-verity a whole group (level 1),
// or one block, the file's last one possibly short; for BLAKE3 a run of 2^level chunks.
std::uint64_t covered(proto::DigestAlgorithm algorithm, const merkle::Node& node,
                      std::uint64_t offset, std::uint64_t size) {
  return std::min<std::uint64_t>(node_bytes_of(algorithm)(node), size - std::min(offset, size));
}

// The node of the bytes at `offset`, computed again as the tree computes one node; nullopt
// when they cannot be one node (a short group, a run off its alignment).
std::optional<merkle::Node> node_again(proto::DigestAlgorithm algorithm, std::uint64_t offset,
                                       std::span<const std::uint8_t> bytes,
                                       merkle::BlockHasher& hasher) {
  try {
    if (algorithm == proto::DigestAlgorithm::Blake3) return blake3::run_node(offset, bytes);
    std::vector<merkle::Node> again;
    hasher.nodes(offset, bytes, again);
    if (again.size() == 1) return again[0];
  } catch (const std::invalid_argument&) {
  }
  return std::nullopt;
}

// How many of `nodes` match the data file from offset 0 (each recomputed from the bytes it
// covers), and the bytes they cover.
std::pair<std::size_t, std::uint64_t> verified_prefix(proto::DigestAlgorithm algorithm, int data,
                                                      const std::vector<merkle::Node>& nodes,
                                                      std::uint64_t durable, std::uint64_t size) {
  merkle::BlockHasher hasher;
  std::vector<std::uint8_t> buffer;
  std::uint64_t offset = 0;
  std::size_t good = 0;
  for (const merkle::Node& node : nodes) {
    const std::uint64_t length = covered(algorithm, node, offset, size);
    if (length == 0 || offset + length > durable) break;
    if (length != node_bytes_of(algorithm)(node) && node.level != 0) break;  // a short group
    buffer.resize(static_cast<std::size_t>(length));
    read_exactly(data, buffer.data(), buffer.size(), offset, "a partial file");
    const auto again = node_again(algorithm, offset, buffer, hasher);
    if (!again || again->level != node.level || again->hash != node.hash) break;
    offset += length;
    ++good;
  }
  return {good, offset};
}

struct Prefix {
  std::vector<merkle::Node> nodes;  // of [0, bytes), in file order
  std::uint64_t bytes = 0;
  // Before the cut: the nodes that matched the data, and the bytes they cover.
  std::size_t good_nodes = 0;
  std::uint64_t good_bytes = 0;
};

// The part of a kept partial that continues `key`: its header must name key's path and size
// (and digest, unless any_digest), and every node is checked against the data (or, `known`,
// that many nodes and bytes were found good by a check of these same files); cut to at most
// `limit` bytes and to a multiple of `align`. nullopt when the header does not match.
std::optional<Prefix> checked_prefix(const Header& header, int data, int nodes_fd,
                                     const PartialStore::Key& key, bool any_digest,
                                     std::uint32_t align, std::uint64_t limit,
                                     std::optional<std::pair<std::size_t, std::uint64_t>> known) {
  struct stat data_st {};
  if (::fstat(data, &data_st) != 0) throw_sys("fstat a partial file");
  const bool blake3 = key.algorithm == proto::DigestAlgorithm::Blake3;
  // The smallest node: an fs-verity block, a BLAKE3 chunk.
  const std::uint64_t smallest = blake3 ? blake3::kChunkBytes : merkle::kBlockSize;
  if (header.algorithm != key.algorithm || header.path != key.path || header.size != key.size ||
      (!any_digest && header.digest != key.digest) || header.durable > key.size ||
      header.node_count > header.durable / smallest + 1 ||
      static_cast<std::uint64_t>(data_st.st_size) < header.durable)
    return std::nullopt;
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(header.node_count) * kNodeBytes);
  Prefix prefix;
  try {
    read_exactly(nodes_fd, raw.data(), raw.size(), 0, "a partial file's nodes");
    for (std::size_t i = 0; i < raw.size(); i += kNodeBytes) {
      merkle::Node n;
      n.level = raw[i];
      std::copy(raw.begin() + static_cast<long>(i) + 1,
                raw.begin() + static_cast<long>(i + kNodeBytes), n.hash.begin());
      if (n.level > (blake3 ? blake3::kMaxLevel : 1))
        throw std::runtime_error("a node of an unknown level");
      prefix.nodes.push_back(n);
    }
  } catch (const std::runtime_error&) {
    prefix.nodes.clear();
  }
  if (known && known->first > prefix.nodes.size()) known.reset();
  const auto [good, bytes] =
      known ? *known : verified_prefix(key.algorithm, data, prefix.nodes, header.durable, key.size);
  prefix.good_nodes = good;
  prefix.good_bytes = bytes;
  prefix.nodes.resize(good);
  prefix.bytes =
      merkle::cut_nodes(prefix.nodes, std::min(bytes, limit), align, node_bytes_of(key.algorithm));
  return prefix;
}

// How many checks are remembered at most (one per partial asked about; each is taken by the
// open of its Continue, so only offers never continued stay).
constexpr std::size_t kMaxRemembered = 1024;

}  // namespace

PartialStore::FileStamp PartialStore::stamp_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_sys("fstat a partial file");
  auto ns = [](const timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; };
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
          static_cast<std::uint64_t>(st.st_size), ns(st.st_mtim), ns(st.st_ctim)};
}

// Whether a file last changed long enough ago that a change now would show in its times: the
// kernel stamps them from a clock that moves a tick at a time (4 ms at 250 Hz), so a write in
// the tick of the last one can leave them as they were. A check of a file changed that
// recently is not remembered.
bool PartialStore::settled(const FileStamp& s) {
  timespec now{};
  if (::clock_gettime(CLOCK_REALTIME_COARSE, &now) != 0) return false;
  const std::int64_t now_ns = std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
  constexpr std::int64_t kMargin = 50'000'000;  // 50 ms: five ticks at 100 Hz
  return std::max(s.mtime_ns, s.ctime_ns) < now_ns - kMargin;
}

std::optional<std::pair<std::size_t, std::uint64_t>> PartialStore::checked(const std::string& hash,
                                                                           const Checked& now,
                                                                           bool take) const {
  const auto it = checked_.find(hash);
  if (it == checked_.end()) return std::nullopt;
  const Checked then = it->second;
  if (take) checked_.erase(it);
  if (then.data != now.data || then.nodes != now.nodes || then.durable != now.durable ||
      then.node_count != now.node_count || then.algorithm != now.algorithm)
    return std::nullopt;
  return std::pair{then.good_nodes, then.good_bytes};
}

PartialStore::PartialStore(int dir_fd, Limits limits) : limits_(limits) {
  dir_.reset(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (!dir_) throw_sys("fcntl(F_DUPFD_CLOEXEC)");
}

Fd PartialStore::open_area(bool create) const {
  const std::string name(proto::kPartialArea);
  if (create && ::mkdirat(dir_.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
    throw_sys("mkdir " + name);
  Fd area(::openat(dir_.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!area) {
    if (errno == ENOENT && !create) return area;
    if (errno == ELOOP || errno == ENOTDIR)
      throw std::runtime_error(name +
                               " is a symbolic link or not a directory: partial files are off "
                               "until it is removed");
    throw_sys("open " + name);
  }
  struct stat st {};
  if (::fstat(area.get(), &st) != 0) throw_sys("fstat " + name);
  if (st.st_uid != ::geteuid())
    throw std::runtime_error(name + " belongs to another user: partial files are off");
  if ((st.st_mode & 07777) != 0700 && ::fchmod(area.get(), 0700) != 0) throw_sys("chmod " + name);
  return area;
}

std::optional<PartialStore::Handle> PartialStore::open(const Key& key, std::uint32_t align,
                                                       Match match, std::uint64_t limit) {
  Handle h;  // its store_ is set once the claim is ours: its destructor releases the claim
  h.key_ = key;
  h.hash_ = name_of(key.path);
  h.data_name_ = h.hash_ + ".data";
  {
    std::lock_guard lock(mutex_);
    if (in_use_.contains(h.hash_)) return std::nullopt;
    h.area_ = open_area(true);
    h.data_.reset(::openat(h.area_.get(), h.data_name_.c_str(),
                           O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!h.data_) throw_sys("open a partial file");
    if (::flock(h.data_.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return std::nullopt;  // another process holds it
      throw_sys("flock a partial file");
    }
    in_use_.insert(h.hash_);
    h.store_ = this;
  }
  // From here the handle owns the claim: an exception releases it.
  const std::string nodes_name = h.hash_ + ".nodes";
  h.nodes_.reset(
      ::openat(h.area_.get(), nodes_name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!h.nodes_) throw_sys("open a partial file's nodes");
  const auto header = decode(read_small(h.area_.get(), h.hash_ + ".hdr"));
  // A peek's check of these very files, if there was one (whatever happens next, the files
  // change: it is taken either way).
  std::optional<std::pair<std::size_t, std::uint64_t>> known;
  if (header) {
    const Checked now{stamp_of(h.data_.get()), stamp_of(h.nodes_.get()), header->durable,
                      header->node_count, key.algorithm};
    std::lock_guard lock(mutex_);
    known = checked(h.hash_, now, true);
  }
  if (match != Match::Fresh && header) {
    if (auto prefix = checked_prefix(*header, h.data_.get(), h.nodes_.get(), key,
                                     match == Match::AnyDigest, align, limit, known)) {
      h.durable_ = prefix->bytes;
      h.prefix_ = std::move(prefix->nodes);
      h.key_.digest = header->digest;  // the same, or (AnyDigest) the one it was kept for
    }
  }
  // Whatever is not part of the checked prefix goes, and the header says so at once: a
  // later crash must not bring back a prefix that was found bad.
  if (::ftruncate(h.data_.get(), static_cast<off_t>(h.durable_)) != 0)
    throw_sys("truncate a partial file");
  if (::ftruncate(h.nodes_.get(), static_cast<off_t>(h.prefix_.size() * kNodeBytes)) != 0)
    throw_sys("truncate a partial file's nodes");
  h.node_count_ = h.prefix_.size();
  if (header) h.write_header();
  return h;
}

std::optional<PartialStore::Held> PartialStore::peek(const Key& key, std::uint32_t align,
                                                     std::uint64_t limit) const {
  const std::string hash = name_of(key.path);
  Fd area, data, nodes;
  {
    std::lock_guard lock(mutex_);
    if (in_use_.contains(hash)) return std::nullopt;
    area = open_area(false);
    if (!area) return std::nullopt;
    data.reset(::openat(area.get(), (hash + ".data").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    nodes.reset(::openat(area.get(), (hash + ".nodes").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    // Written by another process now (its exclusive flock): nothing to say yet.
    if (!data || !nodes || ::flock(data.get(), LOCK_SH | LOCK_NB) != 0) return std::nullopt;
  }
  const auto header = decode(read_small(area.get(), hash + ".hdr"));
  if (!header) return std::nullopt;
  // The files as they are before the check: a change during it shows as another stamp.
  Checked check{stamp_of(data.get()), stamp_of(nodes.get()), header->durable, header->node_count,
                key.algorithm};
  std::optional<std::pair<std::size_t, std::uint64_t>> known;
  {
    std::lock_guard lock(mutex_);
    known = checked(hash, check, false);
  }
  auto prefix = checked_prefix(*header, data.get(), nodes.get(), key, true, align, limit, known);
  if (prefix && settled(check.data) && settled(check.nodes)) {
    check.good_nodes = prefix->good_nodes;
    check.good_bytes = prefix->good_bytes;
    std::lock_guard lock(mutex_);
    if (checked_.size() >= kMaxRemembered) checked_.clear();
    checked_[hash] = check;
  }
  if (!prefix || prefix->bytes == 0) return std::nullopt;
  try {
    return Held{prefix->bytes, digest_of_nodes(key.algorithm, prefix->nodes, prefix->bytes)};
  } catch (const std::logic_error&) {
    return std::nullopt;  // BLAKE3 nodes that cannot be folded into that prefix's hash
  }
}

void PartialStore::remove(Handle&& handle) {
  Handle h(std::move(handle));
  remove_files(h.area_.get(), h.hash_);
  h.data_.reset();
  h.nodes_.reset();
  release(h.hash_);
  h.store_ = nullptr;
  std::lock_guard lock(mutex_);
  tidy_area();
}

void PartialStore::remove_files(int area, const std::string& hash) const {
  for (const char* suffix : {".hdr", ".nodes", ".data", ".hdr.tmp"})
    (void)::unlinkat(area, (hash + suffix).c_str(), 0);
}

void PartialStore::release(const std::string& hash) {
  std::lock_guard lock(mutex_);
  in_use_.erase(hash);
  superseded_.erase(hash);
}

void PartialStore::committed(const std::string& path) {
  const std::string hash = name_of(path);
  std::lock_guard lock(mutex_);
  if (in_use_.contains(hash)) superseded_.insert(hash);
}

void PartialStore::tidy_area() const {
  // Fails (ENOTEMPTY) while any partial is there: then it stays.
  (void)::unlinkat(dir_.get(), std::string(proto::kPartialArea).c_str(), AT_REMOVEDIR);
}

PartialStore::Expired PartialStore::expire(std::chrono::system_clock::time_point now) {
  std::lock_guard lock(mutex_);
  Expired expired;
  const Fd area = open_area(false);
  if (!area) return expired;
  struct Entry {
    std::int64_t mtime = 0;  // of the header; of the data without one
    std::uint64_t bytes = 0;
    bool header = false;
  };
  std::map<std::string, Entry> found;
  {
    const int listing = ::openat(area.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (listing < 0) throw_sys("open the partial area");
    DIR* d = ::fdopendir(listing);
    if (d == nullptr) {
      ::close(listing);
      throw_sys("fdopendir");
    }
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      const auto dot = name.find('.');
      if (name == "." || name == ".." || dot == std::string::npos) continue;
      const std::string hash = name.substr(0, dot), suffix = name.substr(dot);
      struct stat st {};
      if (::fstatat(area.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      Entry& entry = found[hash];
      if (suffix == ".hdr") {
        entry.header = true;
        entry.mtime = st.st_mtim.tv_sec;
      } else if (suffix == ".data") {
        entry.bytes = static_cast<std::uint64_t>(st.st_size);
        if (!entry.header) entry.mtime = std::max<std::int64_t>(entry.mtime, st.st_mtim.tv_sec);
      }
    }
    ::closedir(d);
  }
  auto remove_unless_held = [&](const std::string& hash, const Entry& entry) {
    if (in_use_.contains(hash)) return false;
    // Held by another process (its flock): left alone.
    const Fd data(
        ::openat(area.get(), (hash + ".data").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (data && ::flock(data.get(), LOCK_EX | LOCK_NB) != 0) return false;
    remove_files(area.get(), hash);
    ++expired.files;
    expired.bytes += entry.bytes;
    return true;
  };
  const std::int64_t cutoff =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch() - limits_.ttl)
          .count();
  std::vector<std::pair<std::int64_t, std::string>> by_age;
  std::uint64_t total = 0;
  for (auto& [hash, entry] : found) {
    // Never checkpointed (a crash before the first), or past the ttl.
    if ((!entry.header || entry.mtime < cutoff) && remove_unless_held(hash, entry)) continue;
    total += entry.bytes;
    by_age.emplace_back(entry.mtime, hash);
  }
  std::sort(by_age.begin(), by_age.end());
  for (const auto& [mtime, hash] : by_age) {
    if (total <= limits_.max_bytes) break;
    const Entry& entry = found[hash];
    if (remove_unless_held(hash, entry)) total -= entry.bytes;
  }
  tidy_area();
  return expired;
}

std::uint64_t PartialStore::bytes() const {
  std::lock_guard lock(mutex_);
  const Fd area = open_area(false);
  if (!area) return 0;
  std::uint64_t total = 0;
  const int listing = ::openat(area.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing < 0) return 0;
  DIR* d = ::fdopendir(listing);
  if (d == nullptr) {
    ::close(listing);
    return 0;
  }
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    struct stat st {};
    if (name.size() > 5 && name.ends_with(".data") &&
        ::fstatat(area.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
      total += static_cast<std::uint64_t>(st.st_size);
  }
  ::closedir(d);
  return total;
}

PartialStore::Handle::Handle(Handle&& other) noexcept
    : store_(std::exchange(other.store_, nullptr)),
      hash_(std::move(other.hash_)),
      data_name_(std::move(other.data_name_)),
      area_(std::move(other.area_)),
      data_(std::move(other.data_)),
      nodes_(std::move(other.nodes_)),
      key_(std::move(other.key_)),
      durable_(other.durable_),
      node_count_(other.node_count_),
      prefix_(std::move(other.prefix_)) {}

PartialStore::Handle::~Handle() {
  if (store_ == nullptr) return;
  // Removed while still held (its claim and its flock), as remove() does: released first,
  // another transfer could open the same files in between and lose them to the unlink.
  const bool superseded = this->superseded();
  if (superseded) store_->remove_files(area_.get(), hash_);
  data_.reset();
  nodes_.reset();
  store_->release(hash_);
  if (!superseded) return;
  std::lock_guard lock(store_->mutex_);
  store_->tidy_area();
}

bool PartialStore::Handle::superseded() const {
  if (store_ == nullptr) return false;
  std::lock_guard lock(store_->mutex_);
  return store_->superseded_.contains(hash_);
}

void PartialStore::Handle::write_header() {
  const auto bytes =
      encode(Header{key_.algorithm, key_.path, key_.size, key_.digest, durable_, node_count_});
  const std::string name = hash_ + ".hdr", temp = name + ".tmp";
  {
    const Fd out(::openat(area_.get(), temp.c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out) throw_sys("open a partial file's header");
    write_exactly(out.get(), bytes.data(), bytes.size(), 0, "a partial file's header");
    if (::fsync(out.get()) != 0) throw_sys("fsync a partial file's header");
  }
  if (::renameat(area_.get(), temp.c_str(), area_.get(), name.c_str()) != 0)
    throw_sys("rename a partial file's header");
  if (::fsync(area_.get()) != 0 && errno != EINVAL) throw_sys("fsync the partial area");
}

void PartialStore::Handle::checkpoint(std::uint64_t bytes,
                                      std::span<const merkle::Node> new_nodes) {
  if (bytes <= durable_) return;
  if (::fdatasync(data_.get()) != 0) throw_sys("fdatasync a partial file");
  std::vector<std::uint8_t> raw;
  raw.reserve(new_nodes.size() * kNodeBytes);
  for (const merkle::Node& n : new_nodes) {
    raw.push_back(n.level);
    raw.insert(raw.end(), n.hash.begin(), n.hash.end());
  }
  write_exactly(nodes_.get(), raw.data(), raw.size(), node_count_ * kNodeBytes,
                "a partial file's nodes");
  if (::fdatasync(nodes_.get()) != 0) throw_sys("fdatasync a partial file's nodes");
  node_count_ += new_nodes.size();
  durable_ = bytes;
  write_header();
}

void PartialStore::Handle::forget_committed() {
  for (const char* suffix : {".hdr", ".nodes", ".hdr.tmp"})
    (void)::unlinkat(area_.get(), (hash_ + suffix).c_str(), 0);
  data_.reset();
  nodes_.reset();
  if (store_ == nullptr) return;
  store_->release(hash_);
  std::lock_guard lock(store_->mutex_);
  store_->tidy_area();
  store_ = nullptr;
}

}  // namespace rdmax::receiver
