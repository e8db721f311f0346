#pragma once
// --files-from FILE (issue 24): the entries to send are named by a list, as `find -print0`,
// fpart or mpifileutils' dwalk write one, rather than walked from PATHs. Each name is
// relative to --base (default: the working directory) or absolute beneath it, and arrives
// under its path relative to --base; the directories above it are offered too, so they get
// the source's modes and times as in a walked tree.
//
// What is wrong with the list itself (it cannot be read, a name outside --base or with a
// ".." component) is a usage error found before any device work, like a bad PATH. What is
// wrong with the file system under a name (missing, unreadable) is that entry's failure: it
// is reported and counted as failed, and the others go on (a job's list is often older than
// the tree it names).

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/cli/file_list_text.hpp"
#include "sender/source_tree.hpp"

namespace rdmax::sender {

struct ListedPath {
  std::string local;   // what the sender opens: base + "/" + remote
  std::string remote;  // relative to base; empty: base itself (find . lists ".")
};

// Where a listed name is read and where it arrives. `base` is absolute and normal (no "."
// or ".." component, no trailing or double '/', as absolute_base makes it). "." components
// and repeated slashes are dropped ("./a//b" is "a/b"). An error (for the user, after the
// name) when the name holds a ".." component, or is absolute and not beneath base.
[[nodiscard]] std::variant<ListedPath, std::string> map_listed_name(std::string_view name,
                                                                    std::string_view base);

// --base made absolute (joined to the working directory) and normal, lexically: symbolic
// links in it are kept, so that names listed under them still lie beneath it.
[[nodiscard]] std::string absolute_base(const std::string& base);

// The entries the list names beneath `base`, as a SourceTree: files in list order (named
// twice: once), each listed directory as itself (not its contents), and every directory on
// the way from base to a listed name. Symbolic links and special files are skipped as in a
// walk; a missing or unreadable file becomes a SourceEntry marked `unreadable`. Throws
// SourceError when base is not a directory, or for a name map_listed_name refuses (naming
// its record).
[[nodiscard]] SourceTree walk_file_list(const std::vector<ListedName>& names,
                                        const std::string& base);

}  // namespace rdmax::sender
