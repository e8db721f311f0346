#pragma once
// The receiver's access to the tree beneath its output directory (issue 13). Every path
// here has passed proto::check_relative_path, so it is plain names joined by '/'. What the
// checks on the name cannot rule out is the disk itself: a component that is a symbolic
// link (planted by a local user, or by an earlier transfer) would carry writes out of the
// output directory. So nothing here follows a symbolic link, at any component, and every
// lookup starts at the output directory's fd and only goes down.
//
// Errors are SysErrors naming the path up to the component at fault; error() tells the
// cases apart:
//   ELOOP   a component is a symbolic link (never followed);
//   ENOTDIR a component is something other than a directory (a regular file, a fifo...);
//   ENOENT  a directory is missing and creating was not asked for;
//   others  from the kernel: EACCES, ENOSPC, EDQUOT, EROFS... (cannot create or open).

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <string>
#include <string_view>

#include "common/os/fd.hpp"

namespace rdmax::receiver {

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

// Creates the directory `checked_path` (and missing parents), mode 0700, unless it already
// exists as a directory. A symbolic link there is an error (ELOOP) even if it points to a
// directory; so is any other non-directory (ENOTDIR).
void make_directory_beneath(int root_fd, std::string_view checked_path);

// Gives the existing directory `checked_path` the sender's permission bits and modification
// time. The set-user-ID and set-group-ID bits are dropped: a sender must not be able to
// make the receiver's files inherit a group it chose. The access time is left alone.
void set_directory_attributes(int root_fd, std::string_view checked_path, mode_t mode,
                              struct timespec mtime);

}  // namespace rdmax::receiver
