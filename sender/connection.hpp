#pragma once
// The sender's one connection driver: a version-2 session (docs/PROTOCOL.md 7.5) of one file
// or many, from the sender's side: the pure state machine (protocol/sender_machine.hpp)
// driven through the shared driver skeleton (common/connection/driver_core.hpp). The driver
// owns the connection's lifecycle (the set-up, the Open, the key proofs, the Id and the
// secret) and two parts by what they own: its share of the command's entries
// (sender/outgoing_entries.hpp: the Offers, the receiver's answers about them, each one's
// result written back into the plan) and the window their chunks go through
// (sender/send_window.hpp: credits, --bwlimit, the staging buffer or --zero-copy mappings).
//
// Lifecycle (protocol/sender_machine.hpp): the set-up, ResolvingAddress (the owner called
// resolve_addr) -> ResolvingRoute, then the connection: Connecting -> AwaitAccept (the Open is
// sent; with --key-file the Challenge and both Proofs cross here) -> InSession (entries offered,
// taken, written and settled, several at a time, by pump()) -> [AwaitSecret, the lead's --id] ->
// Closing -> Done. The owner (sender/transfer_run.hpp) feeds it CM events, completions, ticks and
// signals until finished(). The Transport it gets from SenderCm::connect() outlives it; for
// a version-1 receiver it is wrapped in sender/version1_transport.hpp, and this driver
// does not know the difference. The driver puts its own decorators above it: the seal
// (common/connection/sealed_transport.hpp) and, for --inject-corruption, the corruption
// (sender/corrupting_transport.hpp).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/connection/dispatcher.hpp"
#include "common/connection/driver_core.hpp"
#include "common/connection/sealed_transport.hpp"
#include "common/connection/transport.hpp"
#include "protocol/sender_machine.hpp"
#include "protocol/transfer_rules.hpp"
#include "protocol/wire.hpp"
#include "sender/corrupting_transport.hpp"
#include "sender/key_proof.hpp"
#include "sender/outgoing_entries.hpp"
#include "sender/send_window.hpp"
#include "sender/sender_input.hpp"
#include "sender/sender_settings.hpp"
#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

// What the run reads of a connection as it goes, and for its report.
struct ConnectionFigures {
  std::uint32_t failures = 0;         // entries of this connection not Good (so far)
  std::uint64_t bytes_completed = 0;  // chunk bytes whose WRITE completed
  double connect_seconds = 0;         // from start() to the connection's establishment
  // The data phase: from the first Credit (the first moment a byte may move: the receiver
  // credits slots once it has taken a file, after creating it) to the last chunk's
  // completion (none: no data was sent). A run cut short ends its phase at the last chunk
  // that arrived.
  std::optional<
      std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>>
      data_span;
};

class Connection final : public DriverCore {
 public:
  // `entries` index into plan.entries: this connection's share, in the order to offer
  // (directories last). The plan outlives the connection.
  Connection(const SenderSettings& settings, TransferPlan& plan, std::vector<std::uint32_t> entries,
             SenderCm& cm, std::string peer_label);
  ~Connection();

  void start();
  // Instead of start(), on a connection already made (rdma-send --serve: the fetcher
  // connected, docs/PROTOCOL.md 7.13): no set-up, the transport from cm.connect(), the Open
  // sent at once.
  void start_accepted();
  // rdma_cm's look-ups (AddressResolved, RouteResolved) for the set-up machine.
  void on_setup(proto::SetupEvent event);
  void on_established();
  void on_connect_failed(const std::string& why);
  void on_cm_failure(const std::string& why);
  void interrupt(int signal);
  void tick(Clock::time_point now);
  // The lead of several connections (SenderSettings::hold_for_others): the others are
  // finished, with `failures` entries not good.
  void others_finished(std::uint32_t failures);
  // --bwlimit: when the next chunk held by the bucket may go (the run wakes then).
  std::optional<Clock::time_point> resume_at() const { return window_.resume_at(); }
  // One file over several connections (docs/PROTOCOL.md 7.12): the receiver answered our
  // Open with Stripes and the session runs (its slot size: `slot_size()`).
  bool striping() const { return stripes_said_ && state_ == proto::SenderState::InSession; }
  std::uint32_t slot_size() const { return slot_size_; }
  OutgoingEntries& entries() { return entries_; }
  // Sends what is due now (the run, when another connection changed what may go).
  void poke() { pump(); }
  // A member of a stripe group (7.12) stays after its own entries until the run says no
  // Join can come any more.
  void joins_over() {
    holding_joins_ = false;
    pump();
  }

  // Done, and no read or hash of ours still runs (one that ran at the end is waited for on
  // the ticks: it uses buffers and files released then).
  bool finished() const { return state_ == proto::SenderState::Done && !draining_; }
  // No read or hash of ours runs on the pool (destroying it then does not wait).
  bool idle() const { return !window_.busy() && !entries_.jobs_running(); }
  // The connection machine's state; during the set-up it is Connecting, where the
  // connection machine starts, and setup_state() says where the set-up is.
  proto::SenderState state() const { return state_; }
  std::optional<proto::SetupState> setup_state() const { return setup_; }
  proto::SenderOutcome outcome() const {
    return outcome_.value_or(proto::SenderOutcome::ProtocolError);
  }
  const std::string& secret() const { return secret_; }
  ConnectionFigures figures() const {
    return {entries_.failures(), entries_.ledger().bytes_completed(), connect_seconds_,
            window_.data_span()};
  }
  // A term of our Open the receiver refused (docs/PROTOCOL.md 7.9, 7.10: a version-2
  // Reject(UnsupportedVersion) of an Open that asked for BLAKE3 or the digest at the end;
  // BLAKE3 is checked first: a receiver that knows neither refuses whichever it meets
  // first, and the command drops one per try, the newer first), or version 2 itself.
  std::optional<proto::TermRefused> refused() const;

 private:
  using Event = proto::SenderEvent;
  using Action = proto::SenderAction;
  using State = proto::SenderState;

  void dispatch(SenderInput input);
  void step(SenderInput& input);
  void apply(const proto::SenderTransition& t, const char* event, SenderInput& input);
  void perform(Action action, SenderInput& cause);

  void on_message(Inbound inbound) override;
  void on_sent(std::uint64_t tag) override;
  void on_transport_failure(const std::string& why) override;
  void on_peer_disconnected() override;
  void on_timeout(Clock::time_point now) override;
  void on_local_failure(const std::string& what) override;
  void on_transport_lost(const std::string& what) override;

  void send_open();
  void start_session(const proto::Accept& accept);
  void settle_refused(const proto::Reject& reject);
  // Sends what is due, InSession: the Offers, the chunks, the FileDones; says when every
  // entry is settled.
  void pump();
  // The end, once Finish came and no job runs any more: the windows, the transport and the
  // files released, what was not settled marked.
  void settle_when_idle();

  const SenderSettings& settings_;
  SenderCm& cm_;
  // The wire as the driver sees it once connected: sealed after the proofs where our Open
  // asked (docs/PROTOCOL.md 7.11). Before the parts that deregister through it.
  std::optional<SealedTransport> sealed_;
  // --inject-corruption (testing): above the seal, where the FileChunks are in clear.
  std::optional<CorruptingTransport> corrupting_;
  std::optional<proto::SetupState> setup_ = proto::SetupState::ResolvingAddress;
  State state_ = State::Connecting;
  Dispatcher<SenderInput> dispatcher_;
  std::optional<proto::SenderOutcome> outcome_;
  std::optional<proto::TermRefused> refused_;
  std::string secret_;
  Clock::time_point started_{};
  double connect_seconds_ = 0;
  bool settled_signalled_ = false;
  bool draining_ = false;        // Finish came; its jobs still run (settle_when_idle)
  bool stripes_said_ = false;    // Stripes before the Accept (7.12)
  bool holding_joins_ = false;   // a member: until joins_over()
  std::uint32_t slot_size_ = 0;  // the Accept's
  bool holding_;                 // SenderSettings::hold_for_others, until others_finished()
  std::uint32_t others_failures_ = 0;
  KeyProof keys_;
  SenderHooks hooks_;
  OutgoingEntries entries_;
  // After the entries it reads and writes: its reads stop before they go.
  SendWindow window_;
};

}  // namespace rdmax::sender
