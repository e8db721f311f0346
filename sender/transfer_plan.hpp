#pragma once
// What one rdma-send command sends (one file or a tree), and what became of each entry:
// filled in by main (the walk of the PATHs and the hashing pass), read by the session
// connections, which write each entry's result back (sender/connection.hpp), and
// reported by main at the end (summary line, --json, exit status).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/digest/sha256.hpp"
#include "protocol/sender_machine.hpp"
#include "protocol/wire.hpp"
#include "sender/digest_cache.hpp"
#include "sender/source_tree.hpp"

namespace rdmax::sender {

struct PlannedEntry {
  proto::EntryKind kind = proto::EntryKind::File;
  std::string local_path;
  std::string remote_path;  // relative to the receiver's directory
  std::uint64_t size = 0;
  std::uint32_t mode = 0;  // permission bits
  std::int64_t mtime_sec = 0;
  std::uint32_t mtime_nsec = 0;
  Digest digest{};                 // files: by the plan's algorithm
  bool digest_from_cache = false;  // the digest cache knew the file: it was not read for it
  // false: not hashed before the connection (docs/PROTOCOL.md 7.9): offered without its
  // digest, which the connection computes as it sends the file and writes into `digest`
  // (left zero for a file abandoned before its end: no digest to report).
  bool digest_known = true;
};

// The Offer of `entry` (this connection's entry number) for `e`: a file whose digest is
// not known yet goes without it (docs/PROTOCOL.md 7.9).
inline proto::Offer offer_of(std::uint32_t entry, const PlannedEntry& e) {
  const bool file = e.kind == proto::EntryKind::File;
  const bool at_end = file && !e.digest_known;
  return proto::Offer{entry,
                      e.kind,
                      static_cast<std::uint16_t>(e.mode & proto::kMaxMode),
                      e.size,
                      e.mtime_sec,
                      e.mtime_nsec,
                      file && !at_end ? e.digest : Digest{},
                      e.remote_path,
                      at_end};
}

struct EntryResult {
  enum class Status : std::uint8_t {
    NotSent,  // the connection ended before the entry was settled
    Good,     // verified (a file) or made (a directory) by the receiver
    Refused,  // the receiver refused it (name, existing file, size, space)
    Failed,   // the receiver's verdict was not Good
  };
  Status status = Status::NotSent;
  // Why it is not Good, as the outcome a one-file run would have had (its exit status).
  proto::SenderOutcome outcome = proto::SenderOutcome::ConnectionLost;
  std::string detail{};     // the refusal's reason and text, or the verdict
  std::uint64_t bytes = 0;  // bytes written for it
  // Resume (docs/PROTOCOL.md 7.6): the receiver had the file already (Have: Good, nothing
  // written), or its first bytes (Resume: they were not sent again).
  bool identical = false;
  std::uint64_t resumed_from = 0;
  bool zero_copy = false;  // its bytes went from the file's registered mapping (--zero-copy)
  // The rdma-recv (host:port) whose connection carried it; empty: it never had one (a file
  // that could not be read).
  std::string receiver{};
};

struct TransferPlan {
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256;
  std::vector<PlannedEntry> entries;
  std::vector<EntryResult> results;  // one per entry
  // The directory the entries' local paths lie beneath, each opened without a symbolic link
  // and without a way out (a server's export, docs/PROTOCOL.md 7.13); -1: the paths as given.
  int source_dir = -1;
  // Called with an entry's index when a connection settles it (its result is final, but for
  // a run cut short): --json-lines prints it then (sender/report.hpp).
  std::function<void(std::size_t)> on_settled{};
  // Digests the connections computed as they sent files (the digest at the end), each for
  // a file that did not change while it was read: for the digest cache.
  std::vector<DigestCacheEntry> learned{};
};

// What is sent of `tree`: its files in its order, then its directories (deepest first), each
// not sent yet, with `algorithm`'s digests to come.
[[nodiscard]] TransferPlan plan_of(const SourceTree& tree, proto::DigestAlgorithm algorithm);

}  // namespace rdmax::sender
