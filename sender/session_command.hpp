#pragma once
// rdma-send for many files, directories (-r) and parallel connections (-P): walks the
// PATHs, hashes every file (or takes its digest from the cache), sends them in version-2
// sessions (sender/session_run.hpp), and reports each entry and the totals.

#include "common/progress_bar.hpp"
#include "sender/options.hpp"

namespace rdmax::sender {

// The exit status: 0 when every entry was verified, else that of the first failure.
int run_session_command(const SenderOptions& options, ProgressMode progress);

}  // namespace rdmax::sender
