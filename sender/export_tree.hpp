#pragma once
// What a fetch server (`rdma-send --serve DIR`, issue 52) offers for the paths a fetcher
// names: the SourceTree a push walks (sender/tree_walker.hpp), found beneath the export's
// directory fd and never outside it. A wanted path is relative to the export, by the rule of
// an Offer's path (proto::check_relative_path: no "..", no absolute name, no empty or "."
// component), with trailing slashes ignored; "." alone is the whole export, whose entries
// arrive as their own names. Any other arrives as its last component, as a PATH of rdma-send
// does (`cp -r`); or, with `keep_path` (a fetcher's --files-from), under its whole path, the
// directories above it offered alone for their modes and times, as rdma-send --files-from
// sends a list. No component is followed if it is a symbolic link (common/os/beneath.hpp);
// inside a directory, symbolic links and special files are skipped as a push skips them.
//
// Each entry's local_path is relative to the export: the server opens it with
// open_file_beneath, so a component swapped for a symbolic link after the walk is refused
// then too.

#include <string>
#include <vector>

#include "sender/source_tree.hpp"

namespace rdmax::sender {

// A path a fetcher wants (a Want's), and whether a directory comes with its tree.
struct WantedPath {
  std::string path;
  bool recursive = false;
  bool keep_path = false;
};

// Throws SourceError, whose message is for the fetcher as it stands (its paths quoted and
// escaped), for: a path that is not a name within the export; one that does not exist there
// or cannot be read; a symbolic link or a special file named; a directory without
// `recursive`; "." beside other paths; two paths that would arrive under the same name (a
// kept path's first component counts as its name); `recursive` with `keep_path`.
// `offered_from`: a kept path's ancestors are offered only at or beneath it (a key's
// subdirectory: nothing above it is told); empty: all of them.
[[nodiscard]] SourceTree walk_export(int export_fd, const std::vector<WantedPath>& wanted,
                                     const std::string& offered_from = {});

}  // namespace rdmax::sender
