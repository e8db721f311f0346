#include "receiver/output_tree.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/error.hpp"
#include "protocol/paths.hpp"

namespace rdmax::receiver {

namespace {

constexpr int kDirFlags = O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_RDONLY;

// One component beneath `dir`, never through a link: -1 and errno on failure.
int open_child_directory(int dir, const std::string& name) {
  int fd;
  do fd = ::openat(dir, name.c_str(), kDirFlags);
  while (fd < 0 && errno == EINTR);
  return fd;
}

// openat2 confined beneath root, with no symbolic link anywhere: -1 and errno (ENOSYS on a
// kernel before 5.6).
int open_beneath(int root, const std::string& path) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(kDirFlags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd;
  do fd = ::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how);
  while (fd < 0 && (errno == EINTR || errno == EAGAIN));
  return static_cast<int>(fd);
}

[[noreturn]] void fail(const std::string& what, std::string_view path, int err) {
  // A link where a directory should be reads ELOOP from O_NOFOLLOW|O_DIRECTORY, or from
  // RESOLVE_NO_SYMLINKS; both are said the same way.
  const std::string why = err == ELOOP     ? " (a symbolic link is on the way)"
                          : err == ENOTDIR ? " (a non-directory is on the way)"
                          : err == EXDEV   ? " (the path leaves the directory)"
                                           : "";
  throw SysError(what + " '" + std::string(path) + "'" + why, err);
}

// Opens (and with `create`, makes) every directory of `components`, one at a time.
Fd walk(int root, const std::vector<std::string_view>& components, std::size_t count, bool create,
        std::string_view path) {
  Fd dir(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  if (dir.get() < 0) throw_sys("dup");
  for (std::size_t i = 0; i < count; ++i) {
    const std::string name(components[i]);
    int fd = open_child_directory(dir.get(), name);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(dir.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
        fail("mkdir", path, errno);
      // Made by us or by someone meanwhile: opened the same way, never through a link.
      fd = open_child_directory(dir.get(), name);
    }
    if (fd < 0) fail("open directory", path, errno);
    dir = Fd(fd);
  }
  return dir;
}

std::string prefix_of(const std::vector<std::string_view>& components, std::size_t count) {
  std::string prefix;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) prefix += '/';
    prefix += components[i];
  }
  return prefix;
}

Fd open_directories(int root, std::string_view path, std::size_t count, bool create) {
  const auto components = proto::path_components(path);
  if (count == 0) return walk(root, components, 0, false, path);
  // The common case, everything there already: one openat2 call resolves the whole prefix.
  const int fd = open_beneath(root, prefix_of(components, count));
  if (fd >= 0) return Fd(fd);
  if (errno != ENOSYS && errno != ENOENT) fail("open directory", path, errno);
  if (errno == ENOENT && !create) fail("open directory", path, ENOENT);
  return walk(root, components, count, create, path);
}

}  // namespace

Fd open_parent_beneath(int root_fd, std::string_view checked_path, bool create_missing) {
  const std::size_t depth = proto::path_components(checked_path).size();
  return open_directories(root_fd, checked_path, depth - 1, create_missing);
}

void make_directory_beneath(int root_fd, std::string_view checked_path) {
  const std::size_t depth = proto::path_components(checked_path).size();
  (void)open_directories(root_fd, checked_path, depth, true);
}

void set_directory_attributes(int root_fd, std::string_view checked_path, mode_t mode,
                              timespec mtime) {
  const std::size_t depth = proto::path_components(checked_path).size();
  const Fd dir = open_directories(root_fd, checked_path, depth, false);
  if (::fchmod(dir.get(), mode & 01777) != 0) fail("chmod", checked_path, errno);
  const timespec times[2] = {{0, UTIME_OMIT}, mtime};
  if (::futimens(dir.get(), times) != 0) fail("set the time of", checked_path, errno);
}

}  // namespace rdmax::receiver
