#include "common/os/beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"

namespace rdmax {
namespace {

// The whole path resolved by the kernel in one call, for the common case where every
// directory exists already (each file of a tree after the first): RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS make the kernel refuse, at any component, what the walk below refuses
// one component at a time. Empty on any failure: the walk then finds which component is at
// fault (and creates what is missing), and is the fallback where openat2 does not exist.
Fd open_whole_path(int root_fd, std::string_view path, int flags = O_RDONLY | O_DIRECTORY) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string path_c(path);
  return Fd(static_cast<int>(::syscall(SYS_openat2, root_fd, path_c.c_str(), &how, sizeof how)));
}

// One step of the walk: `name` (a plain name, never "..") in `dir_fd`. O_NOFOLLOW keeps a
// symbolic link from being followed; intermediate steps use O_PATH, which like the kernel's
// own path walk needs only search permission, and the last one a readable fd.
Fd open_step(int dir_fd, const std::string& name, bool last, bool create_missing,
             std::string_view path_so_far) {
  const int flags = (last ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  Fd fd(::openat(dir_fd, name.c_str(), flags));
  if (!fd && errno == ENOENT && create_missing) {
    // EEXIST: created by someone else since the open; open what is there now, which is
    // checked like anything else (it may be a symbolic link planted in the gap).
    if (::mkdirat(dir_fd, name.c_str(), 0700) != 0 && errno != EEXIST) {
      throw_beneath("mkdirat", path_so_far, errno);
    }
    fd.reset(::openat(dir_fd, name.c_str(), flags));
  }
  if (fd) return fd;
  int err = errno;
  // With O_DIRECTORY the kernel reports a symbolic link as ENOTDIR, like a regular file;
  // look, so the caller can tell the two apart.
  struct stat st {};
  if (err == ENOTDIR && ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(st.st_mode)) {
    err = ELOOP;
  }
  throw_beneath("openat", path_so_far, err);
}

Fd walk(int root_fd, std::string_view path, bool create_missing) {
  const std::vector<std::string_view> components = proto::path_components(path);
  Fd dir;
  for (std::size_t i = 0; i < components.size(); ++i) {
    const std::string_view& name = components[i];
    // The path up to and including this component, for messages.
    const auto end = static_cast<std::size_t>(name.data() + name.size() - path.data());
    dir = open_step(i == 0 ? root_fd : dir.get(), std::string(name), i + 1 == components.size(),
                    create_missing, path.substr(0, end));
  }
  return dir;
}

// Every caller's path passed check_relative_path; should one not have, no component may stay
// in place or climb (openat2's RESOLVE_BENEATH would allow an inner "..").
void refuse_odd_components(std::string_view path) {
  for (const std::string_view name : proto::path_components(path))
    if (name.empty() || name == "." || name == "..") throw_beneath("open", path, EINVAL);
}

}  // namespace

// A path from a peer may hold any UTF-8 (bidirectional controls included): escape it before
// it reaches a message that ends up in the log.
void throw_beneath(const char* call, std::string_view path, int err) {
  const char* hint = err == ELOOP     ? "a symbolic link is never followed"
                     : err == ENOTDIR ? "something other than a directory is in the way"
                                      : "";
  throw SysError(std::string(call) + " " + proto::escape_for_log(path), err, hint);
}

Fd open_directory_beneath(int root_fd, std::string_view checked_path, bool create_missing) {
  refuse_odd_components(checked_path);
  if (Fd fd = open_whole_path(root_fd, checked_path)) return fd;
  return walk(root_fd, checked_path, create_missing);
}

Fd open_parent_beneath(int root_fd, std::string_view checked_path, bool create_missing) {
  const std::size_t slash = checked_path.rfind('/');
  if (slash != std::string_view::npos) {
    return open_directory_beneath(root_fd, checked_path.substr(0, slash), create_missing);
  }
  Fd fd(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!fd) throw_sys("fcntl(F_DUPFD_CLOEXEC)");
  return fd;
}

std::string name_in_parent(std::string_view checked_path) {
  return std::string(checked_path.substr(checked_path.rfind('/') + 1));  // npos + 1: all of it
}

Fd open_file_beneath(int root_fd, std::string_view checked_path, int flags) {
  // O_NONBLOCK: a fifo put where a file was does not hold the open (it is refused below).
  flags |= O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
  refuse_odd_components(checked_path);
  Fd fd = open_whole_path(root_fd, checked_path, flags);
  if (!fd) {
    // Where openat2 is missing, or to name the component at fault: the parent by the walk,
    // then the last component without following it.
    const Fd parent = open_parent_beneath(root_fd, checked_path, false);
    fd.reset(::openat(parent.get(), name_in_parent(checked_path).c_str(), flags | O_CLOEXEC));
    if (!fd) throw_beneath("openat", checked_path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_beneath("fstat", checked_path, errno);
  if (!S_ISREG(st.st_mode))
    throw SysError("open " + proto::escape_for_log(checked_path), EINVAL, "not a regular file");
  return fd;
}

}  // namespace rdmax
