#pragma once
// The receiver's safe access beneath its output directory (--dir) for the paths a session
// names (docs/PROTOCOL.md 7.5). Paths are checked first (protocol/paths.hpp: no "..", no
// empty or absolute components); here every directory on the way is opened without
// following a symbolic link and without leaving the root: openat2(2) with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS where the kernel has it, else one component at a time with
// O_NOFOLLOW. So neither a sender nor a link planted inside --dir can make the receiver
// write outside it. Errors are SysError: ELOOP (a symbolic link on the way), ENOTDIR or
// EEXIST (a non-directory where a directory should be), or what mkdir/open said.

#include <sys/stat.h>
#include <sys/types.h>

#include <ctime>
#include <string_view>

#include "common/fd.hpp"

namespace rdmax::receiver {

// The directory that will hold the last component of `checked_path` (a duplicate of
// root_fd for a one-component path). With create_missing, missing directories on the way
// are made with mode 0700: private until the sender's own entry for them sets their mode.
Fd open_parent_beneath(int root_fd, std::string_view checked_path, bool create_missing);

// Makes the directory (and missing ones on the way, 0700). One that exists is fine; a
// symbolic link or a file in its place is an error.
void make_directory_beneath(int root_fd, std::string_view checked_path);

// Gives the directory its permission bits (set-id bits dropped) and modification time.
void set_directory_attributes(int root_fd, std::string_view checked_path, mode_t mode,
                              timespec mtime);

}  // namespace rdmax::receiver
