#include "sender/serve_intake.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>

#include "protocol/fetch_part.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::sender {

namespace {
// "share 1/4" or "share 1/4, part 2/3" (counted from 1), for the log.
std::string share_words(const proto::Fetch& fetch) {
  std::string words =
      "share " + std::to_string(fetch.shard_index + 1) + "/" + std::to_string(fetch.shard_count);
  const proto::FetchPart part = proto::fetch_part_of(fetch);
  if (part.count > 1)
    words += ", part " + std::to_string(part.index + 1) + "/" + std::to_string(part.count);
  return words;
}
}  // namespace

namespace {
// How long the connection manager's handshake may take (the receiver's reason, in
// receiver/connection.cpp: a lost REP or RTU is sent again after about 4 s).
constexpr std::chrono::seconds kEstablishWait{30};

// What a sender that pushes to a server is told (docs/PROTOCOL.md 7.13).
constexpr const char* kNotAReceiver =
    "this is a fetch server (rdma-send --serve): it sends files and receives none; push to an "
    "rdma-recv, or fetch from here with rdma-recv --from";
}  // namespace

ServeIntake::ServeIntake(Transport& transport, std::string peer, const ServeContext& context,
                         Serve serve, std::string address)
    : DriverCore(std::move(peer)),
      context_(context),
      serve_(std::move(serve)),
      sealed_(transport),
      keys_(context.readers, context.penalties, std::move(address), "fetcher"),
      walk_(context.pool, "walk") {
  attach(sealed_);
  expect("the connection to be established",
         std::max<Clock::duration>(context_.timeout, kEstablishWait));
}

ServeIntake::~ServeIntake() {
  walk_.cancel();  // the owner waited for a running walk (reapable)
}

void ServeIntake::on_established() {
  if (state_ == State::AwaitFetch) expect("the Fetch", context_.timeout);
}

void ServeIntake::tick(Clock::time_point now) {
  if (serving()) return;
  on_tick(now);
  // The Fetch asked to hear from us while we walk (7.13): a walk of a large tree takes a while.
  if (state_ == State::Walking && keepalive_ms_ > 0 &&
      now - last_sent() >= std::chrono::milliseconds(keepalive_ms_))
    guarded([&] { post(proto::Working{proto::WorkPhase::Preparing, 0}); });
}

void ServeIntake::shut_down() {
  guarded([&] {
    dispatch({Event::ShuttingDown, {}, {}, {proto::ErrorCode::ShuttingDown, "server stopping"}});
  });
}

void ServeIntake::on_cm_failure(const std::string& what) {
  mark_transport_gone();
  spdlog::warn("[{}] {}", label(), what);
  guarded([&] { dispatch({Event::TransportFailed}); });
}

void ServeIntake::dispatch(Input input) {
  dispatcher_.dispatch(std::move(input), [this](const Input& next) { step(next); });
}

void ServeIntake::step(const Input& input) {
  const auto t = proto::serve_next(state_, input.event, input.checks);
  const State before = state_;
  if (t.illegal)
    spdlog::warn("[{}] protocol violation: {} in state {}", label(), proto::to_string(input.event),
                 proto::to_string(before));
  step_log().took(label(), proto::to_string(before), proto::to_string(input.event),
                  proto::to_string(t.next));
  state_ = t.next;
  for (Action a : t.actions) {
    if (a == Action::SendError && t.illegal) {
      post(proto::Error{proto::ErrorCode::ProtocolViolation,
                        std::string(proto::to_string(input.event)) + " not allowed in " +
                            proto::to_string(before)});
      continue;
    }
    perform(a, input);
  }
}

void ServeIntake::perform(Action action, const Input& cause) {
  switch (action) {
    case Action::SendChallenge:
      post(keys_.challenge());
      expect("the fetcher's Proof", context_.timeout);
      return;
    case Action::SendProof:
      // Ours, in clear; everything after it sealed, both ways (7.13): the fetcher's Wants
      // first, then our Working, Open or Reject.
      post(proto::Proof{*keys_.receiver_proof()});
      if (const auto& keys = keys_.seal_keys())
        sealed_.seal_from_now(MessageSeal(keys->messages_to_receiver, keys->messages_to_sender));
      return;
    case Action::SendReject:
      spdlog::warn("[{}] refused the request: {}: {}", label(),
                   proto::to_string(cause.reject.reason), proto::escape_for_log(cause.reject.text));
      if (context_.metrics != nullptr) context_.metrics->count(cause.reject.reason);
      post(proto::Reject{cause.reject.reason, cause.reject.text.substr(0, proto::kMaxTextBytes)});
      return;
    case Action::Walk:
      return walk();
    case Action::Serve:
      expect_own_work("the session");  // the sender's driver keeps the deadlines from now
      serve_(std::move(*share_));
      share_.reset();
      return;
    case Action::SendBye:
      spdlog::info("[{}] nothing to send: the share asked for is empty", label());
      post(proto::Bye{});
      return;
    case Action::SendError:
      post(proto::Error{cause.error.code, cause.error.text.substr(0, proto::kMaxTextBytes)});
      return;
    case Action::Disconnect:
      begin_disconnect();
      return;
    case Action::Release:
      walk_.cancel();
      share_.reset();
      release_transport();
      return;
  }
}

ServeIntake::Input ServeIntake::fetch_taken(const proto::Fetch& fetch) {
  auto refused = [](proto::RejectReason reason, std::string text) {
    return Input{
        Event::GotFetch, {.request = proto::RequestCheck::Rejected}, {reason, std::move(text)}};
  };
  if (auto reject = check_fetch(fetch)) return refused(reject->reason, std::move(reject->text));
  keepalive_ms_ = fetch.keepalive_ms;
  if (keys_.required()) {
    // --readers: nothing is walked, and no name taken, before the fetcher proves a key; and
    // a keyed fetch is sealed (7.13). Each refusal in clear, before any Challenge.
    if (!keys_.claim(fetch)) {
      spdlog::warn("[{}] refused a fetcher without a key (--readers requires one)", label());
      return refused(proto::RejectReason::AuthRequired,
                     "this server serves only fetchers that prove a key it lists: fetch with "
                     "--key-file");
    }
    if (!proto::asks_to_seal(fetch)) {
      spdlog::warn("[{}] refused a keyed fetcher that does not ask to seal", label());
      return refused(proto::RejectReason::SealRequired, "this server requires sealing");
    }
    fetch_ = fetch;
    return {Event::GotFetch, {.request = proto::RequestCheck::NeedsProof}};
  }
  // A fetcher that claims a key must hear that none is listed: it would wait for a Challenge
  // and we for its Wants (7.13).
  if (proto::sender_key_claim(fetch))
    return refused(proto::RejectReason::AuthFailed,
                   "this server lists no keys (rdma-send --serve without --readers): fetch "
                   "without --key-file");
  request_.emplace(fetch, std::string());
  spdlog::debug("[{}] fetch: {}", label(), share_words(fetch));
  return {Event::GotFetch, {.request = proto::RequestCheck::Accepted}};
}

ServeIntake::Input ServeIntake::proof_taken(const proto::Proof& proof) {
  if (!keys_.check(proof, label()))
    return {Event::GotProof,
            {.request = proto::RequestCheck::Rejected},
            {proto::RejectReason::AuthFailed, "authentication failed: unknown id or wrong key"}};
  // A key with a subdirectory fetches only beneath it (7.13).
  request_.emplace(*fetch_, keys_.subdir());
  spdlog::debug("[{}] fetch: {}", label(), share_words(*fetch_));
  fetch_.reset();
  return {Event::GotProof, {.request = proto::RequestCheck::Accepted}};
}

ServeIntake::Input ServeIntake::want_taken(const proto::Want& want) {
  if (const auto reject = request_->add(want))
    return {Event::GotWant, {.want = proto::WantCheck::Rejected}, *reject};
  spdlog::debug("[{}] wants {}{}", label(), proto::quoted_for_log(want.path),
                want.recursive ? " (recursive)" : "");
  return {Event::GotWant,
          {.want = request_->whole() ? proto::WantCheck::Last : proto::WantCheck::More}};
}

void ServeIntake::walk() {
  expect_own_work("the walk of the request");
  auto result = std::make_shared<std::variant<ServedTree, proto::Reject>>(proto::Reject{});
  walk_.post(
      [result, request = std::make_shared<FetchRequest>(std::move(*request_)),
       export_fd = context_.export_fd] {
        try {
          *result = request->resolve(export_fd);
        } catch (const std::exception& e) {
          *result = proto::Reject{proto::RejectReason::Internal, e.what()};
        }
      },
      [this, result] { guarded([&] { walked(std::move(*result)); }); });
  request_.reset();
}

void ServeIntake::walked(std::variant<ServedTree, proto::Reject> result) {
  if (state_ != State::Walking) return;  // the fetcher went away meanwhile
  if (auto* reject = std::get_if<proto::Reject>(&result))
    return dispatch({Event::Walked, {.walk = proto::WalkCheck::Rejected}, std::move(*reject)});
  auto& share = std::get<ServedTree>(result);
  // Left out as a push leaves them out (a link, a special file, a name the protocol cannot
  // carry): the fetcher is not told, so the server's log says it.
  for (const Skipped& s : share.tree.skipped)
    spdlog::warn("[{}] left out '{}': {}", label(), proto::escape_for_log(s.local_path), s.reason);
  const bool empty = share.tree.files.empty() && share.tree.directories.empty();
  if (!empty) {
    spdlog::info("[{}] sending {} file(s), {} directories, {}", label(), share.tree.files.size(),
                 share.tree.directories.size(), proto::format_size(share.tree.total_bytes));
    share_.emplace(std::move(share));
  }
  dispatch({Event::Walked, {.walk = empty ? proto::WalkCheck::Empty : proto::WalkCheck::Share}});
}

void ServeIntake::on_message(Inbound inbound) {
  if (serving() || closed()) return;
  if (state_ != State::Closing) expect("the fetcher's next message", context_.timeout);
  auto* message = std::get_if<proto::Message>(&inbound.decoded);
  if (version() == 0) {
    // The first message says the connection's version; one we do not speak is refused in
    // version 1, as a receiver refuses it (7.1).
    const bool speaks = inbound.version == proto::kVersion2;
    set_version(speaks ? proto::kVersion2 : proto::kVersion1);
    const auto* failure = std::get_if<proto::DecodeFailure>(&inbound.decoded);
    if (failure != nullptr && failure->error == proto::DecodeError::BadVersion)
      return dispatch({Event::GotFetch,
                       {.request = proto::RequestCheck::Rejected},
                       {proto::RejectReason::UnsupportedVersion,
                        "this server speaks protocol versions 1 and 2 (a fetch: version 2)"}});
  } else if (inbound.version != version()) {
    const std::string text = "a version-" + std::to_string(inbound.version) +
                             " message on a version-" + std::to_string(version()) + " connection";
    spdlog::warn("[{}] {}", label(), text);
    return dispatch(
        {Event::ProtocolViolation, {}, {}, {proto::ErrorCode::ProtocolViolation, text}});
  }
  if (message == nullptr) {
    const auto& failure = std::get<proto::DecodeFailure>(inbound.decoded);
    const std::string text = std::string("malformed message: ") + proto::to_string(failure.error) +
                             " (" + failure.detail + ")";
    spdlog::warn("[{}] {}", label(), text);
    return dispatch(
        {Event::ProtocolViolation, {}, {}, {proto::ErrorCode::ProtocolViolation, text}});
  }
  if (const auto* fetch = std::get_if<proto::Fetch>(message)) {
    if (state_ == State::AwaitFetch) return dispatch(fetch_taken(*fetch));
    return dispatch({Event::GotFetch});
  }
  if (const auto* want = std::get_if<proto::Want>(message)) {
    if (state_ == State::AwaitWants) return dispatch(want_taken(*want));
    return dispatch({Event::GotWant});
  }
  if (std::holds_alternative<proto::Open>(*message) ||
      std::holds_alternative<proto::Hello>(*message)) {
    if (state_ == State::AwaitFetch)
      spdlog::warn("[{}] a sender pushed to this server; told it to push to an rdma-recv", label());
    return dispatch({Event::GotPush, {}, {}, {proto::ErrorCode::ProtocolViolation, kNotAReceiver}});
  }
  if (const auto* proof = std::get_if<proto::Proof>(message)) {
    if (state_ == State::Authenticating) return dispatch(proof_taken(*proof));
    return dispatch({Event::GotProof});
  }
  if (const auto* m = std::get_if<proto::Error>(message)) {
    spdlog::warn("[{}] the fetcher aborted: {}{}{}", label(), proto::to_string(m->code),
                 m->text.empty() ? "" : ": ", proto::escape_for_log(m->text));
    return dispatch({Event::GotError});
  }
  dispatch({Event::GotUnexpected});
}

void ServeIntake::on_transport_failure(const std::string& why) {
  if (state_ != State::Closing && !closed()) spdlog::warn("[{}] RDMA {}", label(), why);
  dispatch({Event::TransportFailed});
}

void ServeIntake::on_peer_disconnected() {
  if (state_ == State::Authenticating) keys_.failed("it left without a Proof", label());
  if (state_ != State::Closing && !closed()) spdlog::info("[{}] the fetcher disconnected", label());
  dispatch({Event::Disconnected});
}

void ServeIntake::on_timeout(Clock::time_point) {
  if (state_ == State::Authenticating) keys_.failed("no Proof came", label());
  if (state_ != State::Closing)
    spdlog::warn("[{}] timed out waiting for {}", label(), waiting_for());
  dispatch({Event::Timeout, {}, {}, {proto::ErrorCode::Timeout, "server timed out"}});
}

void ServeIntake::on_local_failure(const std::string& what) {
  spdlog::error("[{}] {}", label(), what);
  dispatch({Event::LocalFailure, {}, {}, {proto::ErrorCode::Internal, "server failure"}});
}

void ServeIntake::on_transport_lost(const std::string&) {
  dispatch({Event::TransportFailed});
}

}  // namespace rdmax::sender
