#pragma once
// What the sender offers for its command-line PATHs (issue 13), found before anything is
// sent so that usage errors stop the run early and the receiver learns the whole tree.
//
// Semantics follow `cp -r`: a file arrives as its base name (or the --name given), a
// directory DIR as DIR's base name with its tree beneath it. Symbolic links and special
// files are never followed or sent, at the top level either: they are listed in `skipped`
// for the caller to warn about. A directory is walked through fds opened with O_NOFOLLOW,
// so one swapped for a symbolic link during the walk is not followed either.

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rdmax::sender {

struct SourceEntry {
  enum class Kind : std::uint8_t { File, Directory };
  Kind kind = Kind::File;
  std::string local_path;   // as the sender opens it: the PATH given, or beneath it
  std::string remote_path;  // passes proto::check_relative_path
  std::uint64_t size = 0;   // 0 for a directory
  std::uint32_t mode = 0;   // st_mode & 07777
  struct timespec mtime {};
  // Not empty: the file could not be read when it was found ("cannot read: <strerror>"), a
  // listed entry (--files-from) that is unreadable or vanished. It is reported as failed,
  // with the others going on, and never offered.
  std::string unreadable{};
};

struct Skipped {
  std::string local_path;  // raw bytes: escape before printing (proto::escape_for_log)
  // "symbolic link", "special file (fifo/socket/device)", "unreadable: <strerror>" or
  // "name cannot be sent: <proto::describe>".
  std::string reason;
};

struct SourceTree {
  std::vector<SourceEntry> files;  // pre-order, names sorted bytewise within a directory
  // Every directory, top-level and empty ones included, deepest first: a directory's
  // modification time is set after its children are created, or creating them would
  // change it again.
  std::vector<SourceEntry> directories;
  std::vector<Skipped> skipped;
  std::uint64_t total_bytes = 0;  // of `files`
};

// A usage error in the PATHs: the message is for the user as it stands.
class SourceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SourceError for: a PATH that cannot be stat'ed, a top-level file or directory that
// cannot be opened; a directory without `recursive`; `rename` with other than exactly one
// PATH, with a directory, or not a plain file name (proto::check_file_name: no '/'); "/" (it
// has no name to arrive as); a top-level name that cannot be sent; two PATHs that would
// arrive under the same name. The walk touches only the local file system, so callers run
// it before any device or connection work: every local-input error is found first.
[[nodiscard]] SourceTree walk_sources(const std::vector<std::string>& paths, bool recursive,
                                      const std::optional<std::string>& rename);

// Largest first, keeping walk order among equal sizes: handed out in this order, files
// spread over parallel connections without one big file starting last.
void sort_largest_first(std::vector<SourceEntry>& files);

}  // namespace rdmax::sender
