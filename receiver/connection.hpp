#pragma once
// One sender's connection, seen from the receiver: the pure state machine
// (protocol/receiver_machine.hpp) driven through the shared driver skeleton
// (common/connection/driver_core.hpp). The driver owns the connection's lifecycle (the
// Open, the sender's key, the Id and the secret) and three parts by what they own: the
// sender's key check (common/crypto/key_check.hpp), the window the sender writes into
// (receiver/receive_window.hpp), and the session's entries (receiver/incoming_entries.hpp),
// which carry out the machine's actions on them and raise what their work found as its
// next input. Every transfer is a session (docs/PROTOCOL.md 7.5); a
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

#include <cstdint>
#include <optional>
#include <string>

#include "common/connection/dispatcher.hpp"
#include "common/connection/driver_core.hpp"
#include "common/connection/sealed_transport.hpp"
#include "common/connection/transport.hpp"
#include "common/crypto/key_check.hpp"
#include "protocol/receiver_machine.hpp"
#include "protocol/seal.hpp"
#include "protocol/wire.hpp"
#include "receiver/hello_edge.hpp"
#include "receiver/incoming_entries.hpp"
#include "receiver/receive_window.hpp"
#include "receiver/receiver_input.hpp"

namespace rdmax::receiver {

class Connection final : public DriverCore {
 public:
  // `address`: the peer's address without its port, which failed authentications count
  // against (--senders).
  Connection(Transport& transport, std::string peer, ReceiverContext& context,
             std::string address = {});
  ~Connection();

  // A fetch's (docs/PROTOCOL.md 7.13): its keys were proven before the session, by the
  // fetcher's intake; the chunks open under `key` (which outlives this driver).
  void chunks_sealed_with(const proto::SealKey& key) { proven_chunk_key_ = &key; }

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
  // Where the session's entries stood when the sender said Bye (a fetcher's summary, for
  // the server ends its session so: docs/PROTOCOL.md 7.13); none: it ended otherwise.
  std::optional<proto::SessionEnd> session_end() const { return session_end_; }
  // Why a session ended before the sender's Bye, where a message said it: the sender's Error
  // (`by_peer`), or ours for a violation or a local failure. None: the connection was lost
  // (or the session ended with its Bye).
  struct SessionCut {
    bool by_peer = false;
    proto::ErrorCode code = proto::ErrorCode::Internal;
  };
  std::optional<SessionCut> cut() const { return cut_; }
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
  void on_timeout(Clock::time_point now) override;
  void on_local_failure(const std::string& what) override;
  void on_transport_lost(const std::string& what) override;

  // The Open's checks (protocol/receiver_rules.hpp): `Checked` is the event its findings go
  // with (GotOpen, or GotProof after a good Proof). Nothing is taken before it passes them.
  template <proto::ReceiverEvent Checked>
  void check_open(const proto::Open& open);
  void send_accept(const ReceiverInput::AcceptedOpen& accepted);
  void send_reject(const ReceiverInput::Rejection& rejection);
  void lookup_id(const proto::Id& id, proto::SessionEnd entries);
  void send_secret();
  void release();

  ReceiverContext& context_;
  SealedTransport sealed_;               // the wire, sealed after the proofs where the Open asked
  proto::ChunkCounters chunk_counters_;  // a sealed connection's chunks' nonces, each once
  HelloEdge edge_;                       // the transport, as the driver sees it
  FlowTerms terms_;  // what the sender's flow means here, read with its first message
  State state_ = State::AwaitOpen;
  Dispatcher<ReceiverInput> dispatcher_;

  proto::Open open_{};
  bool data_bad_ = false;               // the sender broke the rules: nothing is kept
  bool shutdown_after_commit_ = false;  // SIGTERM arrived while a file was committed
  std::string secret_;                  // between lookup_id() and SendSecret; wiped once sent
  KeyCheck keys_;
  const proto::SealKey* proven_chunk_key_ = nullptr;  // chunks_sealed_with
  unsigned id_attempts_ = 0;
  std::optional<proto::SessionEnd> session_end_;
  std::optional<SessionCut> cut_;  // the first reason given
  ReceiveWindow window_;
  // Last: their jobs use the window (which the transport owns and outlives them).
  IncomingEntries entries_;
};

}  // namespace rdmax::receiver
