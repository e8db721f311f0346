#pragma once
// rdma-send for many files, directories (-r) and parallel connections (-P): walks the
// PATHs, hashes every file (or takes its digest from the cache), sends them in version-2
// sessions (sender/session_run.hpp), and reports each entry and the totals.

#include <optional>

#include "common/progress_bar.hpp"
#include "sender/options.hpp"
#include "sender/source_tree.hpp"

namespace rdmax::sender {

// Local input first: the walk of options.files (walk_sources), each skipped PATH warned
// about; nullopt, after an error message, when the PATHs are a usage error or every one was
// skipped (exit 2). It touches only the local file system: main runs it before any device,
// route or connection work, so that a wrong PATH is reported as such.
[[nodiscard]] std::optional<SourceTree> walk_local_input(const SenderOptions& options);

// Sends `tree` (from walk_local_input). The exit status: 0 when every entry was verified,
// else that of the first failure.
int run_session_command(const SenderOptions& options, SourceTree tree, ProgressMode progress);

}  // namespace rdmax::sender
