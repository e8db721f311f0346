#pragma once
// The machine-readable summary `rdma-send --json` prints: one JSON object on stdout.

#include <cstdint>
#include <string>

#include "common/file_digest.hpp"
#include "protocol/sender_machine.hpp"

namespace rdmax::sender {

struct Report {
  std::string file;
  std::string name;
  unsigned long long bytes = 0;
  FileDigest digest;
  bool digest_from_cache = false;  // the digest cache knew the file: it was not read
  double hash_seconds = 0;
  double connect_seconds = 0;
  double data_seconds = 0;
  double verify_seconds = 0;
  double total_seconds = 0;
  bool zero_copy = false;  // the data was written from the registered file mapping
  proto::SenderOutcome outcome = proto::SenderOutcome::ProtocolError;
  int exit_code = 1;
  std::string secret;  // empty: none
  // Resume (PROTOCOL.md 7.6): the bytes that moved, where they started, and whether the
  // receiver had the file already (then nothing moved).
  std::uint64_t bytes_sent = 0;
  std::uint64_t resumed_from = 0;
  bool skipped = false;
};

// Said once when SIGINT/SIGTERM stops a run: what happens to what was sent, and that the same
// command continues it (files already there are skipped, a partial file resumes).
void say_interrupted(int signal);

// One line of JSON (nlohmann/json). Bytes of names and secrets that are not UTF-8 are
// replaced by U+FFFD: the output stays valid JSON whatever the peer or the file system said.
[[nodiscard]] std::string to_json(const Report& report);

}  // namespace rdmax::sender
