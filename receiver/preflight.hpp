#pragma once
// rdma-recv --check: what the daemon with these options needs, one line each
// (common/cli/preflight.hpp), without serving anyone.

#include <iosfwd>

#include "receiver/options.hpp"

namespace rdmax::receiver {

// Prints the lines to `out`; returns the exit status (0: every check passed, 1: one failed).
int run_preflight(const ReceiverOptions& options, std::ostream& out);

}  // namespace rdmax::receiver
