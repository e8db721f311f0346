#include "receiver/output_file.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <utility>

#include "common/digest/sha256.hpp"
#include "common/error.hpp"

namespace rdmax {
namespace {

void validate_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    throw std::invalid_argument("invalid output file name '" + name + "'");
  }
}

std::string random_suffix() {
  uint8_t bytes[8] = {};
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    // Uniqueness is enforced by O_EXCL anyway; this only has to differ between tries.
    static std::atomic<uint64_t> counter{0};
    const uint64_t mix =
        static_cast<uint64_t>(::getpid()) << 40 ^ ++counter ^
        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    for (size_t i = 0; i < sizeof bytes; ++i) bytes[i] = static_cast<uint8_t>(mix >> (8 * i));
  }
  return to_hex(bytes);
}

// ".<name>.rdmax-<16 hex>.part", with the name cut short so the result fits NAME_MAX.
std::string temp_name_for(const std::string& final_name) {
  return "." + final_name.substr(0, 200) + ".rdmax-" + random_suffix() + ".part";
}

[[noreturn]] void throw_exists(const std::string& name) {
  throw FileExistsError(name + ": already exists (not overwriting)");
}

}  // namespace

mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    unsigned int mask = 0;
    if (std::sscanf(line.c_str(), "Umask: %o", &mask) == 1) return static_cast<mode_t>(mask);
  }
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

OutputFile OutputFile::create(int dir_fd, std::string final_name, bool overwrite, TempMode mode) {
  validate_name(final_name);
  OutputFile out;
  out.final_name_ = std::move(final_name);
  out.overwrite_ = overwrite;
  const std::string& name = out.final_name_;

  // Early, friendly check; commit() re-checks atomically.
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!overwrite) throw_exists(name);
    if (S_ISDIR(st.st_mode)) throw std::runtime_error(name + ": is a directory");
  } else if (errno != ENOENT) {
    const int err = errno;
    throw_sys("fstatat " + name, err);
  }

  out.dir_.reset(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (!out.dir_) throw_sys("fcntl(F_DUPFD_CLOEXEC)");

  if (mode == TempMode::kAuto) {
    out.file_.reset(::openat(out.dir_.get(), ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (out.file_) return out;
  }
  // No O_TMPFILE here (old kernel, or a filesystem such as 9p or NFS without it): fall
  // back to a named temporary. Any error is retried that way; if it is not about
  // O_TMPFILE (EACCES, EROFS...) the fallback reports it just the same.
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string temp = temp_name_for(name);
    out.file_.reset(::openat(out.dir_.get(), temp.c_str(),
                             O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR | O_CLOEXEC, 0600));
    if (out.file_) {
      out.temp_name_ = std::move(temp);
      return out;
    }
    if (errno != EEXIST) {
      const int err = errno;
      throw_sys("openat " + temp, err);
    }
  }
  throw_sys("openat (temporary for " + name + ")", EEXIST);
}

OutputFile OutputFile::adopt(Fd file, int temp_dir_fd, std::string temp_name, int dir_fd,
                             std::string final_name, bool overwrite) {
  validate_name(final_name);
  OutputFile out;
  out.final_name_ = std::move(final_name);
  out.overwrite_ = overwrite;
  struct stat st {};
  if (::fstatat(dir_fd, out.final_name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!overwrite) throw_exists(out.final_name_);
    if (S_ISDIR(st.st_mode)) throw std::runtime_error(out.final_name_ + ": is a directory");
  } else if (errno != ENOENT) {
    const int err = errno;
    throw_sys("fstatat " + out.final_name_, err);
  }
  out.dir_.reset(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  out.temp_dir_.reset(::fcntl(temp_dir_fd, F_DUPFD_CLOEXEC, 0));
  if (!out.dir_ || !out.temp_dir_) throw_sys("fcntl(F_DUPFD_CLOEXEC)");
  out.file_ = std::move(file);
  out.temp_name_ = std::move(temp_name);
  out.adopted_ = true;
  return out;
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : dir_(std::move(other.dir_)),
      temp_dir_(std::move(other.temp_dir_)),
      file_(std::move(other.file_)),
      direct_(std::move(other.direct_)),
      writers_(std::move(other.writers_)),
      mapped_(std::move(other.mapped_)),
      direct_memory_align_(other.direct_memory_align_),
      direct_offset_align_(other.direct_offset_align_),
      final_name_(std::move(other.final_name_)),
      temp_name_(std::exchange(other.temp_name_, {})),
      metadata_(other.metadata_),
      overwrite_(other.overwrite_),
      finished_(std::exchange(other.finished_, true)),
      adopted_(other.adopted_) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    dir_ = std::move(other.dir_);
    temp_dir_ = std::move(other.temp_dir_);
    file_ = std::move(other.file_);
    direct_ = std::move(other.direct_);
    writers_ = std::move(other.writers_);
    mapped_ = std::move(other.mapped_);
    direct_memory_align_ = other.direct_memory_align_;
    direct_offset_align_ = other.direct_offset_align_;
    final_name_ = std::move(other.final_name_);
    temp_name_ = std::exchange(other.temp_name_, {});
    metadata_ = other.metadata_;
    overwrite_ = other.overwrite_;
    finished_ = std::exchange(other.finished_, true);
    adopted_ = other.adopted_;
  }
  return *this;
}

OutputFile::~OutputFile() {
  discard();
}

bool OutputFile::use_direct_io() {
  struct statfs fs {};
  // tmpfs takes O_DIRECT since Linux 6.6 but copies into its pages all the same.
  if (::fstatfs(file_.get(), &fs) == 0 && fs.f_type == TMPFS_MAGIC) return false;
  struct statx st {};
  if (::statx(file_.get(), "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) != 0 ||
      (st.stx_mask & STATX_DIOALIGN) == 0 || st.stx_dio_offset_align == 0 ||
      st.stx_dio_mem_align == 0)
    return false;
  // The same open file again (an O_TMPFILE has no name but this one), write-only, direct.
  const std::string proc_path = "/proc/self/fd/" + std::to_string(file_.get());
  Fd direct(::open(proc_path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));
  if (!direct) return false;
  direct_ = std::move(direct);
  direct_memory_align_ = st.stx_dio_mem_align;
  direct_offset_align_ = st.stx_dio_offset_align;
  return true;
}

void OutputFile::write_at(uint64_t offset, std::span<const uint8_t> data) {
  // The page cache takes one buffered writer of a file at a time (the inode's lock): the
  // writer that finds that place free takes it, the others copy into the mapping.
  const bool direct = direct_ && !writers_->direct_refused.load(std::memory_order_relaxed);
  if (!direct && mapped_) {
    if (writers_->cache_writer.exchange(true, std::memory_order_acquire)) {
      if (mapped_->write(offset, data)) return;
    } else {
      struct Release {
        std::atomic<bool>& taken;
        ~Release() { taken.store(false, std::memory_order_release); }
      } release{writers_->cache_writer};
      return write_through(offset, data);
    }
  }
  write_through(offset, data);
}

void OutputFile::write_through(uint64_t offset, std::span<const uint8_t> data) {
  while (!data.empty()) {
    // O_DIRECT for the longest aligned prefix, when the offset and memory are aligned.
    int fd = file_.get();
    std::size_t length = data.size();
    if (direct_ && !writers_->direct_refused.load(std::memory_order_relaxed) &&
        offset % direct_offset_align_ == 0 &&
        reinterpret_cast<std::uintptr_t>(data.data()) % direct_memory_align_ == 0 &&
        length >= direct_offset_align_) {
      fd = direct_.get();
      length -= length % direct_offset_align_;
    }
    const ssize_t n = ::pwrite(fd, data.data(), length, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && fd != file_.get()) {
        // Told it could, the file system refuses this write direct after all: through the
        // cache, from now on (the descriptor stays open: another writer may be using it).
        writers_->direct_refused = true;
        continue;
      }
      const int err = errno;
      throw_sys("pwrite " + final_name_, err);
    }
    if (n == 0) throw_sys("pwrite " + final_name_, EIO);  // would otherwise loop forever
    data = data.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
}

bool OutputFile::write_lanes(uint64_t size) {
  // Direct writes to one file run in parallel where the file system allows it (XFS; ext4
  // over written extents); a mapping beside them would only fight them for the pages.
  if (direct_ || size == 0) return false;
  struct stat st {};
  if (::fstat(file_.get(), &st) != 0) throw_sys("fstat " + final_name_);
  if (static_cast<uint64_t>(st.st_size) < size &&
      ::ftruncate(file_.get(), static_cast<off_t>(size)) != 0) {
    const int err = errno;
    throw_sys("ftruncate " + final_name_, err);
  }
  mapped_ = std::make_unique<MappedWrites>(file_.get(), size);
  return mapped_->mapped();
}

bool OutputFile::preallocate(uint64_t size) {
  if (size == 0) return true;
  // On tmpfs, fallocate allocates and zeroes every page up front (1.4 s for 256 MiB under
  // emulation, stalling the daemon's event loop), pages the writes then fill again; the
  // caller's free-space check has already refused what cannot fit.
  struct statfs fs {};
  if (::fstatfs(file_.get(), &fs) == 0 && fs.f_type == TMPFS_MAGIC) return false;
  // fallocate rather than posix_fallocate: where the filesystem cannot preallocate, glibc's
  // posix_fallocate falls back to writing every block, which is slow and pointless here.
  if (::fallocate(file_.get(), 0, 0, static_cast<off_t>(size)) == 0) return true;
  if (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS) return false;
  const int err = errno;
  throw_sys("fallocate " + final_name_, err);
}

void OutputFile::link_anonymous(const std::string& name) {
  // Giving an O_TMPFILE a name: linkat through /proc needs no privilege, AT_EMPTY_PATH
  // (used when /proc is not mounted) needs CAP_DAC_READ_SEARCH.
  const std::string proc_path = "/proc/self/fd/" + std::to_string(file_.get());
  if (::linkat(AT_FDCWD, proc_path.c_str(), dir_.get(), name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
    return;
  }
  const int err = errno;
  if (err == ENOENT && ::linkat(file_.get(), "", dir_.get(), name.c_str(), AT_EMPTY_PATH) == 0) {
    return;
  }
  if (err == EEXIST) throw_exists(name);
  throw_sys("linkat " + name, err);
}

void OutputFile::publish() {
  const char* final_c = final_name_.c_str();
  if (temp_name_.empty()) {  // O_TMPFILE
    if (!overwrite_) {
      link_anonymous(final_name_);  // linkat never replaces: atomic no-overwrite
      return;
    }
    // Link under a unique name first, then rename over the final name atomically.
    for (int attempt = 0;; ++attempt) {
      std::string temp = temp_name_for(final_name_);
      try {
        link_anonymous(temp);
        temp_name_ = std::move(temp);
        break;
      } catch (const FileExistsError&) {
        if (attempt == 15) throw;
      }
    }
  }
  const char* temp_c = temp_name_.c_str();
  const int from = temp_dir_ ? temp_dir_.get() : dir_.get();
  if (overwrite_) {
    if (::renameat(from, temp_c, dir_.get(), final_c) != 0) {
      const int err = errno;
      throw_sys("renameat " + final_name_, err);
    }
  } else if (::renameat2(from, temp_c, dir_.get(), final_c, RENAME_NOREPLACE) != 0) {
    int err = errno;
    if (err == EEXIST) throw_exists(final_name_);
    if (err != EINVAL && err != ENOSYS) throw_sys("renameat2 " + final_name_, err);
    // No RENAME_NOREPLACE on this filesystem: linkat fails on an existing target too.
    if (::linkat(from, temp_c, dir_.get(), final_c, 0) == 0) {
      if (::unlinkat(from, temp_c, 0) != 0) warn_release_failure("unlinkat", errno);
    } else {
      err = errno;
      if (err == EEXIST) throw_exists(final_name_);
      if (err != EPERM && err != EOPNOTSUPP) throw_sys("linkat " + final_name_, err);
      // No hard links either (some FUSE/9p setups): check, then rename. A file created
      // between the two calls would be replaced; nothing better exists here.
      struct stat st {};
      if (::fstatat(dir_.get(), final_c, &st, AT_SYMLINK_NOFOLLOW) == 0) throw_exists(final_name_);
      if (::renameat(from, temp_c, dir_.get(), final_c) != 0) {
        err = errno;
        throw_sys("renameat " + final_name_, err);
      }
    }
  }
  temp_name_.clear();
}

void OutputFile::set_final_metadata(mode_t mode, struct timespec mtime) {
  metadata_ = FinalMetadata{mode, mtime};
}

void OutputFile::commit() {
  if (finished_) throw std::logic_error("OutputFile::commit after commit or discard");
  // The sender's mode as far as our umask allows (never a set-id bit: 01777 keeps the
  // permission bits and the sticky bit), and its time. Both go first so that the one fsync
  // makes them durable with the data.
  const mode_t mode = (metadata_ ? metadata_->mode & 01777 : 0666) & ~current_umask();
  if (::fchmod(file_.get(), mode) != 0) {
    const int err = errno;
    throw_sys("fchmod " + final_name_, err);
  }
  if (metadata_) {
    const struct timespec times[2] = {{0, UTIME_OMIT}, metadata_->mtime};
    if (::futimens(file_.get(), times) != 0) {
      const int err = errno;
      throw_sys("futimens " + final_name_, err);
    }
  }
  // Data must be durable before the name points at it, or a crash could leave a complete-
  // looking file with missing blocks.
  if (::fsync(file_.get()) != 0) {
    const int err = errno;
    throw_sys("fsync " + final_name_, err);
  }
  publish();
  finished_ = true;
  mapped_.reset();
  direct_.reset();
  file_.reset();
  // Make the new directory entry durable. Some filesystems refuse fsync on directories
  // (EINVAL); the rename is done by then, so that is not worth failing the transfer for.
  if (::fsync(dir_.get()) != 0 && errno != EINVAL) {
    const int err = errno;
    throw_sys("fsync (directory of " + final_name_ + ")", err);
  }
  // An adopted temporary left another directory: a crash must not bring it back there.
  if (temp_dir_ && ::fsync(temp_dir_.get()) != 0 && errno != EINVAL) {
    const int err = errno;
    throw_sys("fsync (the directory " + final_name_ + " came from)", err);
  }
}

void OutputFile::discard() noexcept {
  if (finished_) return;
  finished_ = true;
  mapped_.reset();
  direct_.reset();
  file_.reset();         // an O_TMPFILE without a name vanishes with its last descriptor
  if (adopted_) return;  // its owner keeps or removes it
  if (!temp_name_.empty() && ::unlinkat(dir_.get(), temp_name_.c_str(), 0) != 0 &&
      errno != ENOENT) {
    warn_release_failure("unlinkat", errno);
  }
  temp_name_.clear();
}

uint64_t OutputFile::free_bytes(int dir_fd) {
  struct statvfs st {};
  if (::fstatvfs(dir_fd, &st) != 0) throw_sys("fstatvfs");
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

}  // namespace rdmax
