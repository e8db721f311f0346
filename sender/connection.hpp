#pragma once
// The sender's one connection driver: a version-2 session (docs/PROTOCOL.md 7.5) of one file
// or many, from the sender's side: the pure state machine (protocol/sender_machine.hpp)
// driven through the shared driver skeleton (common/connection/driver_core.hpp), the
// session's rules in the SendLedger, and the chunks' source: a registered staging
// buffer the files are copied into, or (--zero-copy) each file's mapping, registered a
// window at a time (sender/file_windows.hpp).
// It carries its share of the command's entries (sender/transfer_plan.hpp) and writes each
// one's result back into the plan. sender/connection.cpp: the connection and the
// receiver's answers; sender/connection_data.cpp: the data path (what goes next, from where).
//
// Lifecycle (protocol/sender_machine.hpp): the set-up, ResolvingAddress (the owner called
// resolve_addr) -> ResolvingRoute, then the connection: Connecting -> AwaitAccept (the Open is
// sent; with --key-file the Challenge and both Proofs cross here) -> InSession (entries offered,
// taken, written and settled, several at a time, by pump()) -> [AwaitSecret, the lead's --id] ->
// Closing -> Done. The owner (sender/transfer_run.hpp) feeds it CM events, completions, ticks and
// signals until finished(). The Transport it gets from SenderCm::connect() outlives it; for
// a version-1 receiver it is wrapped in sender/version1_transport.hpp, and this driver
// does not know the difference.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/connection/dispatcher.hpp"
#include "common/connection/driver_core.hpp"
#include "common/connection/transport.hpp"
#include "common/digest/file_hasher.hpp"
#include "common/digest/merkle.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/sender_machine.hpp"
#include "protocol/wire.hpp"
#include "sender/chunk_reads.hpp"
#include "sender/digest_cache.hpp"
#include "sender/file_windows.hpp"
#include "sender/input_file.hpp"
#include "sender/outgoing_entry.hpp"
#include "sender/rate_limit.hpp"
#include "sender/sender_settings.hpp"
#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

// --bwlimit for a whole command: one token bucket that every connection draws from. It
// starts, empty, when the first chunk of the command is ready, so that connection set-up
// and hashing do not fill it.
class SharedBwlimit {
 public:
  explicit SharedBwlimit(std::uint64_t rate) : rate_(rate) {}
  // Made at the first chunk, with a burst of one chunk (`chunk`: the receiver's slot size)
  // and TokenBucket's 20 ms of slack for a late wake-up, for one file or a tree alike
  // (rdma-send(1)): the data phase never beats the rate.
  TokenBucket& bucket(std::chrono::steady_clock::time_point now, std::uint64_t chunk) {
    if (!bucket_) bucket_.emplace(rate_, chunk, now);
    return *bucket_;
  }

 private:
  std::uint64_t rate_;
  std::optional<TokenBucket> bucket_;
};

struct SenderInput {
  struct Abort {  // why the sender ends the connection; SendError sends it
    proto::ErrorCode code;
    std::string text;
  };
  // Every entry of the session is settled (proto::session_settled).
  struct Settled {
    bool all_good;
  };
  // GotAnswer's message: an answer about the session's entries or window.
  using Answer = std::variant<proto::Credit, proto::Take, proto::Resume, proto::Have, proto::Holds,
                              proto::Refuse, proto::FileVerdict>;
  // rdma_cm's look-ups go to the set-up machine, the rest to the connection's; pump() says
  // when the session's entries are all settled.
  std::variant<proto::SenderEvent, proto::SetupEvent, Settled> event;
  std::variant<std::monostate, proto::Accept, proto::Secret, Abort, Answer> data;
  proto::ReceiverProof proof = proto::ReceiverProof::NotDue;  // with a GotProof or GotAccept
};

class Connection final : public DriverCore {
 public:
  // `entries` index into plan.entries: this connection's share, in the order to offer
  // (directories last). The plan outlives the connection.
  Connection(const SenderSettings& settings, TransferPlan& plan, std::vector<std::uint32_t> entries,
             SenderCm& cm, std::string peer_label);
  ~Connection();

  void start();
  void on_address_resolved();
  void on_route_resolved();
  void on_established();
  void on_connect_failed(const std::string& why);
  void on_cm_failure(const std::string& why);
  void interrupt(int signal);
  void tick(Clock::time_point now);
  // The lead of several connections holds its directories and its end (the Id) until the
  // others are finished: then the run tells it how many of their entries failed.
  void hold_for_others() { holding_ = true; }
  void others_finished(std::uint32_t failures);
  // --bwlimit: the command's one bucket, shared by its connections (owned by the run).
  void share_bwlimit(SharedBwlimit* bwlimit) { bwlimit_ = bwlimit; }
  // --bwlimit: when the next chunk held by the bucket may go (the run wakes then).
  std::optional<Clock::time_point> resume_at() const { return resume_at_; }

  bool finished() const { return state_ == proto::SenderState::Done; }
  // The connection machine's state; during the set-up it is Connecting, where the
  // connection machine starts, and setup_state() says where the set-up is.
  proto::SenderState state() const { return state_; }
  std::optional<proto::SetupState> setup_state() const { return setup_; }
  proto::SenderOutcome outcome() const {
    return outcome_.value_or(proto::SenderOutcome::ProtocolError);
  }
  const std::string& secret() const { return secret_; }
  // Entries of this connection not Good (so far).
  std::uint32_t failures() const;
  std::uint64_t bytes_completed() const { return ledger_.bytes_completed(); }
  double connect_seconds() const { return connect_seconds_; }
  // The data phase: from the first Credit (the first moment a byte may move: the receiver
  // credits slots once it has taken a file, after creating it) to the last chunk's
  // completion (none: no data was sent). A run cut short ends its phase at the last chunk
  // that arrived.
  std::optional<std::pair<Clock::time_point, Clock::time_point>> data_span() const {
    if (last_data_ == Clock::time_point{}) return std::nullopt;
    return std::pair{data_began_, last_data_};
  }
  // The receiver refused the digest at the end (docs/PROTOCOL.md 7.9): a version-2
  // Reject(UnsupportedVersion) of our Open that asked for it.
  bool digest_at_end_refused() const { return digest_at_end_refused_; }
  // The receiver refused BLAKE3 (docs/PROTOCOL.md 7.10): a version-2
  // Reject(UnsupportedVersion) of our Open that named it. Checked before the digest at the
  // end: a receiver that knows neither refuses whichever it meets first, and the command
  // drops one per try, the newer first.
  bool digest_algorithm_refused() const { return digest_algorithm_refused_; }

 private:
  using Event = proto::SenderEvent;
  using Action = proto::SenderAction;
  using State = proto::SenderState;

  void dispatch(SenderInput input);
  void step(SenderInput& input);
  void setup_step(proto::SetupEvent event, SenderInput& input);
  void apply(const proto::SenderTransition& t, const char* event, SenderInput& input);
  void perform(Action action, SenderInput& cause);

  void on_message(Inbound inbound) override;
  void on_sent(std::uint64_t tag) override;
  void on_transport_failure(const std::string& why) override;
  void on_peer_disconnected() override;
  void on_timeout() override;
  void on_local_failure(const std::string& what) override;
  void on_transport_lost(const std::string& what) override;

  void handle(proto::Message& message, std::uint16_t message_version);
  // The receiver's answers (sender/connection_answers.cpp): which messages are one, and
  // each held against its entry or slot, then what is due sent (TakeAnswer). A verdict is
  // taken by take_verdict(): false when it did not fit (a violation is raised).
  static std::optional<SenderInput::Answer> answer_in(const proto::Message& message);
  void take_answer(const SenderInput::Answer& answer);
  bool take_verdict(const proto::FileVerdict& verdict);
  void send_open();
  void start_session(const proto::Accept& accept);
  void pump();
  void settle(std::uint32_t entry, EntryResult result);
  // The entry offered and not settled, or none (a reply for another entry is refused by the
  // ledger).
  OutgoingEntry* open_entry(std::uint32_t entry);
  OutgoingEntry& offered(std::uint32_t entry) { return open_.at(entry); }
  // Where a chunk's bytes come from: the file's registered mapping (--zero-copy), else the
  // staging buffer, read into it by a worker (sender/chunk_reads.hpp).
  void start_chunk(const proto::SendLedger::Planned& chunk);
  // The chunks whose bytes are ready, in the order planned: their WRITEs and FileChunks.
  // True when it dropped one instead (its file no longer taken, or unreadable): a slot is
  // free again.
  bool post_chunks();
  FileWindows* windows_for(OutgoingEntry& e, std::uint64_t offset);
  void use_staging();
  void violation(std::string text);
  // The digest at the end (docs/PROTOCOL.md 7.9; sender/connection_digests.cpp): each chunk of
  // a file offered without its digest is hashed as it is read, its slot held until then;
  // the FileDone carries the folded digest, unless the file changed (FileAbort).
  bool asks_digest_at_end() const {
    return settings_.digest_at_end && settings_.pool != nullptr && version() == proto::kVersion2;
  }
  void hash_in_flight(OutgoingEntry& e, const proto::SendLedger::Planned& chunk,
                      std::span<const std::uint8_t> bytes);
  void on_chunk_hashed(std::uint32_t entry, std::uint32_t slot, std::uint64_t offset,
                       std::uint32_t length, std::vector<merkle::Node> nodes,
                       const std::string& error);
  std::optional<Digest> digest_at_end(OutgoingEntry& e);
  void abandon(std::uint32_t entry, proto::AbortReason reason, const std::string& why);
  // A file that changed or could not be read as it was hashed: its FileAbort, after the
  // FileChunk that was posted.
  void abort_if_due(OutgoingEntry& e);
  // A chunk of a file offered without its digest could not be read: the file is abandoned.
  void unreadable_chunk(const proto::SendLedger::Planned& chunk, const std::string& error);
  // Holds: our own first `length` bytes hashed (a local read), then Continue.
  void check_holds(const proto::Holds& holds);
  void continue_from(std::uint32_t entry, const proto::Holds& holds, const Digest& ours,
                     std::vector<merkle::Node> nodes, const std::string& error);
  // A Take or Resume answering our Continue: the tree starts from the prefix we checked.
  void start_tree_at(OutgoingEntry& e, std::uint64_t offset);
  // Cancels the reading and hashing jobs and waits for the ones running (they use our
  // buffers).
  void stop_jobs();
  // Sender keys (sender/connection_keys.cpp): the Challenge, the receiver's Proof checked, an
  // Accept that came without one.
  bool handle_key_message(proto::Message& message);
  void send_proof();
  void check_receiver_proof(const proto::Proof& proof);
  void not_proven(proto::SenderEvent event, proto::ReceiverProof proof, const std::string& why);
  PlannedEntry& planned(std::uint32_t entry) { return plan_.entries[entries_[entry]]; }
  EntryResult& result(std::uint32_t entry) { return plan_.results[entries_[entry]]; }

  const SenderSettings& settings_;
  TransferPlan& plan_;
  std::vector<std::uint32_t> entries_;  // session entry number -> index into the plan
  SenderCm& cm_;
  std::optional<proto::SetupState> setup_ = proto::SetupState::ResolvingAddress;
  State state_ = State::Connecting;
  Dispatcher<SenderInput> dispatcher_;
  std::optional<proto::SenderOutcome> outcome_;
  std::string secret_;
  Clock::time_point started_{};
  Clock::time_point data_began_{};  // the first Credit
  Clock::time_point last_data_{};   // the last chunk's completion
  double connect_seconds_ = 0;
  std::uint32_t failures_ = 0;
  bool settled_signalled_ = false;
  bool holding_ = false;
  std::uint32_t others_failures_ = 0;
  SharedBwlimit* bwlimit_ = nullptr;
  std::optional<Clock::time_point> resume_at_;  // --bwlimit: a chunk waits for the bucket

  // Sender keys (docs/PROTOCOL.md 7.8): the Open as sent and the Challenge (the
  // transcript), and whether the receiver proved it holds our key.
  proto::Open open_sent_{};
  std::optional<proto::Challenge> challenge_;
  bool receiver_proven_ = false;

  proto::Accept accept_{};
  proto::SendLedger ledger_;
  // The entries offered and not settled (and a settled one whose hash still runs).
  std::map<std::uint32_t, OutgoingEntry> open_;
  std::span<std::uint8_t> staging_;  // the transport's allocation
  std::optional<Registration> staging_key_;
  // --zero-copy: each file being sent is registered a window at a time (0: copying).
  std::uint64_t window_bytes_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> in_flight_;  // per slot: entry, offset
  // The chunks planned whose WRITE is not posted yet, in order (their reads run on the pool).
  // After the staging buffer, which it reads into: stopped (stop_jobs) before that goes.
  std::optional<ChunkReads> reads_;

  std::optional<WorkQueue> checks_;  // Holds: our own prefix hashed
  bool digest_at_end_refused_ = false;
  bool digest_algorithm_refused_ = false;
};

}  // namespace rdmax::sender
