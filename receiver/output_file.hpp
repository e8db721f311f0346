#pragma once

#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "common/os/fd.hpp"
#include "receiver/mapped_writes.hpp"

namespace rdmax {

// The process umask, read without the set-and-restore race of umask(2) (from
// /proc/self/status). A sender's mode applies as far as it allows, to files and directories.
[[nodiscard]] mode_t current_umask();

// The destination name is taken and overwriting was not requested.
class FileExistsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file being received. Data goes to a temporary file in the destination directory
// which appears under its final name only on commit(), atomically, so a crash or an
// aborted transfer never leaves a partial file under the final name.
//
// The temporary is an O_TMPFILE (nameless; nothing to clean up after a crash) where the
// filesystem supports it, else a hidden ".<name>.rdmax-<random>.part" created with
// O_EXCL|O_NOFOLLOW, mode 0600. Committed files get mode 0666 & ~umask, unless
// set_final_metadata() gives the sender's mode and modification time.
//
// The directory fd is duplicated, so the caller may close its own.
class OutputFile {
 public:
  // kAuto: O_TMPFILE, falling back to a named temporary. kNamed: always the named
  // temporary (for tests, and filesystems whose O_TMPFILE misbehaves).
  enum class TempMode { kAuto, kNamed };

  // `final_name` is a single path component (no '/', not "." or ".."). Throws
  // FileExistsError if it exists and !overwrite; an existing symlink counts as existing
  // and is never followed (with overwrite, the link itself is replaced).
  static OutputFile create(int dir_fd, std::string final_name, bool overwrite,
                           TempMode mode = TempMode::kAuto);

  // A temporary that already exists elsewhere on the same file system (a partial file of
  // receiver/partial_store.hpp): `file` is open on `temp_dir_fd`/`temp_name`. commit()
  // renames it into `dir_fd`/`final_name`; discard() leaves it where it is, since its owner
  // decides whether it is kept (for a later resume) or removed.
  static OutputFile adopt(Fd file, int temp_dir_fd, std::string temp_name, int dir_fd,
                          std::string final_name, bool overwrite);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Discards unless committed.
  ~OutputFile();

  int fd() const noexcept { return file_.get(); }
  // Empty for an O_TMPFILE temporary.
  const std::string& temp_name() const noexcept { return temp_name_; }

  // Writes all of `data` at `offset` (retrying short writes and EINTR); throws SysError,
  // e.g. ENOSPC or EDQUOT. Safe from several threads at once, for pieces that do not
  // overlap, once the set-up calls below are done: with write_lanes(), a writer that finds
  // another writing through the page cache copies into the mapping
  // (receiver/mapped_writes.hpp).
  void write_at(uint64_t offset, std::span<const uint8_t> data);

  // Chunks will be written from several threads at once: where they go through the page
  // cache (not direct), the first `size` bytes are mapped, the file extended to `size` if
  // it is shorter (sparse). Returns whether they are. After preallocate() and
  // use_direct_io().
  bool write_lanes(uint64_t size);

  // rdma-recv --direct-io: from now on, write_at() writes each piece whose offset, length and
  // memory meet the file system's direct-I/O alignment (statx STATX_DIOALIGN) with O_DIRECT,
  // through a second descriptor of the same file: the data goes from the caller's memory to
  // the device with no copy into the page cache. The rest (the unaligned tail of a file)
  // still goes through the cache. Returns false, changing nothing, where the file system
  // has no direct I/O (tmpfs before Linux 6.6, some FUSE and network file systems).
  bool use_direct_io();
  bool direct_io() const noexcept { return static_cast<bool>(direct_); }

  // Reserves `size` bytes up front so that a full disk fails now rather than mid-transfer.
  // Filesystems that cannot preallocate are silently accepted; tmpfs is skipped (there it
  // would only zero pages the writes fill anyway). Returns whether the space is reserved.
  bool preallocate(uint64_t size);

  // What commit() gives the file instead of mode 0666 & ~umask and the time of the last
  // write: the permission bits and sticky bit of `mode` as far as the umask allows (never
  // set-user-ID or set-group-ID: a sender must not be able to plant a file that runs as the
  // receiver's user or group) and `mtime` as the modification time. The access time is
  // left alone.
  void set_final_metadata(mode_t mode, struct timespec mtime);

  // Applies the final mode (and time), fsyncs the data, publishes under final_name
  // (atomically; without overwrite also race-free against a file created meanwhile, which
  // gives FileExistsError), fsyncs the directory. If publishing fails the temporary is kept
  // for discard() / the destructor; if only the final directory fsync fails, the file is
  // already in place.
  void commit();

  // Removes the temporary; no-op after commit. Never throws.
  void discard() noexcept;

  // Space available to unprivileged users on the directory's filesystem.
  static uint64_t free_bytes(int dir_fd);

 private:
  OutputFile() = default;
  void publish();
  // pwrite, O_DIRECT where it can (write_at() without the mapping).
  void write_through(uint64_t offset, std::span<const uint8_t> data);
  void link_anonymous(const std::string& name);

  Fd dir_;
  Fd temp_dir_;  // where temp_name_ is, when not dir_ (adopt())
  Fd file_;
  Fd direct_;  // use_direct_io(): file_ opened again with O_DIRECT
  // What writers on several threads share (a pointer, so that the file can move before
  // they start): whether one of them writes through the page cache now, whether direct
  // writes were refused.
  struct Writers {
    std::atomic<bool> cache_writer{false};
    std::atomic<bool> direct_refused{false};
  };
  std::unique_ptr<Writers> writers_ = std::make_unique<Writers>();
  std::unique_ptr<MappedWrites> mapped_;  // write_lanes()
  std::uint32_t direct_memory_align_ = 0;
  std::uint32_t direct_offset_align_ = 0;
  std::string final_name_;
  std::string temp_name_;  // empty: O_TMPFILE, or already renamed
  struct FinalMetadata {
    mode_t mode = 0;
    struct timespec mtime {};
  };
  std::optional<FinalMetadata> metadata_;  // nullopt: 0666 & ~umask, mtime untouched
  bool overwrite_ = false;
  bool finished_ = false;  // committed or discarded
  bool adopted_ = false;   // discard() keeps the temporary (adopt())
};

}  // namespace rdmax
