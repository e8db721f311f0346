#pragma once
// What rdma-send reports at the end of a command, one file or a tree alike: one line on
// stderr (for a single file the file's own line, else the totals), the exit status, and with
// --json one object with an entry per file and directory and the totals (rdma-send(1)).

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

// One connection of the run (-P N), for --json: where it went, through which device, and
// what it carried (one file striped over them, docs/PROTOCOL.md 7.12, shows each one's share).
struct ConnectionShare {
  std::string receiver;  // HOST:PORT
  std::string device;    // the RDMA device its route went through; empty if it never connected
  std::uint64_t bytes_sent = 0;
};

struct RunSummary {
  std::size_t left_out = 0;  // local PATHs not sendable: links, special files, bad names
  std::uint64_t bytes = 0;   // written to the receiver in this run
  std::vector<ConnectionShare> connections;  // in the order of the connections
  double hash_seconds = 0;
  double connect_seconds = 0;
  double data_seconds = 0;
  double total_seconds = 0;
  // The lead connection's outcome: Denied when the receiver refused the id although every
  // entry was good (exit 6).
  proto::SenderOutcome lead = proto::SenderOutcome::Success;
};

// The exit status: 0 when every entry is good (and the id, if any, was not denied), else
// that of the first entry (in the plan's order) that is not.
[[nodiscard]] int exit_status(const TransferPlan& plan, const RunSummary& summary);

// Logs the closing line. One file: "sent PATH as 'NAME': SIZE in T s (RATE/s), verified
// (ALGORITHM DIGEST)", or why not. Else: "N files and D directories: G good, F failed, U not
// sent; SIZE sent in T s (RATE/s)", and what resume saved and what was left out, if anything.
void summarize(const TransferPlan& plan, const RunSummary& summary, int exit_code);

// One line of JSON (nlohmann/json); names and secrets that are not UTF-8 get U+FFFD, so the
// output stays valid JSON whatever the peer or the file system said.
[[nodiscard]] std::string to_json(const TransferPlan& plan, const RunSummary& summary,
                                  int exit_code, const std::string& secret);
// --json when the command ends before any transfer (a usage error, no device): the same
// object with no entries and the error's text.
[[nodiscard]] std::string to_json_failure(int exit_code, const std::string& error);

// --json-lines: stdout carries one JSON object a line, nothing else. {"entry":{...}} as each
// entry settles, the very object to_json lists under "entries"; at the end the entries that
// never settled (not sent), then {"summary":{...}}: to_json's object without "entries" (the
// secret in it, as with --json). One schema for both: a job script that aggregates shards
// reads the same keys as one that reads --json.
class JsonLines {
 public:
  explicit JsonLines(std::ostream& out) : out_(out) {}
  // Entry `index` of `plan` is settled: its line, unless written already. Flushed, so that a
  // pipe's reader sees it now.
  void settled(const TransferPlan& plan, std::size_t index);
  // The entries not written yet, then the summary line.
  void finish(const TransferPlan& plan, const RunSummary& summary, int exit_code,
              const std::string& secret);

 private:
  void write(const std::string& line);
  std::ostream& out_;
  std::vector<bool> written_;
};
// --json-lines when the command ends before any transfer: {"summary": to_json_failure's
// object without "entries"}.
[[nodiscard]] std::string to_json_failure_line(int exit_code, const std::string& error);

// Said once when SIGINT/SIGTERM stops a run: what happens to what was sent, and that the same
// command continues it (files already there are skipped, a partial file resumes).
void say_interrupted(int signal);

}  // namespace rdmax::sender
