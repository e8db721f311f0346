#pragma once
// What a sender connection is given (sender/connection.hpp): the command's settings
// for it, and what it needs from rdma_cm (the run's wiring, or a unit test's fake).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/connection/transport.hpp"
#include "common/digest/file_hasher.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/seal.hpp"
#include "protocol/sender_keys.hpp"
#include "protocol/wire.hpp"
#include "sender/chunk_reads.hpp"
#include "sender/memlock.hpp"
#include "sender/progress_bar.hpp"

namespace rdmax::sender {

class SharedBwlimit;  // sender/send_window.hpp
class StripeLink;     // sender/stripe_link.hpp

struct SenderSettings {
  std::optional<std::string> id;
  // On the wire: kVersion2, or kVersion1 for a receiver that speaks nothing else (the run
  // then puts sender/version1_transport.hpp between the driver and the wire).
  std::uint16_t version = proto::kLatestVersion;
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds timeout{30};  // no word from the receiver for this long ends it
  bool zero_copy = false;
  // Testing: flip the byte at this offset of every file that long, on its way to the wire
  // (sender/corrupting_transport.hpp; not with the digest at end, nor zero-copy).
  std::optional<std::uint64_t> inject_corruption;
  ProgressMode progress = ProgressMode::Off;
  std::optional<std::uint64_t> bwlimit;  // --bwlimit: bytes per second (sender/rate_limit.hpp)
  // --bwlimit's one bucket, shared by the command's connections (owned by the run).
  SharedBwlimit* shared_bwlimit = nullptr;
  // The lead of several connections holds its directories and its end (the Id) until the
  // others are finished (Connection::others_finished).
  bool hold_for_others = false;
  // The command's share of RLIMIT_MEMLOCK (owned by the run); none: nothing is limited.
  MemlockBudget* memlock = nullptr;
  // --key-file (owned by the command): prove it, and demand the receiver's proof, before the
  // Accept (docs/PROTOCOL.md 7.8). None: no key is offered.
  const proto::SenderKey* key = nullptr;
  // With `key`: ask to seal everything after the proofs (docs/PROTOCOL.md 7.11), and go on
  // only with a receiver that does.
  bool seal = true;
  // A fetch's (docs/PROTOCOL.md 7.13): its keys were proven before the session, by the
  // server's intake, which also seals the messages; the chunks are sealed under this key
  // (owned by the intake). None: as `key` and `seal` say.
  const proto::SealKey* proven_chunk_key = nullptr;
  // --digest-at-end (docs/PROTOCOL.md 7.9): files whose digest is not known are offered
  // without it and hashed as they are read for sending, on `pool`.
  bool digest_at_end = false;
  // The run's workers: they read the chunks copied for sending (sender/chunk_reads.hpp) and
  // hash. None: the event loop reads them itself (and there is no digest at the end).
  WorkPool* pool = nullptr;
  // The work on a chunk, as the workers do it: its read (sender/chunk_reads.hpp) and the
  // hashing of a file whose digest comes at the end. Empty: the real ones (read_fully, the
  // plan's digest); the pipeline benchmark gives stand-ins (tests/bench/work_emulation.hpp).
  ChunkRead read{};
  FileHashing hashing{};
  // One file over several connections (docs/PROTOCOL.md 7.12): this connection's place in
  // the command's stripe group (owned by the run). None: it stripes nothing.
  StripeLink* stripes = nullptr;
  // Bytes a member may carry of striped files, besides its own entries (its Open says them).
  std::uint64_t striped_bytes = 0;
};

// What the driver needs from rdma_cm.
class SenderCm {
 public:
  virtual void resolve_route() = 0;
  // Creates the transport (queue pair, posted receives) and calls rdma_connect.
  virtual Transport& connect() = 0;

 protected:
  ~SenderCm() = default;
};

}  // namespace rdmax::sender
