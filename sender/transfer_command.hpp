#pragma once
// rdma-send's one transfer path, for one file as for a tree (-r) over one or several
// connections (-P): walks the PATHs, hashes every file (or takes its digest from the cache),
// sends them in version-2 sessions (sender/transfer_run.hpp), a single file as a session of
// one entry, and reports each entry and the totals (sender/report.hpp). A receiver that
// refuses a term of the first message (BLAKE3, the digest at the end, version 2) gets the
// command again without it (proto::fall_back; a version-1 receiver, the one file over
// sender/version1_transport.hpp).

#include <optional>
#include <string>

#include "protocol/sender_keys.hpp"
#include "sender/options.hpp"
#include "sender/progress_bar.hpp"
#include "sender/source_tree.hpp"

namespace rdmax::sender {

// Local input first: the walk of options.files (walk_sources), each skipped PATH warned
// about; nullopt, after an error message, when the PATHs are a usage error or every one was
// skipped (exit 2), with the message in `error`. It touches only the local file system: main runs
// it before any device, route or connection work, so that a wrong PATH is reported as such.
[[nodiscard]] std::optional<SourceTree> walk_local_input(const SenderOptions& options,
                                                         std::string& error);

// Sends `tree` (from walk_local_input). The exit status: 0 when every entry was verified,
// else that of the first failure.
// `key`: --key-file's, or null (no authentication offered).
int run_transfer(const SenderOptions& options, SourceTree tree, ProgressMode progress,
                 const proto::SenderKey* key = nullptr);

}  // namespace rdmax::sender
