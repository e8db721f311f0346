#pragma once
// rdma-send --check: what a transfer to each receiver of -H needs, one line each
// (common/cli/preflight.hpp), without hashing or offering a file; with --serve DIR, what the
// server needs, without serving.

#include <cstdint>
#include <iosfwd>

#include "common/cli/preflight.hpp"
#include "sender/options.hpp"
#include "sender/receivers.hpp"

namespace rdmax::sender {

// Prints the lines to `out`; returns the exit status (0: every check passed, 1: one failed).
int run_preflight(const SenderOptions& options, std::ostream& out);

// --serve DIR --check: an RDMA device, the port free (bound, listened on, let go), DIR
// readable, the readers file, RLIMIT_MEMLOCK against --max-connections sessions.
int run_serve_preflight(const SenderOptions& options, std::ostream& out);

// rdma_cm to HOST:PORT: resolve, connect, and disconnect again before any Hello, so the
// receiver sees a sender that leaves without offering anything.
preflight::Check receiver_answers_check(const SenderOptions& options, const Receiver& receiver);

}  // namespace rdmax::sender
