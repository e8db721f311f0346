#pragma once
// NOT USED BY rdma-send ANY MORE (docs/DESIGN.md, step 3): every command goes through the
// session driver (sender/session_connection.hpp), a version-1 receiver through
// sender/version1_transport.hpp. This one-file driver stays, with its unit tests, only until
// the sender machine loses its one-file states (step 4), which its tests still drive; delete
// it then, with protocol/send_ledger.*.
//
// One transfer from the sender's side: the pure state machine (protocol/sender_machine.hpp)
// driven through the shared driver skeleton (common/connection/driver_core.hpp), the
// data-phase rules of the SendLedger, and the source of the chunks (a registered staging
// buffer the file is copied into, or, zero-copy, the file's mapping registered window by
// window). What only rdma_cm can do (resolving the route, creating the queue pair and
// connecting) it asks of its SenderCm: a unit test's fake.
//
// Lifecycle: ResolvingAddress (the owner called resolve_addr) ... Done; the owner feeds it
// CM events, completions, ticks and signals until finished(). The Transport it gets from
// SenderCm::connect() outlives it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "common/connection/dispatcher.hpp"
#include "common/connection/driver_core.hpp"
#include "common/connection/transport.hpp"
#include "common/file_digest.hpp"
#include "common/input_file.hpp"
#include "common/progress_bar.hpp"
#include "common/rate_limit.hpp"
#include "common/sha256.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/sender_machine.hpp"
#include "protocol/wire.hpp"
#include "sender/file_windows.hpp"
#include "sender/memlock.hpp"

namespace rdmax::sender {

struct SenderSettings {
  std::string name;
  std::optional<std::string> id;
  std::uint16_t version = proto::kLatestVersion;
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds timeout{30};  // no word from the receiver for this long ends it
  bool zero_copy = false;
  std::optional<std::uint64_t> inject_corruption;  // testing: flip the byte at this offset
  ProgressMode progress = ProgressMode::Off;
  std::optional<std::uint64_t> bwlimit;  // --bwlimit: bytes per second (common/rate_limit.hpp)
  // The command's share of RLIMIT_MEMLOCK (owned by the run); none: nothing is limited.
  MemlockBudget* memlock = nullptr;
};

struct TransferStats {
  std::uint64_t bytes = 0;         // bytes that moved (after a Resume's offset)
  std::uint64_t resumed_from = 0;  // the receiver's Resume offset (PROTOCOL.md 7.6)
  bool skipped = false;            // the receiver had the file already (Have): nothing moved
  double connect_seconds = 0;
  double data_seconds = 0;
  double verify_seconds = 0;
  bool zero_copy = false;
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

struct SenderInput {
  struct Abort {  // why the sender ends the connection; SendError sends it
    proto::ErrorCode code;
    std::string text;
  };
  proto::SenderEvent event;
  std::variant<std::monostate, proto::Accept, proto::Secret, Abort> data;
};

// The end of a connection, the same for one file (SenderConnection) and for a session
// (SessionConnection). SendError: the Error to post, the abort's reason or else an
// internal failure. KeepSecret: the received secret moves into `kept`, and the message's
// copy is wiped.
[[nodiscard]] proto::Error error_to_send(const SenderInput& cause);
void keep_secret(SenderInput& cause, std::string& kept);

class SenderConnection final : public DriverCore {
 public:
  SenderConnection(const SenderSettings& settings, InputFile& file, const FileDigest& digest,
                   SenderCm& cm, std::string peer_label);
  ~SenderConnection();

  // Where the owner starts: rdma_resolve_addr has been called.
  void start();
  // CM events.
  void on_address_resolved();
  void on_route_resolved();
  void on_established();
  void on_connect_failed(const std::string& why);
  void on_cm_failure(const std::string& why);
  // SIGINT/SIGTERM.
  void interrupt(int signal);
  // Timer: deadlines and the progress bar.
  void tick(Clock::time_point now);

  bool finished() const { return state_ == proto::SenderState::Done; }
  proto::SenderState state() const { return state_; }
  proto::SenderOutcome outcome() const {
    return outcome_.value_or(proto::SenderOutcome::ProtocolError);
  }
  const std::string& secret() const { return secret_; }
  const TransferStats& stats() const { return stats_; }
  // --bwlimit holds the next chunk until then: the owner calls tick() at that time.
  std::optional<Clock::time_point> resume_at() const { return resume_at_; }

 private:
  using Event = proto::SenderEvent;
  using Action = proto::SenderAction;
  using State = proto::SenderState;

  void dispatch(SenderInput input);
  // Non-const: an action may take what its event carries (KeepSecret takes the secret).
  void step(SenderInput& input);
  void perform(Action action, SenderInput& cause);

  void on_message(Inbound inbound) override;
  void on_sent(std::uint64_t tag) override;
  void on_transport_failure(const std::string& why) override;
  void on_peer_disconnected() override;
  void on_timeout() override;
  void on_local_failure(const std::string& what) override;
  void on_transport_lost(const std::string& what) override;

  void handle(proto::Message& message, std::uint16_t message_version);
  void on_resume(const proto::Resume& m);
  void start_data(const proto::Accept& accept);
  void start_zero_copy(std::uint64_t window_chunks);
  // Not even one slot fits under RLIMIT_MEMLOCK: the connection ends (LocalFailure).
  void cannot_pin(std::uint32_t slot_size);
  void pump();
  bool held_by_bwlimit();
  std::pair<Registration, std::span<const std::uint8_t>> chunk_bytes(
      const proto::SendLedger::Planned& chunk);
  void expect_reply(const char* what);

  const SenderSettings& settings_;
  InputFile& file_;
  FileDigest digest_;
  SenderCm& cm_;
  State state_ = State::ResolvingAddress;
  Dispatcher<SenderInput> dispatcher_;
  std::optional<proto::SenderOutcome> outcome_;
  std::string secret_;
  TransferStats stats_;
  Clock::time_point started_{}, data_started_{}, done_sent_{};

  // The data phase.
  proto::Accept accept_{};
  proto::SendLedger ledger_;
  bool all_sent_signalled_ = false;
  std::span<std::uint8_t> staging_;  // the transport's allocation (copy mode)
  std::optional<Registration> staging_key_;
  std::optional<ProgressBar> progress_;
  std::optional<TokenBucket> bwlimit_;
  std::optional<Clock::time_point> resume_at_;
  // Last: it deregisters its windows through the transport, which outlives this.
  std::optional<FileWindows> file_windows_;
};

}  // namespace rdmax::sender
