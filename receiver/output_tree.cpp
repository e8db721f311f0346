#include "receiver/output_tree.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>

#include "common/error.hpp"
#include "receiver/output_file.hpp"

namespace rdmax::receiver {

void make_directory_beneath(int root_fd, std::string_view checked_path) {
  (void)open_directory_beneath(root_fd, checked_path, true);
}

void set_directory_attributes(int root_fd, std::string_view checked_path, mode_t mode,
                              struct timespec mtime) {
  const Fd dir = open_directory_beneath(root_fd, checked_path, false);
  // As for files: the sender's bits as far as our umask allows, never a set-id bit.
  if (::fchmod(dir.get(), mode & 01777 & ~current_umask()) != 0) {
    throw_beneath("fchmod", checked_path, errno);
  }
  const struct timespec times[2] = {{0, UTIME_OMIT}, mtime};
  if (::futimens(dir.get(), times) != 0) throw_beneath("futimens", checked_path, errno);
}

std::size_t set_deferred_directories(int root_fd, std::vector<DeferredDirectory> directories) {
  // Descending order puts every path before its prefixes, so a directory before its parent.
  std::sort(directories.begin(), directories.end(),
            [](const DeferredDirectory& a, const DeferredDirectory& b) { return a.path > b.path; });
  std::size_t failed = 0;
  for (const DeferredDirectory& d : directories) {
    try {
      set_directory_attributes(root_fd, d.path, d.mode, d.mtime);
    } catch (const std::exception& e) {
      spdlog::error("cannot set the mode and time of directory '{}': {}", d.path, e.what());
      ++failed;
    }
  }
  return failed;
}

}  // namespace rdmax::receiver
