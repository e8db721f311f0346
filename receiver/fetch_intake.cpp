#include "receiver/fetch_intake.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/crypto/auth_proof.hpp"
#include "protocol/names.hpp"
#include "protocol/seal.hpp"

namespace rdmax::receiver {

namespace {
// Wants posted and not yet acknowledged at once: well within our send queue (control_depth)
// and the server's receives (80 at least, 7.13).
constexpr std::uint32_t kWantsInFlight = 16;
}  // namespace

FetchIntake::FetchIntake(const FetchAsk& ask, FetchCm& cm, std::string peer, Receive receive)
    : DriverCore(std::move(peer)), ask_(ask), cm_(cm), receive_(std::move(receive)) {}

void FetchIntake::start() {
  expect("address resolution", ask_.connect_timeout);
}

void FetchIntake::on_setup(proto::SetupEvent event) {
  guarded([&] { dispatch({event}); });
}
void FetchIntake::on_established() {
  guarded([&] { dispatch({Event::Established}); });
}
void FetchIntake::on_connect_failed(const std::string& why) {
  spdlog::error("[{}] {}", label(), why);
  guarded([&] { dispatch({Event::ConnectFailed}); });
}
void FetchIntake::on_cm_failure(const std::string& why) {
  mark_transport_gone();
  spdlog::error("[{}] {}", label(), why);
  guarded([&] { dispatch({Event::TransportFailed}); });
}
void FetchIntake::interrupt(int) {
  guarded([&] {
    dispatch({Event::Interrupted, {proto::ErrorCode::ShuttingDown, "fetcher interrupted"}});
  });
}
void FetchIntake::tick(Clock::time_point now) {
  if (!receiving()) on_tick(now);
}

void FetchIntake::dispatch(Input input) {
  dispatcher_.dispatch(std::move(input), [this](const Input& next) { step(next); });
}

void FetchIntake::step(const Input& input) {
  if (setup_) {
    // Before Connect there is no queue pair: the CM, the clock, a signal or our own call
    // failing (as the sender's set-up).
    proto::SetupEvent event = proto::SetupEvent::Failed;
    if (const auto* setup_event = std::get_if<proto::SetupEvent>(&input.event))
      event = *setup_event;
    else if (std::get<Event>(input.event) == Event::Interrupted)
      event = proto::SetupEvent::Interrupted;
    const auto t = proto::setup_next(*setup_, event);
    if (t.illegal)
      spdlog::error("[{}] rdma_cm answered {} while {}", label(), proto::to_string(event),
                    proto::to_string(*setup_));
    step_log().took(label(), proto::to_string(*setup_), proto::to_string(event),
                    t.next ? proto::to_string(*t.next) : proto::to_string(t.then));
    setup_ = t.next;
    if (!t.next) state_ = proto::fetch_state_after_setup(t.then);
    if (t.outcome && !outcome_) outcome_ = t.outcome;
    for (proto::SenderAction a : t.actions) perform_setup(a);
    return;
  }
  if (std::holds_alternative<proto::SetupEvent>(input.event)) {
    spdlog::error("[{}] rdma_cm answered a look-up after the set-up", label());
    return dispatch(
        {Event::ProtocolViolation, {proto::ErrorCode::ProtocolViolation, "rdma_cm out of order"}});
  }
  const Event event = std::get<Event>(input.event);
  const auto t = proto::fetch_next(state_, event, {ask_.key != nullptr, input.proof});
  const State before = state_;
  if (t.illegal)
    spdlog::error("[{}] protocol error: {} is not allowed in state {}", label(),
                  proto::to_string(event), proto::to_string(before));
  step_log().took(label(), proto::to_string(before), proto::to_string(event),
                  proto::to_string(t.next));
  state_ = t.next;
  if (t.outcome && !outcome_) outcome_ = t.outcome;
  for (Action a : t.actions) {
    if (a == Action::SendError && t.illegal) {
      post(proto::Error{proto::ErrorCode::ProtocolViolation,
                        std::string("unexpected ") + proto::to_string(event)});
      continue;
    }
    perform(a, input);
  }
}

void FetchIntake::perform_setup(proto::SenderAction action) {
  switch (action) {
    case proto::SenderAction::ResolveRoute:
      expect("route resolution", ask_.connect_timeout);
      cm_.resolve_route();
      return;
    case proto::SenderAction::Connect:
      expect("the connection to be accepted", ask_.connect_timeout);
      sealed_.emplace(cm_.connect());
      replay_.emplace(*sealed_);
      attach(*replay_);
      set_version(proto::kVersion2);
      return;
    case proto::SenderAction::Finish:
      release_transport();
      return;
    default:
      throw std::logic_error("the set-up asked for a connection's action");
  }
}

void FetchIntake::perform(Action action, const Input& cause) {
  switch (action) {
    case Action::SendFetch:
      return send_fetch();
    case Action::SendProof:
      expect("the server's Proof", ask_.timeout);
      return send_proof();
    case Action::SendWants:
      expect("the server's answer", ask_.timeout);
      return send_wants();
    case Action::Receive:
      expect_own_work("the session");  // the receiver's driver keeps the deadlines from now
      replay_->hold(std::move(*open_));
      open_.reset();
      return receive_();
    case Action::SendError:
      post(proto::Error{cause.error.code, cause.error.text.substr(0, proto::kMaxTextBytes)});
      return;
    case Action::Disconnect:
      return begin_disconnect();
    case Action::Finish:
      return release_transport();
  }
}

void FetchIntake::send_fetch() {
  spdlog::info("connected to {}", label());
  fetch_sent_ =
      proto::Fetch{proto::keepalive_ms_for(static_cast<std::uint64_t>(ask_.timeout.count())),
                   ask_.shard_index,
                   ask_.shard_count,
                   {}};
  if (ask_.part.count > 1) fetch_sent_.extensions.push_back(proto::fetch_part_extension(ask_.part));
  if (ask_.key != nullptr) {
    // Our key's claim, and the ask to seal: with a key, nothing goes in clear after the
    // proofs (7.13).
    fetch_sent_.extensions.push_back(proto::sender_key_extension(fresh_nonce(), ask_.key->id));
    fetch_sent_.extensions.push_back(proto::seal_extension());
    expect("the server's Challenge", ask_.timeout);
  }
  post(fetch_sent_);
}

void FetchIntake::send_proof() {
  post(proto::Proof{auth_proof(proto::ProofRole::Sender, ask_.key->key, fetch_sent_, *challenge_)});
}

FetchIntake::Input FetchIntake::judge_proof(const proto::Proof& proof) {
  if (state_ != State::AwaitProof || !challenge_) return {Event::GotProof};  // out of place
  const proto::Digest transcript = transcript_hash(fetch_sent_, *challenge_);
  if (!same_proof(auth_proof(proto::ProofRole::Receiver, ask_.key->key, transcript), proof.mac)) {
    server_said_ = "its proof is wrong: it does not hold our key";
    spdlog::error(
        "[{}] not fetching: the server did not prove that it holds our key (its proof is "
        "wrong: it lists another key for id '{}')",
        label(), proto::escape_for_log(ask_.key->id));
    return {Event::GotProof,
            {proto::ErrorCode::AuthFailed, "the server did not prove that it holds our key"},
            proto::ProofCheck::Bad};
  }
  // Everything after the server's Proof is sealed, our first Want first (7.13).
  seal_keys_ = derive_seal_keys(ask_.key->key, transcript);
  sealed_->seal_from_now(
      MessageSeal(seal_keys_->messages_to_sender, seal_keys_->messages_to_receiver));
  spdlog::debug("[{}] the server proved that it holds our key; sealed from now on", label());
  return {Event::GotProof, {}, proto::ProofCheck::Good};
}

void FetchIntake::send_wants() {
  while (wants_sent_ < ask_.wants.size() && transport()->sends_in_flight() < kWantsInFlight)
    post(ask_.wants[wants_sent_++]);
}

void FetchIntake::on_sent(std::uint64_t) {
  // A request of more paths than the queue holds goes as the server takes them (7.13).
  if (state_ == State::AwaitAnswer) send_wants();
}

void FetchIntake::on_message(Inbound inbound) {
  if (receiving()) return replay_->hold(std::move(inbound));  // the receiver's, in order
  if (finished()) return;
  auto* decoded = std::get_if<proto::Message>(&inbound.decoded);
  if (decoded == nullptr || inbound.version != proto::kVersion2) {
    std::string text = "a version-" + std::to_string(inbound.version) + " message";
    if (decoded == nullptr) {
      const auto& failure = std::get<proto::DecodeFailure>(inbound.decoded);
      text = std::string("malformed message: ") + proto::to_string(failure.error) + " (" +
             failure.detail + ")";
    }
    spdlog::error("[{}] {} from the server", label(), text);
    return dispatch({Event::ProtocolViolation, {proto::ErrorCode::ProtocolViolation, text}});
  }
  if (state_ != State::Closing) expect("the server's answer", ask_.timeout);
  const proto::Message& message = *decoded;
  if (std::holds_alternative<proto::Open>(message)) {
    open_.emplace(std::move(inbound));
    return dispatch({Event::GotOpen});
  }
  if (std::holds_alternative<proto::Bye>(message)) {
    spdlog::info("[{}] nothing to fetch: the share asked for is empty", label());
    return dispatch({Event::GotBye});
  }
  if (std::holds_alternative<proto::Working>(message)) return dispatch({Event::GotWorking});
  if (const auto* m = std::get_if<proto::Reject>(&message)) {
    server_said_ = std::string(proto::to_string(m->reason)) + (m->text.empty() ? "" : ": ") +
                   proto::escape_for_log(m->text);
    spdlog::error("[{}] the server refused the fetch: {}", label(), server_said_);
    const bool auth = m->reason == proto::RejectReason::AuthRequired ||
                      m->reason == proto::RejectReason::AuthFailed ||
                      m->reason == proto::RejectReason::SealRequired;
    return dispatch({auth ? Event::GotRejectAuth : Event::GotReject});
  }
  if (const auto* m = std::get_if<proto::Error>(&message)) {
    server_said_ = std::string(proto::to_string(m->code)) + (m->text.empty() ? "" : ": ") +
                   proto::escape_for_log(m->text);
    // A receiver, or a server of a release before fetching, answers the Fetch so (7.13).
    if (m->code == proto::ErrorCode::ProtocolViolation && state_ == State::AwaitAnswer)
      spdlog::error("[{}] not a fetch server (an rdma-recv, or a release before fetching?): {}",
                    label(), server_said_);
    else
      spdlog::error("[{}] the server aborted: {}", label(), server_said_);
    const bool gave_up =
        m->code == proto::ErrorCode::Timeout || m->code == proto::ErrorCode::ShuttingDown;
    return dispatch({gave_up ? Event::GotErrorGaveUp : Event::GotError});
  }
  if (const auto* m = std::get_if<proto::Challenge>(&message)) {
    // Due once, to a Fetch that claimed a key; anywhere else the machine finds it illegal.
    if (state_ == State::Proving && !challenge_) challenge_ = *m;
    return dispatch({Event::GotChallenge});
  }
  if (const auto* m = std::get_if<proto::Proof>(&message)) return dispatch(judge_proof(*m));
  spdlog::error("[{}] unexpected {} from the server", label(),
                proto::to_string(proto::type_of(message)));
  dispatch({Event::GotUnexpected});
}

void FetchIntake::on_transport_failure(const std::string& why) {
  if (state_ != State::Closing && !finished())
    spdlog::error("[{}] RDMA {} (while waiting for {})", label(), why, waiting_for());
  dispatch({Event::TransportFailed});
}

void FetchIntake::on_peer_disconnected() {
  if (finished()) return;
  if (state_ != State::Closing) spdlog::error("[{}] the server disconnected", label());
  dispatch({Event::Disconnected});
}

void FetchIntake::on_timeout(Clock::time_point) {
  if (finished()) return;
  if (state_ != State::Closing)
    spdlog::error("[{}] timed out waiting for {}", label(), waiting_for());
  dispatch({Event::Timeout, {proto::ErrorCode::Timeout, "fetcher timed out"}});
}

void FetchIntake::on_local_failure(const std::string&) {
  dispatch({Event::LocalFailure, {proto::ErrorCode::Internal, "fetcher failure"}});
}

void FetchIntake::on_transport_lost(const std::string&) {
  dispatch({Event::TransportFailed});
}

}  // namespace rdmax::receiver
