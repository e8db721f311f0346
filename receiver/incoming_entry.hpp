#pragma once
// One file or directory of a session while the receiver has it in flight, from its Offer to
// its settlement, as one object: what the rules know of it (the ledger's ReceiveEntry; the
// ledger holds it: protocol/receive_ledger.hpp), the Offer as it is acted on (its path
// beneath a sender's subdirectory, the digest that came with its FileDone), its file (disk
// and hashing work on the pool), the digest computed, and what we said we hold of it (7.9).

#include <chrono>
#include <memory>
#include <optional>

#include "common/digest/sha256.hpp"
#include "protocol/receive_ledger.hpp"
#include "protocol/wire.hpp"
#include "receiver/incoming_file.hpp"

namespace rdmax::receiver {

struct IncomingEntry final : proto::ReceiveEntry {
  explicit IncomingEntry(const proto::Offer& o) : ReceiveEntry(o), offer(o) {}

  proto::Offer offer;  // of an entry joined to a striped file (7.12): the lead's
  // Files only. Shared only by a striped file's entry (its owner: it keeps, discards or
  // commits it) and the entries joined to it on other connections (they only store chunks).
  std::shared_ptr<IncomingFile> file;
  Digest computed{};
  std::chrono::steady_clock::time_point taken{};  // its Take or Resume: its data began
  std::optional<proto::Holds> held;               // 7.9: what we said we hold of it
};

}  // namespace rdmax::receiver
