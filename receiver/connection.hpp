#pragma once
// One sender's connection, seen from the receiver: the pure state machine
// (protocol/receiver_machine.hpp) driven through the shared driver skeleton
// (common/connection/driver_core.hpp), the data-phase rules of the ReceiveLedger, the
// transfer's IncomingFile (disk and hashing work on the daemon's pool), and the window
// the sender writes into.
//
// Lifecycle: created on CONNECT_REQUEST over a transport whose receives are posted (the
// daemon then accepts); driven by messages, send completions, CM events, results from the
// pool and the daemon's ticks; ends in Closed. The daemon destroys it once reapable():
// closed, and no disk or hashing job still uses its window or its file. The Transport
// (the connection's device resources) outlives it.
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
#include "common/sha256.hpp"
#include "common/work_pool.hpp"
#include "protocol/receive_ledger.hpp"
#include "protocol/receiver_machine.hpp"
#include "protocol/secrets.hpp"
#include "protocol/session_receive_ledger.hpp"
#include "protocol/wire.hpp"
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
};

// An event and the data it carries (docs/PROTOCOL.md 4.5 names the events).
struct ReceiverInput {
  struct ForeignVersion {
    std::uint16_t version;
  };
  struct Rejection {
    proto::RejectReason reason;
    std::string text;
  };
  struct StoredSlot {
    std::uint32_t slot;
    std::uint32_t entry = 0;  // sessions: the entry whose chunk it held
  };
  struct Verdict {
    proto::VerdictCode code;
  };
  // Sessions: the outcome of an entry's check or verification.
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
  struct Abort {  // why the receiver ends the connection; SendError sends it
    proto::ErrorCode code;
    std::string text;
  };
  proto::ReceiverEvent event;
  std::variant<std::monostate, proto::Hello, ForeignVersion, Rejection, proto::Chunk, StoredSlot,
               proto::Done, Verdict, proto::Id, Abort, proto::Open, proto::Offer, proto::FileChunk,
               proto::FileDone, EntryRefusal, EntryTaken, EntryVerdict>
      data;
};

class Connection final : public DriverCore {
 public:
  Connection(Transport& transport, std::string peer, ReceiverContext& context);
  ~Connection();

  // Ticks the deadline, and keeps a waiting version-2 sender informed (Working).
  void tick(Clock::time_point now);
  // SIGINT/SIGTERM: abandon the transfer cleanly.
  void shut_down();
  // A CM event that ends the connection (CONNECT_ERROR, UNREACHABLE, DEVICE_REMOVAL...).
  void on_cm_failure(const std::string& what);

  proto::ReceiverState state() const { return state_; }
  bool closed() const { return state_ == proto::ReceiverState::Closed; }
  // A file or session is under way (not waiting for its first message, nor ending): what
  // the daemon's shutdown grace waits for.
  bool transferring() const {
    return state_ != proto::ReceiverState::AwaitHello && state_ != proto::ReceiverState::Closing &&
           !closed();
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
  void perform(Action action, const ReceiverInput& cause);

  // DriverCore.
  void on_message(Inbound inbound) override;
  void on_sent(std::uint64_t tag) override;
  void on_transport_failure(const std::string& why) override;
  void on_peer_disconnected() override;
  void on_timeout() override;
  void on_local_failure(const std::string& what) override;
  void on_transport_lost(const std::string& what) override;

  // Actions.
  void check_hello(const ReceiverInput& cause);
  void send_accept();
  void store_chunk(const proto::Chunk& chunk);
  void on_stored(const IncomingFile::Stored& stored);
  void send_credit(std::uint32_t slot);
  void await_drain(const ReceiverInput& cause);
  void verify();
  void lookup_id(const proto::Id& id);
  void send_error(const ReceiverInput& cause);
  void discard_file();
  void release();

  bool register_window();
  void register_slot(std::uint32_t slot);
  void revoke_slot(std::uint32_t slot);
  std::span<std::uint8_t> slot_bytes(std::uint32_t slot);
  void expect_data();
  void log_transfer_end(const char* verdict);
  // One file's closing line, for one file or a session's entry alike: what arrived, when,
  // the digest computed and the verdict (none: abandoned, with no digest to name).
  void log_file_end(const std::string& name, std::uint64_t received, std::uint64_t size,
                    Clock::time_point since, proto::DigestAlgorithm algorithm,
                    const Digest& computed, const char* verdict) const;

  // Sessions (receiver/connection_session.cpp).
  struct SessionEntry {
    proto::Offer offer;
    std::optional<IncomingFile> file;  // files only
    Digest computed{};
    Clock::time_point taken{};  // its Take or Resume: its data began
    bool committing = false;
    bool data_bad = false;  // a bad verdict: nothing is kept for a resume
  };
  void check_open(const ReceiverInput& cause);
  void check_offer(const proto::Offer& offer);
  void check_directory(SessionEntry& entry);
  void send_take(std::uint32_t entry);
  void send_resume(std::uint32_t entry);
  void send_session_have(std::uint32_t entry);
  void send_have();
  void send_refuse(const ReceiverInput::EntryRefusal& refusal);
  void store_session_chunk(const proto::FileChunk& chunk);
  void on_session_stored(std::uint32_t entry, const IncomingFile::Stored& stored);
  void send_session_credit(const ReceiverInput::StoredSlot& stored);
  void grant_slot(std::uint32_t slot);
  std::optional<std::string> session_end_problem(bool id) const;
  void finish_entries(const ReceiverInput& cause);
  void verify_entry(std::uint32_t id);
  void send_file_verdict(const ReceiverInput::EntryVerdict& verdict);
  void settle_entry(std::uint32_t id);
  void discard_session_files();
  bool session_idle() const;
  bool committing() const;  // a commit job (the file's, or a session entry's) is queued or running
  void on_session_message(proto::Message& message);
  SessionEntry* session_entry(std::uint32_t id);
  void expect_session();
  void reap_retired();

  ReceiverContext& context_;
  State state_ = State::AwaitHello;
  Dispatcher<ReceiverInput> dispatcher_;

  // The transfer.
  proto::Hello hello_;
  proto::ReceiveLedger ledger_;
  std::uint32_t slot_count_ = 0;
  std::uint64_t done_total_ = 0;
  Digest computed_{};
  proto::VerdictCode verdict_ = proto::VerdictCode::Good;
  std::string secret_;  // between LookupId and SendSecret; wiped once sent
  unsigned id_attempts_ = 0;
  Clock::time_point data_started_{};
  bool logged_end_ = false;
  bool committing_ = false;             // the commit job is queued or running
  bool resume_understood_ = false;      // the Hello or Open carried kExtensionResume
  bool data_bad_ = false;               // a bad verdict: nothing is kept for a resume
  bool shutdown_after_commit_ = false;  // SIGTERM arrived while a file was committed
  std::uint64_t window_charge_ = 0;     // this connection's share of window_bytes_in_use
  std::span<std::uint8_t> window_;      // the transport's allocation
  std::vector<std::optional<Registration>> slot_keys_;  // engaged: the slot is registered
  // Sessions.
  bool session_ = false;
  proto::Open open_{};
  proto::SessionReceiveLedger session_ledger_;
  std::uint32_t entries_had_ = 0;     // Good because they were here already (Have)
  std::uint32_t entries_failed_ = 0;  // refused or not verified: no secret for this session
  std::uint64_t session_bytes_ = 0;   // stored, for the end-of-session log
  std::uint32_t entries_good_ = 0;
  // Last: their jobs use the window (which the transport owns and outlives them).
  std::optional<IncomingFile> file_;
  std::map<std::uint32_t, std::unique_ptr<SessionEntry>> entries_;  // in flight
  // Settled or abandoned, until no job uses them: then their slots, if their chunks were
  // being stored, go back to the sender.
  std::vector<std::pair<std::uint32_t, std::unique_ptr<SessionEntry>>> retired_;
  std::optional<WorkQueue> directories_;  // sessions: directory work, in order
};

}  // namespace rdmax::receiver
