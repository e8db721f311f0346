#pragma once
// What rdma-send reports at the end of a session command: one summary line on stderr, and
// with --json one object with an entry per file and directory and the totals.

#include <cstddef>
#include <cstdint>
#include <string>

#include "sender/session_plan.hpp"

namespace rdmax::sender {

struct SessionSummary {
  std::size_t skipped = 0;  // symbolic links, special files, names that cannot be sent
  std::uint64_t bytes = 0;  // written to the receiver
  double hash_seconds = 0;
  double connect_seconds = 0;
  double data_seconds = 0;
  double total_seconds = 0;
};

// Logs the summary line ("N files sent (SIZE) in T s (RATE/s): G verified, F failed, S
// skipped") and returns the exit status: 0 when every entry is good, else that of the first
// entry (in the plan's order) that is not.
int summarize(const SessionPlan& plan, const SessionSummary& summary);

// One line of JSON (nlohmann/json); names that are not UTF-8 get U+FFFD.
std::string to_json(const SessionPlan& plan, const SessionSummary& summary, int exit_code,
                    const std::string& secret);

}  // namespace rdmax::sender
