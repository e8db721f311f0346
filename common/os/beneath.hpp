#pragma once
// Paths beneath a directory fd that nothing can lead out of: the receiver's output directory
// (receiver/output_tree.hpp), a fetch server's export (sender/export_tree.hpp). Every path
// here has passed proto::check_relative_path, so it is plain names joined by '/'. What the
// checks on the name cannot rule out is the disk itself: a component that is a symbolic
// link (planted by a local user, or by an earlier transfer) would carry a read or a write
// out of the directory. So nothing here follows a symbolic link, at any component, and every
// lookup starts at the directory's fd and only goes down.
//
// Errors are SysErrors naming the path up to the component at fault; error() tells the
// cases apart:
//   ELOOP   a component is a symbolic link (never followed);
//   ENOTDIR a component is something other than a directory (a regular file, a fifo...);
//   ENOENT  a directory is missing and creating was not asked for;
//   others  from the kernel: EACCES, ENOSPC, EDQUOT, EROFS... (cannot create or open).

#include <string>
#include <string_view>

#include "common/os/fd.hpp"

namespace rdmax {

// An O_DIRECTORY fd (readable, so fsync and O_TMPFILE work on it) of the directory
// `checked_path` beneath `root_fd`. With `create_missing`, missing directories are created
// with mode 0700: private until the sender's own entry for the directory sets its mode.
[[nodiscard]] Fd open_directory_beneath(int root_fd, std::string_view checked_path,
                                        bool create_missing);

// The directory that will hold the last component of `checked_path`: a duplicate of
// root_fd for a one-component path, else as open_directory_beneath for the path's parent.
[[nodiscard]] Fd open_parent_beneath(int root_fd, std::string_view checked_path,
                                     bool create_missing);
// The last component of `checked_path`: its name in the directory open_parent_beneath opens.
[[nodiscard]] std::string name_in_parent(std::string_view checked_path);

// The regular file `checked_path` beneath `root_fd`, opened with `flags` (O_NOFOLLOW,
// O_NONBLOCK, O_NOCTTY and O_CLOEXEC added): a symbolic link at any component, the last one
// too, is ELOOP; anything but a regular file there (a fifo, a device) is EINVAL, and the
// open never waits for it.
[[nodiscard]] Fd open_file_beneath(int root_fd, std::string_view checked_path, int flags);

// The SysError of a failed `call` on `path`, with a hint for ELOOP and ENOTDIR.
[[noreturn]] void throw_beneath(const char* call, std::string_view path, int err);

}  // namespace rdmax
