#pragma once
// rdma-send --check: what a transfer to HOST:PORT needs, one line each (common/preflight.hpp),
// without hashing or offering a file.

#include <cstdint>
#include <iosfwd>

#include "common/preflight.hpp"
#include "sender/options.hpp"

namespace rdmax::sender {

// Pinned for the staging buffer against a default receiver (8 slots of 1 MiB): the sender
// keeps min(32, the receiver's --slots) chunks of the receiver's --slot-size in flight, so
// a receiver with larger windows needs up to 32 x 8 MiB = 256 MiB.
inline constexpr std::uint64_t kCheckStagingBytes = 8ull << 20;

// Prints the lines to `out`; returns the exit status (0: every check passed, 1: one failed).
int run_preflight(const SenderOptions& options, std::ostream& out);

// rdma_cm to HOST:PORT: resolve, connect, and disconnect again before any Hello, so the
// receiver sees a sender that leaves without offering anything.
preflight::Check receiver_answers_check(const SenderOptions& options);

}  // namespace rdmax::sender
