#pragma once
// rdma-recv --from: a fetch's connection before its session (docs/PROTOCOL.md 7.13), the
// fetcher's side: the pure machines (protocol/fetch_machines.hpp's fetch_next, after the
// sender's set-up machine for rdma_cm's look-ups) driven through the shared driver skeleton
// (common/connection/driver_core.hpp). It connects, sends the Fetch and the Wants, and waits
// for the server's answer: a Bye (nothing to fetch) or a Reject end it here; its Open hands
// the connection to the receiver's own driver (receiver/connection.hpp), which the owner
// runs over wire(), where the Open waits to be delivered first. From then on nothing reaches
// this driver; it stays as long as the connection (the wire is its decorator).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/connection/dispatcher.hpp"
#include "common/connection/driver_core.hpp"
#include "common/connection/replay_transport.hpp"
#include "common/connection/sealed_transport.hpp"
#include "common/connection/transport.hpp"
#include "common/crypto/seal.hpp"
#include "protocol/fetch_machines.hpp"
#include "protocol/fetch_part.hpp"
#include "protocol/sender_keys.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {

// What a fetch asks for (rdma-recv --from HOST PATH...).
struct FetchAsk {
  std::vector<proto::Want> wants;  // at least one; the last is marked
  std::uint32_t shard_index = 0;
  std::uint32_t shard_count = 1;
  // -P N: this connection's part of the share (7.13's extension 0x8008); count 1: all of it.
  proto::FetchPart part{};
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds timeout{30};
  // --key-file: claimed in the Fetch and proven, the server's proof demanded, and everything
  // after sealed (7.13). Null: no key is claimed.
  const proto::SenderKey* key = nullptr;
};

// What the intake needs of rdma_cm (the fetch command's wiring, or a unit test's fake).
class FetchCm {
 public:
  virtual void resolve_route() = 0;
  // Creates the transport (queue pair, posted receives) and calls rdma_connect.
  virtual Transport& connect() = 0;

 protected:
  ~FetchCm() = default;
};

class FetchIntake final : public DriverCore {
 public:
  // Called once, when the server's Open came: the owner runs the receiver's driver over
  // wire(), and polls it at once (the Open waits there).
  using Receive = std::function<void()>;
  FetchIntake(const FetchAsk& ask, FetchCm& cm, std::string peer, Receive receive);

  void start();
  // rdma_cm (common/rdma/cm_delivery.hpp).
  void on_setup(proto::SetupEvent event);
  void on_established();
  void on_connect_failed(const std::string& why);
  void on_cm_failure(const std::string& why);
  void interrupt(int signal);
  void tick(Clock::time_point now);

  proto::FetchState state() const { return state_; }
  bool receiving() const { return state_ == proto::FetchState::Receiving; }
  bool finished() const { return state_ == proto::FetchState::Done; }
  // How it ended before a session (Receiving: the session's end decides).
  proto::SenderOutcome outcome() const {
    return outcome_.value_or(proto::SenderOutcome::ProtocolError);
  }
  // The server's words where it refused or failed (for the summary).
  const std::string& server_said() const { return server_said_; }
  Transport& wire() { return *replay_; }
  // Where the server proved our key: the key its chunks are sealed under (7.11), for the
  // receiver's driver; it lives as long as this intake. Null: the fetch is in clear.
  const proto::SealKey* chunk_key() const { return seal_keys_ ? &seal_keys_->chunks : nullptr; }

 private:
  using Event = proto::FetchEvent;
  using Action = proto::FetchAction;
  using State = proto::FetchState;

  struct Input {
    std::variant<Event, proto::SetupEvent> event;
    proto::Error error{};                                     // SendError's
    proto::ProofCheck proof = proto::ProofCheck::NotChecked;  // GotProof's
  };

  void dispatch(Input input);
  void step(const Input& input);
  void perform(Action action, const Input& cause);
  void perform_setup(proto::SenderAction action);
  void send_fetch();
  void send_proof();
  // The server's Proof, checked against the key we claimed; a good one seals from now on.
  Input judge_proof(const proto::Proof& proof);
  // The Wants not sent yet, as many as kWantsInFlight allows (the rest as sends complete).
  void send_wants();

  void on_message(Inbound inbound) override;
  void on_sent(std::uint64_t) override;
  void on_transport_failure(const std::string& why) override;
  void on_peer_disconnected() override;
  void on_timeout(Clock::time_point now) override;
  void on_local_failure(const std::string& what) override;
  void on_transport_lost(const std::string& what) override;

  const FetchAsk& ask_;
  FetchCm& cm_;
  Receive receive_;
  std::optional<SealedTransport> sealed_;
  std::optional<ReplayTransport> replay_;
  std::optional<proto::SetupState> setup_ = proto::SetupState::ResolvingAddress;
  State state_ = State::Connecting;
  Dispatcher<Input> dispatcher_;
  std::optional<proto::SenderOutcome> outcome_;
  std::string server_said_;
  std::optional<Inbound> open_;  // the server's Open, for the receiver's driver
  std::size_t wants_sent_ = 0;
  proto::Fetch fetch_sent_{};                  // with the Challenge, the proofs' transcript
  std::optional<proto::Challenge> challenge_;  // the server's, once
  std::optional<SealKeys> seal_keys_;          // once the server proved our key
};

}  // namespace rdmax::receiver
