#pragma once
// A fetcher's connection to rdma-send --serve, before its session (docs/PROTOCOL.md 7.13):
// the pure machine (protocol/fetch_machines.hpp, serve_next) driven through the shared driver
// skeleton (common/connection/driver_core.hpp). It takes the Fetch and the Wants, walks what
// they name beneath the export on the worker pool (sender/fetch_request.hpp), keeps the
// fetcher informed meanwhile (Working), and then either answers (a Reject, or a Bye for an
// empty share) or hands the connection over: the owner's `serve` gets the share walked, and
// runs the sender's own driver (sender/connection.hpp) over wire(), which sends the Open.
// From then on nothing reaches this driver; it stays as long as the connection (the wire is
// its decorator over the transport).
//
// Lifecycle: created on CONNECT_REQUEST over a transport whose receives are posted (the
// daemon then accepts); ends in Serving (the session's driver has it) or in Closed. The
// owner destroys it once reapable(): closed, and no walk runs on the pool.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/connection/dispatcher.hpp"
#include "common/connection/driver_core.hpp"
#include "common/connection/sealed_transport.hpp"
#include "common/connection/transport.hpp"
#include "common/crypto/auth_penalties.hpp"
#include "common/crypto/key_check.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/fetch_machines.hpp"
#include "protocol/wire.hpp"
#include "sender/fetch_request.hpp"
#include "sender/serve_metrics.hpp"

namespace rdmax::sender {

// What every connection of a server shares.
struct ServeContext {
  int export_fd;                 // the exported directory (rdma-send --serve DIR)
  WorkPool& pool;                // where requests are walked
  std::chrono::seconds timeout;  // no progress for this long ends a connection
  // --readers: null, every fetcher gets in; else each proves a key first, sealed (7.13).
  const proto::SenderKeyStore* readers = nullptr;
  AuthPenalties* penalties = nullptr;  // where failed authentications are counted
  ServeMetrics* metrics = nullptr;     // --metrics: the refused requests are counted there
};

class ServeIntake final : public DriverCore {
 public:
  // Called once, when the share walked is to be sent.
  using Serve = std::function<void(ServedTree share)>;
  // `address`: the peer's address without its port, which failed authentications count
  // against (--readers).
  ServeIntake(Transport& transport, std::string peer, const ServeContext& context, Serve serve,
              std::string address = {});
  ~ServeIntake();

  // RDMA_CM_EVENT_ESTABLISHED: the Fetch is due within the timeout.
  void on_established();
  // The deadline, and Working while a walk runs (the Fetch's keepalive).
  void tick(Clock::time_point now);
  // SIGINT/SIGTERM: a fetcher still asking is told the server stops.
  void shut_down();
  // A CM event that ends the connection (CONNECT_ERROR, UNREACHABLE, DEVICE_REMOVAL...).
  void on_cm_failure(const std::string& what);

  proto::ServeState state() const { return state_; }
  bool serving() const { return state_ == proto::ServeState::Serving; }
  bool closed() const { return state_ == proto::ServeState::Closed; }
  bool reapable() const { return closed() && walk_.idle(); }
  // The wire the session goes on once served.
  Transport& wire() { return sealed_; }
  // The connection's keepalive, as the Fetch asked (0: none).
  std::uint32_t keepalive_ms() const { return keepalive_ms_; }
  // Where the fetcher proved a key: the key its chunks are sealed under (7.11), for the
  // session; it lives as long as this intake. Null: the fetch is in clear.
  const proto::SealKey* chunk_key() const {
    const auto& keys = keys_.seal_keys();
    return keys ? &keys->chunks : nullptr;
  }

 private:
  using Event = proto::ServeEvent;
  using Action = proto::ServeAction;
  using State = proto::ServeState;

  // An event, what the driver's checks found, and what the actions that follow it send.
  struct Input {
    Event event;
    proto::ServeChecks checks{};
    proto::Reject reject{};  // SendReject's
    proto::Error error{};    // SendError's (an illegal step's says what was out of place)
  };

  void dispatch(Input input);
  void step(const Input& input);
  void perform(Action action, const Input& cause);
  void walk();
  void walked(std::variant<ServedTree, proto::Reject> result);
  Input fetch_taken(const proto::Fetch& fetch);
  Input want_taken(const proto::Want& want);
  Input proof_taken(const proto::Proof& proof);

  void on_message(Inbound inbound) override;
  void on_sent(std::uint64_t) override {}
  void on_transport_failure(const std::string& why) override;
  void on_peer_disconnected() override;
  void on_timeout(Clock::time_point now) override;
  void on_local_failure(const std::string& what) override;
  void on_transport_lost(const std::string& what) override;

  const ServeContext& context_;
  Serve serve_;
  SealedTransport sealed_;
  State state_ = State::AwaitFetch;
  KeyCheck keys_;
  std::optional<proto::Fetch> fetch_;  // a keyed one, until its Proof
  std::optional<FetchRequest> request_;
  std::uint32_t keepalive_ms_ = 0;
  std::optional<ServedTree> share_;  // walked, until it is served
  Dispatcher<Input> dispatcher_;
  WorkQueue walk_;  // last: its job is waited out before the rest goes
};

}  // namespace rdmax::sender
