#pragma once
// The sender's walk of its command-line PATHs, with the semantics of `cp -r`: a file
// arrives as its base name (or --name), a directory DIR as DIR's base name with its tree
// under it. Symbolic links and special files are never followed, at the top level either:
// they are skipped, and the caller warns about each. Directories are walked through file
// descriptors opened with O_NOFOLLOW, so a directory swapped for a link meanwhile is not
// followed either.

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rdmax::sender {

struct SourceEntry {
  enum class Kind : std::uint8_t { File, Directory };
  Kind kind = Kind::File;
  std::string local_path;
  std::string remote_path;  // checked by check_relative_path
  std::uint64_t size = 0;
  std::uint32_t mode = 0;  // st_mode & 07777
  timespec mtime{};
};

struct Skipped {
  std::string local_path;
  std::string
      reason;  // "symbolic link", "special file", "unreadable: ...", "name cannot be sent: ..."
};

struct SourceTree {
  std::vector<SourceEntry> files;        // pre-order, each directory's entries sorted by name
  std::vector<SourceEntry> directories;  // deepest first: children before their parents
  std::vector<Skipped> skipped;
  std::uint64_t total_bytes = 0;
};

// A usage error: the command cannot be carried out as given (nothing is sent).
class SourceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SourceError for a PATH that cannot be read, a directory without `recursive`,
// `rename` with several PATHs or with a directory, two PATHs that arrive under one name,
// or a top-level name that cannot be sent.
SourceTree walk_sources(const std::vector<std::string>& paths, bool recursive,
                        const std::optional<std::string>& rename);

}  // namespace rdmax::sender
