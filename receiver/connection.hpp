#pragma once
// One sender's connection, seen from the receiver: the pure state machine
// (protocol/receiver_machine.hpp) driven through the shared driver skeleton
// (common/connection/driver_core.hpp), a session's rules in its ReceiveLedger, one
// IncomingFile per file entry in flight (disk and hashing work on the daemon's pool), and
// the window the sender writes into. Every transfer is a session (docs/PROTOCOL.md 7.5); a
// sender that names its one file with a Hello is served as a session of that one entry by
// the HelloEdge between this driver and the transport (receiver/hello_edge.hpp).
//
// Lifecycle: created on CONNECT_REQUEST over a transport whose receives are posted (the
// daemon then accepts); driven by messages, send completions, CM events, results from the
// pool and the daemon's ticks; ends in Closed. The window is allocated when the Open is
// accepted and registered, a slot at a time, when the first file is taken (a session of
// directories and files already in place pins nothing). The daemon destroys the connection
// once reapable(): closed, and no disk or hashing job still uses its window or its files.
// The Transport (the connection's device resources) outlives it.
//
// Threads: all of it runs on the daemon's event loop; only IncomingFile's jobs run on the
// pool, and they touch only revoked slots, the hash and the file.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/connection/dispatcher.hpp"
#include "common/connection/driver_core.hpp"
#include "common/connection/transport.hpp"
#include "common/digest/sha256.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/auth.hpp"
#include "protocol/receive_ledger.hpp"
#include "protocol/receiver_machine.hpp"
#include "protocol/secrets.hpp"
#include "protocol/sender_keys.hpp"
#include "protocol/wire.hpp"
#include "receiver/auth_penalties.hpp"
#include "receiver/hello_edge.hpp"
#include "receiver/incoming_file.hpp"
#include "receiver/options.hpp"
#include "receiver/space_reservations.hpp"

namespace rdmax::receiver {

// What every connection shares with the daemon.
struct ReceiverContext {
  const ReceiverOptions& options;
  int dir_fd;
  const proto::SecretStore* secrets;  // null: every id is denied
  WorkPool& pool;
  std::uint64_t window_bytes_in_use = 0;  // registered by all connections, vs --max-memory
  // Bytes of files being received that no preallocation reserved yet on the disk: the
  // free-space check of the next file counts them as taken (receiver/space_reservations.hpp).
  SpaceReservations space{};
  // For the daemon's status line (systemd STATUS=): totals since start.
  std::uint64_t bytes_received = 0;  // chunk bytes that arrived, good or bad
  std::uint64_t files_stored = 0;    // files committed into the directory
  PartialStore* partials = nullptr;  // null: --no-partial (receiver/partial_store.hpp)
  // --senders: null, every sender gets in; else each proves a key first (PROTOCOL.md 7.8).
  const proto::SenderKeyStore* sender_keys = nullptr;
  AuthPenalties* penalties = nullptr;  // where failed authentications are counted
};

// An event and the data it carries (docs/PROTOCOL.md 7.5 names the messages).
struct ReceiverInput {
  struct AcceptedOpen {  // an Open that passed its checks, and the window it is granted
    proto::Open open;
    std::uint32_t slots;
    std::uint64_t window_bytes;
    bool resume_understood;
  };
  struct Rejection {
    proto::RejectReason reason;
    std::string text;
  };
  struct StoredSlot {
    std::uint32_t slot;
    std::uint32_t entry;  // whose chunk it held
  };
  // The outcome of an entry's check or verification.
  struct EntryRefusal {
    std::uint32_t entry;
    proto::RejectReason reason;
    std::string text;
  };
  struct EntryTaken {
    std::uint32_t entry;
  };
  struct EntryVerdict {
    std::uint32_t entry;
    proto::VerdictCode code;
  };
  // The digest at the end (PROTOCOL.md 7.9): what is here of a file offered without its digest.
  struct EntryHeld {
    std::uint32_t entry;
    std::uint64_t length;
    proto::Digest digest;
  };
  struct Abort {  // why the receiver ends the connection; SendError sends it
    proto::ErrorCode code;
    std::string text;
  };
  // An event of the connection's machine, or a result of the entries' work (InSession's:
  // proto::session_result).
  std::variant<proto::ReceiverEvent, proto::WorkResult> event;
  std::variant<std::monostate, AcceptedOpen, Rejection, proto::Offer, proto::FileChunk,
               proto::FileDone, StoredSlot, EntryRefusal, EntryTaken, EntryVerdict, proto::Id,
               Abort, EntryHeld, proto::Continue, proto::FileAbort>
      data;
  proto::ReceiverChecks checks{};  // with GotOpen, GotProof, GotId: what their check found
};

class Connection final : public DriverCore {
 public:
  // `address`: the peer's address without its port, which failed authentications count
  // against (--senders).
  Connection(Transport& transport, std::string peer, ReceiverContext& context,
             std::string address = {});
  ~Connection();

  // Ticks the deadline, and keeps a waiting version-2 sender informed (Working).
  void tick(Clock::time_point now);
  // SIGINT/SIGTERM: abandon the transfer cleanly.
  void shut_down();
  // A CM event that ends the connection (CONNECT_ERROR, UNREACHABLE, DEVICE_REMOVAL...).
  void on_cm_failure(const std::string& what);
  // RDMA_CM_EVENT_ESTABLISHED: from now on the sender owes its Open (or Hello) within
  // --timeout. Until then the connection manager's handshake is under way, which under
  // loss resends a message only after about 4 s: a deadline of its own bounds it.
  void on_established();

  proto::ReceiverState state() const { return state_; }
  bool closed() const { return state_ == proto::ReceiverState::Closed; }
  // A file or session is under way (not waiting for its first message, nor ending): what
  // the daemon's shutdown grace waits for.
  bool transferring() const {
    return state_ != proto::ReceiverState::AwaitOpen &&
           state_ != proto::ReceiverState::Authenticating &&
           state_ != proto::ReceiverState::Closing && !closed();
  }
  // No job on the pool uses this connection's memory or file.
  bool idle() const;
  // Closed and idle: the daemon may destroy it (and then its transport).
  bool reapable() const { return closed() && idle(); }
  // The daemon is exiting without waiting for this connection to close: stop the queue
  // pair and drop the file's pending work (the temporary is removed).
  void abandon();

 private:
  using Event = proto::ReceiverEvent;
  using Action = proto::ReceiverAction;
  using State = proto::ReceiverState;

  void dispatch(ReceiverInput input);
  void step(const ReceiverInput& input);
  void apply(const proto::ReceiverTransition& t, const char* event, const ReceiverInput& input);
  void perform(Action action, const ReceiverInput& cause);

  // DriverCore.
  void on_message(Inbound inbound) override;
  void on_sent(std::uint64_t tag) override;
  void on_transport_failure(const std::string& why) override;
  void on_peer_disconnected() override;
  void on_timeout() override;
  void on_local_failure(const std::string& what) override;
  void on_transport_lost(const std::string& what) override;

  // One file or directory of the session, from its Offer to its settlement.
  struct SessionEntry {
    proto::Offer offer;
    std::optional<IncomingFile> file;  // files only
    Digest computed{};
    Clock::time_point taken{};  // its Take or Resume: its data began
    bool committing = false;
    bool data_bad = false;             // a bad verdict: nothing is kept for a resume
    std::optional<proto::Holds> held;  // 7.9: what we said we hold of it
  };

  // Actions (receiver/connection.cpp: the connection; connection_entries.cpp: its entries),
  // and the checks whose findings an Open, a Proof and an Id carry to the machine: `event`
  // is the one the Open's findings go with (GotOpen, or GotProof after a good Proof).
  void check_open(const proto::Open& open, proto::ReceiverEvent event);
  // Sender keys (docs/PROTOCOL.md 7.8): the challenge, the sender's proof, and a failure
  // counted against the peer's address.
  void send_challenge();
  void check_proof(const proto::Proof& proof);
  void authentication_failed(const std::string& why);
  void send_accept(const ReceiverInput::AcceptedOpen& accepted);
  void send_reject(const ReceiverInput& cause);
  void check_offer(const proto::Offer& offer);
  void check_directory(SessionEntry& entry);
  // Creates the offered file (a new one, a resumed partial, or Have): -> EntryTaken,
  // EntryResumed, EntryHave or EntryRefused.
  void create_file(std::uint32_t id, std::optional<IncomingFile::Resume> resume);
  // A flagged file's partial, if the sender understands Resume: a new one (none continued).
  IncomingFile::Resume fresh_partial() const;
  // The digest at the end (PROTOCOL.md 7.9): what is here of a flagged file (-> EntryHeld,
  // or on to create_file), the Holds, the sender's Continue, and its FileAbort.
  void look_for_held(std::uint32_t id);
  void send_holds(const ReceiverInput::EntryHeld& held);
  bool digest_at_end_negotiated(const char* message);
  void check_continue(const proto::Continue& next);
  void confirm_whole(std::uint32_t id, const proto::Holds& held);
  void abandon_entry(const proto::FileAbort& abort);
  void send_take(std::uint32_t entry);
  void send_resume(std::uint32_t entry);
  void take_entry(std::uint32_t entry, std::uint64_t from);
  void send_have(std::uint32_t entry);
  void send_refuse(const ReceiverInput::EntryRefusal& refusal);
  void store_chunk(const proto::FileChunk& chunk);
  void on_stored(std::uint32_t entry, const IncomingFile::Stored& stored);
  void send_credit(const ReceiverInput::StoredSlot& stored);
  void finish_entries(const ReceiverInput& cause);
  void verify_entry(std::uint32_t id);
  void send_file_verdict(const ReceiverInput::EntryVerdict& verdict);
  void send_secret();
  void send_error(const ReceiverInput& cause);
  void discard_files();
  void release();

  // The window: allocated with the Open's acceptance, its slots registered when the first
  // file is taken (register_window) and again each time one is credited back.
  bool register_window();
  void grant_slot(std::uint32_t slot);
  void grant_idle_slots();
  void register_slot(std::uint32_t slot);
  void revoke_slot(std::uint32_t slot);
  std::span<std::uint8_t> slot_bytes(std::uint32_t slot);

  void lookup_id(const proto::Id& id);
  std::optional<std::string> session_end_problem(bool id) const;
  void settle_entry(std::uint32_t id);
  void reap_retired();
  bool files_idle() const;
  bool committing() const;  // a commit job of an entry is queued or running
  SessionEntry* session_entry(std::uint32_t id);
  void expect_next();
  proto::WorkPhase work_phase() const;
  // One file's closing line: what arrived, when, the digest computed and the verdict
  // (none: abandoned, with no digest to name).
  void log_file_end(const std::string& name, std::uint64_t received, std::uint64_t size,
                    Clock::time_point since, const Digest& computed, const char* verdict) const;

  ReceiverContext& context_;
  HelloEdge edge_;   // the transport, as the driver sees it
  FlowTerms terms_;  // what the sender's flow means here, read with its first message
  State state_ = State::AwaitOpen;
  Dispatcher<ReceiverInput> dispatcher_;

  proto::Open open_{};
  proto::ReceiveLedger ledger_;
  bool resume_understood_ = false;      // the Open carried kExtensionResume
  bool digest_at_end_ = false;          // ... and kExtensionDigestAtEnd (7.9)
  bool data_bad_ = false;               // the sender broke the rules: nothing is kept
  bool shutdown_after_commit_ = false;  // SIGTERM arrived while a file was committed
  std::string secret_;                  // between lookup_id() and SendSecret; wiped once sent
  // Sender keys: the Open that claimed a key and the Challenge it got (the transcript),
  // then what a good Proof earned: our own Proof, and the id's subdirectory.
  std::string address_;
  std::optional<proto::SenderKeyClaim> claim_;
  proto::Open claimed_open_{};
  proto::Challenge challenge_{};
  std::optional<proto::Digest> receiver_proof_;
  bool authenticated_ = false;
  std::string subdir_;  // non-empty: every path of the session goes beneath DIR/subdir_
  unsigned id_attempts_ = 0;
  Clock::time_point data_started_{};  // the Accept
  std::uint32_t entries_good_ = 0;
  std::uint32_t entries_had_ = 0;     // Good because they were here already (Have)
  std::uint32_t entries_failed_ = 0;  // refused or not verified: no secret for this session
  std::uint64_t bytes_stored_ = 0;    // for Working and the end-of-session log
  // The window.
  std::uint32_t slot_count_ = 0;
  std::uint64_t window_charge_ = 0;  // this connection's share of window_bytes_in_use
  std::span<std::uint8_t> window_;   // the transport's allocation
  bool window_registered_ = false;
  std::vector<std::optional<Registration>> slot_keys_;  // engaged: the slot is registered
  // Last: their jobs use the window (which the transport owns and outlives them).
  std::map<std::uint32_t, std::unique_ptr<SessionEntry>> entries_;  // in flight
  // Settled or abandoned, until no job uses them: then their slots, if their chunks were
  // being stored, go back to the sender.
  std::vector<std::pair<std::uint32_t, std::unique_ptr<SessionEntry>>> retired_;
  std::optional<WorkQueue> directories_;  // directory work, in order
};

}  // namespace rdmax::receiver
