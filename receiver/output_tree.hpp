#pragma once
// The receiver's output directory beyond opening what is beneath it (common/os/beneath.hpp:
// no symbolic link followed, every lookup from the directory's fd down): directories made
// and given the sender's mode and time.

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/os/beneath.hpp"
#include "common/os/fd.hpp"

namespace rdmax::receiver {

// Creates the directory `checked_path` (and missing parents), mode 0700, unless it already
// exists as a directory. A symbolic link there is an error (ELOOP) even if it points to a
// directory; so is any other non-directory (ENOTDIR).
void make_directory_beneath(int root_fd, std::string_view checked_path);

// Gives the existing directory `checked_path` the sender's permission bits and modification
// time. The set-user-ID and set-group-ID bits are dropped: a sender must not be able to
// make the receiver's files inherit a group it chose. The access time is left alone.
void set_directory_attributes(int root_fd, std::string_view checked_path, mode_t mode,
                              struct timespec mtime);

// A directory's attributes, set once nothing more is written beneath it (a fetch over
// several connections: one connection's read-only directory would refuse another's files,
// and their files would change the time it set).
struct DeferredDirectory {
  std::string path;
  mode_t mode = 0;
  struct timespec mtime {};
};

// Sets them, each directory before the one above it (a child's attributes do not touch its
// parent's time). Returns how many failed, each logged.
std::size_t set_deferred_directories(int root_fd, std::vector<DeferredDirectory> directories);

}  // namespace rdmax::receiver
