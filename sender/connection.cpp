#include "sender/connection.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/crypto/auth_proof.hpp"
#include "protocol/names.hpp"
#include "protocol/refusals.hpp"
#include "protocol/secure_wipe.hpp"
#include "protocol/stripes.hpp"
#include "protocol/transfer_rules.hpp"
#include "sender/stripe_link.hpp"

namespace rdmax::sender {

namespace {
using Input = SenderInput;

// The digest at the end (docs/PROTOCOL.md 7.9), where the receiver may take it.
bool asks_digest_at_end(const SenderSettings& settings, std::uint16_t version) {
  return settings.digest_at_end && settings.pool != nullptr && version == proto::kVersion2;
}

// The receiver's answers about the session's entries or window: GotAnswer's data.
std::optional<SenderInput::Answer> answer_in(const proto::Message& message) {
  if (const auto* m = std::get_if<proto::Credit>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Take>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Resume>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Have>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Holds>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Refuse>(&message)) return *m;
  if (const auto* m = std::get_if<proto::FileVerdict>(&message)) return *m;
  return std::nullopt;
}

// KeepSecret: the received secret moves into `kept`, and the message's copy is wiped.
void keep_secret(SenderInput& cause, std::string& kept) {
  auto& received = data_for<proto::SenderAction::KeepSecret>(cause).secret;
  kept.assign(received);
  proto::secure_wipe(received.data(), received.size());
}

}  // namespace

Connection::Connection(const SenderSettings& settings, TransferPlan& plan,
                       std::vector<std::uint32_t> entries, SenderCm& cm, std::string peer_label)
    : DriverCore(std::move(peer_label)),
      settings_(settings),
      cm_(cm),
      holding_(settings.hold_for_others),
      keys_(settings.key),
      hooks_{
          .violation =
              [this](const std::string& text) {
                spdlog::error("[{}] {}", label(), text);
                dispatch(input<Event::ProtocolViolation>(
                    Input::Abort{proto::ErrorCode::ProtocolViolation, text}));
              },
          .raise = [this](SenderInput input) { dispatch(std::move(input)); },
          .send = [this](const proto::Message& message, std::uint64_t tag) { post(message, tag); },
          .pump = [this] { pump(); },
          .in_session =
              [this](const std::function<void()>& work) {
                guarded([&] {
                  if (state_ == State::InSession) work();
                });
              },
      },
      entries_(settings, plan, std::move(entries), hooks_),
      window_(settings, entries_, hooks_) {
  // A member of a stripe group (7.12) may still be asked to join after its own entries.
  holding_joins_ = settings.stripes != nullptr && settings.stripes->group().member > 0;
}

Connection::~Connection() {
  // The reading and hashing jobs use our buffers: cancelled, and the running ones waited for.
  window_.stop();
  entries_.stop_jobs();
  proto::secure_wipe(secret_.data(), secret_.size());
}

void Connection::start() {
  started_ = Clock::now();
  expect("address resolution", settings_.connect_timeout);
}

void Connection::start_accepted() {
  started_ = Clock::now();
  setup_.reset();
  guarded([&] {
    SenderInput established = input<Event::Established>();
    perform(Action::Connect, established);  // the connection's transport, as a connect's
    dispatch(std::move(established));
  });
}

void Connection::on_setup(proto::SetupEvent event) {
  guarded([&] { dispatch({event, {}}); });  // the set-up's machine: no data
}
void Connection::on_established() {
  guarded([&] { dispatch(input<Event::Established>()); });
}
void Connection::on_connect_failed(const std::string& why) {
  spdlog::error("[{}] {}", label(), why);
  guarded([&] { dispatch(input<Event::ConnectFailed>()); });
}
void Connection::on_cm_failure(const std::string& why) {
  mark_transport_gone();
  spdlog::error("[{}] {}", label(), why);
  guarded([&] { dispatch(input<Event::TransportFailed>()); });
}
void Connection::interrupt(int) {
  guarded([&] {
    dispatch(input<Event::Interrupted>(
        Input::Abort{proto::ErrorCode::ShuttingDown, "sender interrupted"}));
  });
}
void Connection::settle_when_idle() {
  if (!draining_ || !idle()) return;
  draining_ = false;
  entries_.close_windows();  // deregistered through the transport, before it goes
  release_transport();
  entries_.end(outcome());
}

void Connection::tick(Clock::time_point now) {
  settle_when_idle();
  on_tick(now);
  // Chunks held by --bwlimit go when the bucket has refilled.
  if (settings_.shared_bwlimit != nullptr && state_ == State::InSession) guarded([&] { pump(); });
}

void Connection::others_finished(std::uint32_t failures) {
  if (!holding_) return;
  holding_ = false;
  others_failures_ = failures;
  entries_.ledger().allow_directories(true);
  if (state_ == State::InSession) guarded([&] { pump(); });
}

std::optional<proto::TermRefused> Connection::refused() const {
  if (outcome_ == proto::SenderOutcome::VersionUnsupported) return proto::TermRefused::Version;
  return refused_;
}

void Connection::dispatch(SenderInput input) {
  dispatcher_.dispatch(std::move(input), [this](SenderInput& next) { step(next); });
}

void Connection::step(SenderInput& input) {
  const proto::SenderContext context{settings_.id.has_value(), input.proof};
  if (const auto* settled = std::get_if<SenderInput::Settled>(&input.event))
    return apply(proto::session_settled(state_, settled->all_good, context), "all settled", input);
  const auto* setup_event = std::get_if<proto::SetupEvent>(&input.event);
  if (setup_event != nullptr && !setup_) {
    // rdma_cm answers each look-up once, before the connection: out of order.
    const char* name = proto::to_string(*setup_event);
    spdlog::error("[{}] rdma_cm answered {} after the set-up", label(), name);
    input.data =
        Input::Abort{proto::ErrorCode::ProtocolViolation, std::string(name) + " after the set-up"};
    return apply(proto::sender_next(state_, Event::ProtocolViolation, context),
                 proto::to_string(Event::ProtocolViolation), input);
  }
  if (!setup_) {
    const Event event = std::get<Event>(input.event);
    return apply(proto::sender_next(state_, event, context), proto::to_string(event), input);
  }
  // Before Connect there is no queue pair: what reaches the set-up is the CM, the clock, a
  // signal or a call of our own failing (the driver rows test NoTransportBeforeConnect).
  proto::SetupEvent event = proto::SetupEvent::Failed;
  if (setup_event != nullptr)
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
  if (!t.next) state_ = t.then;
  if (t.outcome && !outcome_) outcome_ = t.outcome;
  for (Action a : t.actions) perform(a, input);
}

void Connection::apply(const proto::SenderTransition& t, const char* event, SenderInput& input) {
  if (t.illegal) {
    spdlog::error("[{}] protocol error: {} is not allowed in state {}", label(), event,
                  proto::to_string(state_));
    input.data =
        Input::Abort{proto::ErrorCode::ProtocolViolation, std::string("unexpected ") + event};
  }
  step_log().took(label(), proto::to_string(state_), event, proto::to_string(t.next));
  state_ = t.next;
  if (t.outcome && !outcome_) outcome_ = t.outcome;
  for (Action a : t.actions) perform(a, input);
}

void Connection::perform(Action action, SenderInput& cause) {
  switch (action) {
    case Action::ResolveRoute:
      expect("route resolution", settings_.connect_timeout);
      cm_.resolve_route();
      break;
    case Action::Connect:
      expect("the connection to be accepted", settings_.connect_timeout);
      sealed_.emplace(cm_.connect());
      if (settings_.inject_corruption) {
        corrupting_.emplace(*sealed_, settings_);
        attach(*corrupting_);
      } else {
        attach(*sealed_);
      }
      set_version(proto::kVersion2);
      break;
    case Action::SendOpen:
      send_open();
      break;
    case Action::SendProof:
      post(keys_.ours());
      break;
    case Action::StartSession:
      start_session(data_for<Action::StartSession>(cause));
      break;
    case Action::TakeAnswer: {
      // A Credit is the window's, the rest answer an entry; one that breaks the rules ends
      // the session, and nothing more goes.
      const auto& answer = data_for<Action::TakeAnswer>(cause);
      const auto* credit = std::get_if<proto::Credit>(&answer);
      if (credit != nullptr ? window_.credit(*credit) : entries_.take(answer)) pump();
      break;
    }
    case Action::SettleRefused:
      settle_refused(data_for<Action::SettleRefused>(cause));
      break;
    case Action::SendId:
      expect("the answer to the id", settings_.timeout);
      post(proto::Id{*settings_.id});
      break;
    case Action::KeepSecret:
      keep_secret(cause, secret_);
      break;
    case Action::SendBye:
      post(proto::Bye{});
      break;
    case Action::SendError: {
      const auto& abort = data_for<Action::SendError>(cause);
      post(proto::Error{abort.code, abort.text.substr(0, proto::kMaxTextBytes)});
      break;
    }
    case Action::Disconnect:
      begin_disconnect();
      break;
    case Action::Finish:
      // Its jobs read the buffers released next: cancelled, and the end waits for those
      // running, on the loop's ticks (a read of a hung file system must not stall the loop,
      // and with it a server's every other fetcher).
      window_.cancel();
      entries_.cancel_jobs();
      draining_ = true;
      settle_when_idle();
      break;
  }
}

void Connection::send_open() {
  connect_seconds_ = std::chrono::duration<double>(Clock::now() - started_).count();
  spdlog::info("connected to {}", label());
  expect("the receiver's answer to Open", settings_.timeout);
  proto::Open open{entries_.algorithm(),
                   proto::keepalive_ms_for(static_cast<std::uint64_t>(settings_.timeout.count())),
                   0, entries_.count(), entries_.total_bytes()};
  open.extensions.push_back({proto::kExtensionResume, {}});  // we understand Resume and Have
  if (settings_.key != nullptr) {
    open.extensions.push_back(proto::sender_key_extension(fresh_nonce(), settings_.key->id));
    if (settings_.seal) open.extensions.push_back(proto::seal_extension());  // 7.11
  }
  if (asks_digest_at_end(settings_, version())) {
    open.extensions.push_back({proto::kExtensionDigestAtEnd, {}});  // 7.9
    // Told only how much is held, we prove what we have (7.9).
    open.extensions.push_back({proto::kExtensionProveHeld, {}});
  }
  if (settings_.stripes != nullptr) {  // 7.12: our place in the command's group
    open.extensions.push_back(proto::stripe_group_extension(settings_.stripes->group()));
    open.total_bytes += settings_.striped_bytes;  // what its Joins may carry
  }
  keys_.sent(open);
  post(open);
}

void Connection::settle_refused(const proto::Reject& reject) {
  if (refused_) return;  // a term the command sends again without (a fall-back)
  // A command of one file (a version-1 receiver's Hello among them): the refusal is the
  // file's, with the file's next step.
  if (entries_.one_file()) {
    const std::string detail = std::string(proto::to_string(reject.reason)) +
                               (reject.text.empty() ? "" : ": ") +
                               proto::escape_for_log(reject.text);
    spdlog::error("{}: refused by the receiver ({}); {}",
                  proto::quoted_for_log(entries_.planned(0).local_path), detail,
                  proto::refusal_next_step(reject.reason, proto::RefusalScope::File));
    entries_.settle(0, {.status = EntryResult::Status::Refused,
                        .outcome = proto::SenderOutcome::Rejected,
                        .detail = detail});
  } else {
    spdlog::error(
        "[{}] the receiver refused the session: {}", label(),
        proto::describe_refusal(reject.reason, reject.text, proto::RefusalScope::Session));
  }
}

void Connection::start_session(const proto::Accept& accept) {
  if (const auto problem = proto::check_accept(accept, entries_.algorithm(), 0))
    return hooks_.violation(proto::describe(*problem, accept, 0));
  const std::optional<std::uint32_t> slots = window_.fit(accept);
  if (!slots) {
    return dispatch(input<Event::LocalFailure>(SenderInput::Abort{
        proto::ErrorCode::Internal, "the sender cannot pin one slot under its RLIMIT_MEMLOCK"}));
  }
  slot_size_ = accept.slot_size;
  entries_.start(accept, *slots, !holding_);
  const auto& seal = keys_.seal_keys();
  window_.start(*transport(), accept.slot_size, seal ? &seal->chunks : settings_.proven_chunk_key);
  expect("the receiver's answers", settings_.timeout);
  pump();
}

void Connection::pump() {
  if (state_ != State::InSession) return;
  entries_.send_offers();
  window_.send_chunks();
  if (!entries_.send_file_dones()) return;
  // (A member the receiver did not answer with Stripes has nothing to wait for.)
  const bool joins_may_come = holding_joins_ && stripes_said_;
  if (entries_.ledger().all_settled() && !holding_ && !joins_may_come && !settled_signalled_) {
    settled_signalled_ = true;
    // The id is presented only when every entry of the command is good.
    const bool good = entries_.all_good() && others_failures_ == 0;
    dispatch({SenderInput::Settled{good}, {}});
  }
}

void Connection::on_sent(std::uint64_t tag) {
  if (tag == 0) return;  // a control message
  // The FileChunk's SEND completed, so the WRITE before it did too.
  if (window_.completed(static_cast<std::uint32_t>(tag - 1))) pump();
}

void Connection::on_message(Inbound inbound) {
  if (state_ == State::Done) return;
  auto* decoded = std::get_if<proto::Message>(&inbound.decoded);
  // The first answer is judged as such where the table says it is awaited.
  const bool first_answer = proto::sender_awaits_first_answer(state_);
  if (!proto::sender_accepts_version(version(), inbound.version, decoded, first_answer)) {
    return hooks_.violation("a version-" + std::to_string(inbound.version) +
                            " message from the receiver on a version-" + std::to_string(version()) +
                            " connection");
  }
  if (decoded == nullptr) {
    const auto& failure = std::get<proto::DecodeFailure>(inbound.decoded);
    // A receiver of a release before sealing ignores the Open's ask and answers in clear;
    // our Error goes in clear too (SealedTransport), the only form it reads.
    if (failure.error == proto::DecodeError::NotSealed && first_answer)
      return hooks_.violation("the receiver answered in clear where we asked to seal (" +
                              failure.detail +
                              "); a receiver of a release before sealing answers in clear: "
                              "upgrade it, or pass --no-seal on a trusted fabric");
    return hooks_.violation(std::string("malformed message from the receiver: ") +
                            proto::to_string(failure.error) + " (" + failure.detail + ")");
  }
  if (state_ != State::Closing) expect(waiting_for(), settings_.timeout);
  proto::Message& message = *decoded;
  const std::uint16_t message_version = inbound.version;
  // Sender keys (docs/PROTOCOL.md 7.8): not a byte of data goes to a receiver that did not
  // prove it holds our key.
  if (auto input = keys_.judge(message, first_answer, label())) {
    // From the receiver's good Proof on, everything is sealed where we asked (7.11).
    if (const auto& seal = keys_.seal_keys(); seal && sealed_ && !sealed_->sealing())
      sealed_->seal_from_now(MessageSeal(seal->messages_to_receiver, seal->messages_to_sender));
    return dispatch(std::move(*input));
  }
  if (const auto* accept = std::get_if<proto::Accept>(&message))
    return dispatch(input<Event::GotAccept>(*accept));
  // Only to an Open that asked (7.12); the machine finds it out of place anywhere but right
  // before the Accept.
  if (std::holds_alternative<proto::Stripes>(message) && settings_.stripes != nullptr) {
    if (first_answer) stripes_said_ = true;
    return dispatch(input<Event::GotStripes>());
  }
  if (const auto* m = std::get_if<proto::Reject>(&message)) {
    if (m->reason == proto::RejectReason::AuthRequired ||
        m->reason == proto::RejectReason::AuthFailed ||
        m->reason == proto::RejectReason::SealRequired) {
      spdlog::error("[{}] the receiver refused us: {}", label(),
                    proto::describe_refusal(m->reason, m->text, proto::RefusalScope::Session));
      return dispatch(input<Event::GotRejectAuth>());
    }
    // A receiver that does not know BLAKE3 or the digest at the end refuses the Open as
    // carrying an unknown must-understand extension (7.10, 7.9): the command sends the files
    // again without the term refused, the newest asked first.
    const proto::SessionTerms asked{version(), keys_.open_sent().digest_algorithm,
                                    asks_digest_at_end(settings_, version())};
    if (const auto term = proto::term_refused(asked);
        term && m->reason == proto::RejectReason::UnsupportedVersion &&
        message_version == proto::kVersion2) {
      if (*term == proto::TermRefused::Algorithm)
        spdlog::debug("[{}] the receiver refused BLAKE3 (0x8004)", label());
      else
        spdlog::warn("[{}] the receiver does not take the digest at the end: hashing first",
                     label());
      refused_ = *term;
      return dispatch(input<Event::GotReject>(*m));
    }
    if (proto::rejects_our_version(*m, message_version, version())) {
      spdlog::warn("[{}] the receiver does not speak protocol version 2{}{}", label(),
                   m->text.empty() ? "" : ": ", proto::escape_for_log(m->text));
      return dispatch(input<Event::GotRejectVersion>());
    }
    return dispatch(input<Event::GotReject>(*m));
  }
  if (auto answer = answer_in(message))
    return dispatch(input<Event::GotAnswer>(std::move(*answer)));
  if (auto* m = std::get_if<proto::Secret>(&message)) {
    SenderInput secret = input<Event::GotSecret>(proto::Secret{m->secret});
    proto::secure_wipe(m->secret.data(), m->secret.size());
    return dispatch(std::move(secret));
  }
  if (std::holds_alternative<proto::Denied>(message)) {
    spdlog::error("[{}] the receiver denied the id", label());
    return dispatch(input<Event::GotDenied>());
  }
  if (const auto* m = std::get_if<proto::Error>(&message)) {
    spdlog::error("[{}] the receiver aborted: {}{}{}", label(), proto::to_string(m->code),
                  m->text.empty() ? "" : ": ", proto::escape_for_log(m->text));
    const bool gave_up =
        m->code == proto::ErrorCode::Timeout || m->code == proto::ErrorCode::ShuttingDown;
    return dispatch(gave_up ? input<Event::GotErrorGaveUp>() : input<Event::GotError>());
  }
  if (std::holds_alternative<proto::Working>(message)) return dispatch(input<Event::GotWorking>());
  spdlog::error("[{}] unexpected {} from the receiver", label(),
                proto::to_string(proto::type_of(message)));
  dispatch(input<Event::GotUnexpected>());  // illegal everywhere: the driver names it
}

void Connection::on_transport_failure(const std::string& why) {
  if (state_ != State::Closing && state_ != State::Done)
    spdlog::error("[{}] RDMA {} (while waiting for {})", label(), why, waiting_for());
  dispatch(input<Event::TransportFailed>());
}

void Connection::on_peer_disconnected() {
  if (state_ == State::Done) return;
  if (state_ != State::Closing) spdlog::error("[{}] the receiver disconnected", label());
  dispatch(input<Event::Disconnected>());
}

void Connection::on_timeout(Clock::time_point) {
  if (state_ == State::Done) return;
  if (state_ != State::Closing)
    spdlog::error("[{}] timed out waiting for {}", label(), waiting_for());
  dispatch(input<Event::Timeout>(Input::Abort{proto::ErrorCode::Timeout, "sender timed out"}));
}

void Connection::on_local_failure(const std::string&) {
  dispatch(input<Event::LocalFailure>(Input::Abort{proto::ErrorCode::Internal, "sender failure"}));
}

void Connection::on_transport_lost(const std::string&) {
  dispatch(input<Event::TransportFailed>());
}

}  // namespace rdmax::sender
