#pragma once
// A fetcher's request served (rdma-send --serve, docs/PROTOCOL.md 7.13): once the intake
// (sender/serve_intake.hpp) walked the share, the session goes as a push's does, the sender's
// own driver (sender/connection.hpp) sending it over the wire the fetcher connected: each
// file offered without its digest and hashed as it is read (7.9), so nothing is read twice,
// and the fetcher's partials and files in place are checked against it as a push's are.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/connection/transport.hpp"
#include "common/work/work_pool.hpp"
#include "sender/connection.hpp"
#include "sender/fetch_request.hpp"
#include "sender/sender_settings.hpp"
#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

// What every session of a server is sent with.
struct ServeSettings {
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::Blake3;
  std::chrono::seconds timeout{30};
  SharedBwlimit* bwlimit = nullptr;  // --bwlimit: one rate for every session together
  WorkPool* pool = nullptr;          // reads and hashes (required)
  // Each session's share of RLIMIT_MEMLOCK (the daemon's, split over --max-connections): a
  // fetcher's Accept alone never decides how much the server pins. None: unlimited (tests).
  MemlockBudget* memlock = nullptr;
};

class ServedSession final : SenderCm {
 public:
  // `chunk_key`: where the fetch's proofs asked to seal, its chunks' key (7.11; owned by the
  // intake, which seals the messages below `wire`).
  ServedSession(ServedTree share, Transport& wire, const ServeSettings& settings, std::string label,
                const proto::SealKey* chunk_key = nullptr);
  // The Open goes at once: the connection is made.
  void start() { connection_->start_accepted(); }
  Connection& connection() { return *connection_; }
  const TransferPlan& plan() const { return plan_; }
  // Entries the fetcher settled good (identical ones among them).
  std::size_t good() const;
  // Files settled good that moved (not identical ones), and the bytes written for them all.
  std::size_t files_sent() const;
  std::uint64_t bytes_sent() const;

 private:
  void resolve_route() override {}
  Transport& connect() override { return wire_; }

  ServedTree share_;  // its root is the plan's source_dir
  TransferPlan plan_;
  SenderSettings settings_;
  Transport& wire_;
  std::unique_ptr<Connection> connection_;  // last: it uses all of the above
};

}  // namespace rdmax::sender
