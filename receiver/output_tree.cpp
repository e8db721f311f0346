#include "receiver/output_tree.hpp"

#include <fcntl.h>
#include <unistd.h>

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

}  // namespace rdmax::receiver
