#pragma once
// rdma-recv --from HOST --files-from LIST (issue 52): what a list names within the server's
// export, each sent in a Want that keeps its path (docs/PROTOCOL.md 7.13, `keep_path`): a
// listed name arrives under its whole path, the directories above it with their modes and
// times, a listed directory alone (as rdma-send --files-from sends one). Local input: what is
// wrong with the list is a usage error before anything connects.

#include <string>
#include <vector>

#include "common/cli/file_list_text.hpp"

namespace rdmax::receiver {

// The paths the names are within the export: the components that name something ("./a//b"
// is "a/b", a trailing '/' dropped), and none for "." (`find .` lists it: the export itself,
// nothing to fetch). Throws FileListError, naming the record, for a name that is absolute or
// holds "..", or that is longer than a Want carries; and for a list that names nothing or
// more than a request holds (protocol/wire.hpp's kMaxWants, kMaxWantBytes).
[[nodiscard]] std::vector<std::string> fetch_list_paths(const std::vector<ListedName>& names);

}  // namespace rdmax::receiver
