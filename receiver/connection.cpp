#include "receiver/connection.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "protocol/names.hpp"
#include "protocol/receiver_rules.hpp"
#include "protocol/seal.hpp"
#include "protocol/secure_wipe.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::receiver {

namespace {
using Input = ReceiverInput;
constexpr unsigned kMaxIdAttempts = 3;

// How long the connection manager's handshake may take from CONNECT_REQUEST to ESTABLISHED
// (at least --timeout): a lost REP or RTU is sent again after about 4 s, and the sender's
// own --connect-timeout is 10 s by default; a peer that never finishes it holds a QP and
// no memory, and --max-connections bounds how many do.
constexpr std::chrono::seconds kEstablishWait{30};
}  // namespace

Connection::Connection(Transport& transport, std::string peer, ReceiverContext& context,
                       std::string address)
    : DriverCore(std::move(peer)),
      context_(context),
      sealed_(transport),
      edge_(sealed_),
      keys_(context.sender_keys, context.penalties, std::move(address)),
      window_(context.window_bytes_in_use),
      entries_(
          context, window_, label(),
          EntryHooks{
              .raise = [this](ReceiverInput input) { dispatch(std::move(input)); },
              .send = [this](const proto::Message& message) { post(message); },
              .expect = [this](const char* what, Clock::duration within) { expect(what, within); },
              .expect_own_work = [this](const char* what) { expect_own_work(what); },
              .in_session =
                  [this](const std::function<void()>& work) {
                    guarded([&] {
                      // Entries are in flight only InSession: a completion that comes
                      // after the session left it has nothing to answer.
                      if (state_ == State::InSession) work();
                    });
                  },
              .committed =
                  [this] {
                    if (shutdown_after_commit_ && !entries_.committing()) shut_down();
                  },
          }) {
  attach(edge_);
  expect("the connection to be established",
         std::max<Clock::duration>(context_.options.timeout, kEstablishWait));
}

void Connection::on_established() {
  if (state_ == State::AwaitOpen) expect("Open or Hello", context_.options.timeout);
}

Connection::~Connection() {
  proto::secure_wipe(secret_.data(), secret_.size());
}

bool Connection::idle() const {
  return entries_.idle();
}

void Connection::dispatch(ReceiverInput input) {
  dispatcher_.dispatch(std::move(input), [this](const ReceiverInput& next) { step(next); });
}

void Connection::step(const ReceiverInput& input) {
  if (const auto* result = std::get_if<proto::WorkResult>(&input.event))
    return apply(proto::session_result(state_, *result), proto::to_string(*result), input);
  const Event event = std::get<Event>(input.event);
  // A sender that breaks the rules loses what it stored: nothing of it is kept to resume.
  if (event == Event::ProtocolViolation) data_bad_ = true;
  // (Once closing, the session's end is decided: a failure then does not change it.)
  if ((event == Event::ProtocolViolation || event == Event::LocalFailure) && !cut_ &&
      state_ != State::Closing && state_ != State::Closed)
    cut_ = SessionCut{false, event == Event::LocalFailure ? proto::ErrorCode::Internal
                                                          : proto::ErrorCode::ProtocolViolation};
  const auto t = proto::receiver_next(state_, event, input.checks);
  if (event == Event::GotBye && !t.illegal) session_end_ = input.checks.entries;
  apply(t, proto::to_string(event), input);
}

void Connection::apply(const proto::ReceiverTransition& t, const char* event,
                       const ReceiverInput& input) {
  if (t.illegal) {
    spdlog::warn("[{}] protocol violation: {} in state {}", label(), event,
                 proto::to_string(state_));
    data_bad_ = true;
    if (!cut_ && state_ != State::Closing && state_ != State::Closed)
      cut_ = SessionCut{false, proto::ErrorCode::ProtocolViolation};
  }
  step_log().took(label(), proto::to_string(state_), event, proto::to_string(t.next));
  const State before = state_;
  state_ = t.next;
  for (Action a : t.actions) {
    if (a == Action::SendError && t.illegal) {
      post(proto::Error{proto::ErrorCode::ProtocolViolation,
                        std::string(event) + " not allowed in " + proto::to_string(before)});
      continue;
    }
    perform(a, input);
  }
}

void Connection::perform(Action action, const ReceiverInput& cause) {
  switch (action) {
    case Action::SendChallenge:
      post(keys_.challenge());
      return expect("the sender's Proof", context_.options.timeout);
    case Action::SendAccept:
      return send_accept(data_for<Action::SendAccept>(cause));
    case Action::SendReject:
      return send_reject(data_for<Action::SendReject>(cause));
    case Action::CheckOffer:
      return entries_.check_offer(data_for<Action::CheckOffer>(cause));
    case Action::SendTake:
      return entries_.take(data_for<Action::SendTake>(cause).entry, false);
    case Action::SendResume:
      return entries_.take(data_for<Action::SendResume>(cause).entry, true);
    case Action::SendHave:
      return entries_.have(data_for<Action::SendHave>(cause).entry);
    case Action::SendHolds:
      return entries_.hold(data_for<Action::SendHolds>(cause));
    case Action::CheckContinue:
      return entries_.check_continue(data_for<Action::CheckContinue>(cause));
    case Action::AbandonEntry:
      return entries_.abandon(data_for<Action::AbandonEntry>(cause));
    case Action::CheckJoin:
      return entries_.check_join(data_for<Action::CheckJoin>(cause));
    case Action::SendRefuse:
      return entries_.refuse(data_for<Action::SendRefuse>(cause));
    case Action::StoreChunk:
      return entries_.store_chunk(data_for<Action::StoreChunk>(cause));
    case Action::SendCredit:
      return entries_.credit(data_for<Action::SendCredit>(cause));
    case Action::TakeFileDone:
      return entries_.take_file_done(data_for<Action::TakeFileDone>(cause));
    case Action::FinishEntries:
      return entries_.finish();
    case Action::SendFileVerdict:
      return entries_.send_verdict(data_for<Action::SendFileVerdict>(cause));
    case Action::SendSecret:
      return send_secret();
    case Action::SendDenied:
      // Not a warning: an id that is not in the secrets file is the normal way to be denied.
      spdlog::info("[{}] denied an id ({} of {} attempts)", label(), id_attempts_, kMaxIdAttempts);
      expect("Id or Bye", context_.options.timeout);
      return post(proto::Denied{static_cast<std::uint16_t>(kMaxIdAttempts - id_attempts_)});
    case Action::SendError: {
      const auto& abort = data_for<Action::SendError>(cause);
      return post(proto::Error{abort.code, abort.text.substr(0, proto::kMaxTextBytes)});
    }
    case Action::DiscardFile:
      return entries_.discard_files(data_bad_);
    case Action::Disconnect:
      // A backstop: stores that finish later are not answered outside InSession, and the
      // closed ledger grants no slot either (a Credit would grant memory to a connection
      // that is ending).
      entries_.ledger().close();
      return begin_disconnect();
    case Action::Release:
      return release();
  }
}

// The checks of an Open (protocol/receiver_rules.hpp); nothing is taken before it passes
// them (SendAccept takes the window).
template <proto::ReceiverEvent Checked>
void Connection::check_open(const proto::Open& open) {
  const auto& o = context_.options;
  auto reject = [&](proto::RejectReason reason, std::string text) {
    dispatch(input<Checked, proto::OpenCheck::Rejected>(Input::Rejection{reason, std::move(text)}));
  };
  terms_ = edge_.terms();
  const char* message = terms_.first_message;
  const proto::ExtensionsRead extensions = proto::read_extensions(open.extensions, message);
  if (extensions.refusal) return reject(extensions.refusal->reason, extensions.refusal->text);
  for (std::uint16_t type : extensions.ignored)
    spdlog::debug("[{}] ignoring {} extension 0x{:04x}", label(), message, type);
  // --senders: nothing is granted before the sender proves a key (PROTOCOL.md 7.8).
  if (keys_.required()) {
    if (terms_.keyless_refusal) {
      context_.metrics.count(SenderRefusal::NoKey);
      return reject(*terms_.keyless_refusal, terms_.keyless_text);
    }
    if (!keys_.claim(open)) {
      context_.metrics.count(SenderRefusal::NoKey);
      spdlog::warn("[{}] refused a sender without a key (--senders requires one)", label());
      return reject(proto::RejectReason::AuthRequired,
                    "this receiver admits only senders with a key (rdma-send --key-file)");
    }
    if (o.require_seal && !proto::asks_to_seal(open)) {
      spdlog::warn("[{}] refused a keyed sender that does not seal (--allow-clear would serve it)",
                   label());
      context_.metrics.count(SenderRefusal::SealRequired);
      return reject(proto::RejectReason::SealRequired,
                    "this receiver requires sealing: send without --no-seal");
    }
    return dispatch(input<Checked, proto::OpenCheck::NeedsProof>());
  }
  const proto::Window window = proto::window_for_session(open, o.slot_size, o.slots);
  if (auto refusal = proto::check_memory(context_.window_bytes_in_use, window, o.max_memory))
    return reject(refusal->reason, refusal->text);
  dispatch(input<Checked, proto::OpenCheck::Accepted>(
      Input::AcceptedOpen{open, window.slots, window.bytes, extensions}));
}

void Connection::send_accept(const ReceiverInput::AcceptedOpen& accepted) {
  const auto& o = context_.options;
  // Ours first: the sender sends nothing before it has checked it. Everything after it is
  // sealed where the Open asked (PROTOCOL.md 7.11), the Accept first.
  if (keys_.receiver_proof()) post(proto::Proof{*keys_.receiver_proof()});
  if (const auto& keys = keys_.seal_keys())
    sealed_.seal_from_now(MessageSeal(keys->messages_to_sender, keys->messages_to_receiver));
  open_ = accepted.open;
  // The memory is the process's own until a file is taken: then it is registered, and only
  // then does any key exist.
  window_.allocate(*transport(), accepted.slots, o.slot_size, accepted.window_bytes);
  const auto& seal = keys_.seal_keys();
  entries_.start(accepted, terms_, keys_.subdir(), seal ? &seal->chunks : proven_chunk_key_,
                 keys_.proven_id());
  if (open_.entry_count > 1)
    spdlog::info("[{}] session of {} entries ({}), {}", label(), open_.entry_count,
                 proto::format_size(open_.total_bytes), proto::to_string(open_.digest_algorithm));
  // One file may come over this and the other connections of the sender's group (7.12).
  if (entries_.stripes()) post(proto::Stripes{proto::kMaxStripeMembers});
  post(proto::Accept{window_.address(), 0, o.slot_size, accepted.slots});
  entries_.expect_next();
}

void Connection::send_reject(const ReceiverInput::Rejection& rejection) {
  spdlog::warn("[{}] rejected {}: {} {}", label(), terms_.what, proto::to_string(rejection.reason),
               rejection.text);
  post(proto::Reject{rejection.reason, rejection.text});
}

void Connection::lookup_id(const proto::Id& id, proto::SessionEnd entries) {
  ++id_attempts_;
  spdlog::info("[{}] id '{}' offered", label(), proto::escape_for_log(id.id));
  if (context_.secrets != nullptr) {
    if (auto secret = context_.secrets->lookup(id.id)) {
      secret_ = std::move(*secret);
      return dispatch(input<Event::GotId>(proto::IdLookup::Known, entries));
    }
  }
  dispatch(input<Event::GotId>(id_attempts_ >= kMaxIdAttempts ? proto::IdLookup::AttemptsExhausted
                                                              : proto::IdLookup::Unknown,
                               entries));
}

void Connection::send_secret() {
  // The Secret owns the only copy from here, and is wiped as soon as it is encoded (the
  // send buffer is wiped when the SEND completes).
  proto::Message message = proto::Secret{std::move(secret_)};
  secret_.clear();
  auto& text = std::get<proto::Secret>(message).secret;
  struct Wipe {
    std::string& s;
    ~Wipe() { proto::secure_wipe(s.data(), s.size()); }
  } wipe{text};
  post(message);
  spdlog::info("[{}] gave the secret for the id", label());
}

void Connection::release() {
  // Nothing more lands in the window or leaves this side; the daemon destroys the
  // connection, then its transport (QP, MRs, CQ, PD, cm_id), once no job uses them. A
  // temporary still there (a step on the way out failed before DiscardFile) goes too.
  release_transport();
  entries_.discard_files(data_bad_);
  spdlog::debug("[{}] connection released", label());
}

void Connection::on_message(Inbound inbound) {
  if (closed()) return;
  if (version() == 0) {
    if (auto* f = std::get_if<proto::DecodeFailure>(&inbound.decoded);
        f != nullptr && f->error == proto::DecodeError::BadVersion) {
      // A peer speaking another version gets a Reject it can understand, in version 1
      // (the header's magic and version never move): not an Error.
      set_version(proto::kVersion1);
      return dispatch(input<Event::GotOpen, proto::OpenCheck::Rejected>(
          Input::Rejection{proto::RejectReason::UnsupportedVersion,
                           "this receiver speaks protocol versions 1 and 2, not " +
                               std::to_string(inbound.version)}));
    }
    set_version(inbound.version != 0 ? inbound.version : proto::kVersion1);
  }
  if (auto* failure = std::get_if<proto::DecodeFailure>(&inbound.decoded)) {
    spdlog::warn("[{}] malformed message: {} ({})", label(), proto::to_string(failure->error),
                 failure->detail);
    return dispatch(input<Event::ProtocolViolation>(
        Input::Abort{proto::ErrorCode::ProtocolViolation,
                     std::string("malformed message: ") + proto::to_string(failure->error)}));
  }
  if (inbound.version != version()) {
    spdlog::warn("[{}] a version-{} message on a version-{} connection", label(), inbound.version,
                 version());
    return dispatch(input<Event::ProtocolViolation>(Input::Abort{
        proto::ErrorCode::ProtocolViolation, "message version differs from the connection's"}));
  }
  auto& message = std::get<proto::Message>(inbound.decoded);
  // An Open, a Proof and an Id are checked as they arrive, where they may come: the machine
  // gets what was found with the event. Elsewhere they go unchecked, and the machine finds
  // them out of place.
  // A fetcher's first message (PROTOCOL.md 7.13): this side takes pushes. Where an Open
  // would be checked, the Error that refuses it says so in words (as a receiver of a release
  // before fetching refuses the unknown type, with no words).
  if (std::holds_alternative<proto::Fetch>(message) &&
      proto::receiver_checks(state_, Event::GotOpen))
    return dispatch(input<Event::ProtocolViolation>(Input::Abort{
        proto::ErrorCode::ProtocolViolation,
        "this is a receiver (rdma-recv): it takes what rdma-send pushes; to fetch, connect to "
        "rdma-send --serve"}));
  if (auto* open = std::get_if<proto::Open>(&message)) {
    if (!proto::receiver_checks(state_, Event::GotOpen)) return dispatch(input<Event::GotOpen>());
    return check_open<Event::GotOpen>(*open);
  }
  if (auto* proof = std::get_if<proto::Proof>(&message)) {
    if (!proto::receiver_checks(state_, Event::GotProof)) return dispatch(input<Event::GotProof>());
    if (!keys_.check(*proof, label())) {
      context_.metrics.count(SenderRefusal::WrongKey);
      return dispatch(input<Event::GotProof, proto::OpenCheck::Rejected>(Input::Rejection{
          proto::RejectReason::AuthFailed, "authentication failed: unknown id or wrong key"}));
    }
    return check_open<Event::GotProof>(keys_.claimed_open());  // the rest: memory
  }
  // (What the session's terms allow of an Offer, a Continue or a FileAbort, the digest at the
  // end among them, is the entries' to judge: receiver/incoming_entries.cpp.)
  auto* offer = std::get_if<proto::Offer>(&message);
  auto* done = std::get_if<proto::FileDone>(&message);
  const char* rule_broken = nullptr;
  // On a sealed connection every FileChunk carries its chunk's seal, and only there (7.11);
  // and no two chunks of a connection were sealed under one counter.
  if (const auto* chunk = std::get_if<proto::FileChunk>(&message); chunk != nullptr) {
    // (A fetch's connection is sealed below this driver, by its intake: 7.13.)
    const bool sealed = sealed_.sealing() || proven_chunk_key_ != nullptr;
    if (chunk->seal.has_value() != sealed)
      rule_broken = sealed ? "a FileChunk without its seal on a sealed connection"
                           : "a FileChunk with a seal on a connection in clear";
    else if (chunk->seal && !chunk_counters_.take(chunk->seal->counter))
      rule_broken = "a FileChunk sealed under a counter used before (a reused nonce)";
  }
  if (rule_broken != nullptr) {
    spdlog::warn("[{}] protocol violation: {}", label(), rule_broken);
    return dispatch(input<Event::ProtocolViolation>(
        Input::Abort{proto::ErrorCode::ProtocolViolation, rule_broken}));
  }
  if (auto* next = std::get_if<proto::Continue>(&message))
    return dispatch(input<Event::GotContinue>(*next));
  if (auto* abort = std::get_if<proto::FileAbort>(&message))
    return dispatch(input<Event::GotFileAbort>(*abort));
  if (auto* join = std::get_if<proto::Join>(&message))
    return dispatch(input<Event::GotJoin>(*join));
  if (offer != nullptr) return dispatch(input<Event::GotOffer>(std::move(*offer)));
  if (auto* chunk = std::get_if<proto::FileChunk>(&message))
    return dispatch(input<Event::GotChunk>(*chunk));
  if (done != nullptr) return dispatch(input<Event::GotFileDone>(*done));
  // An Id or a Bye comes with where the entries stand: the table says whether it may end the
  // session now.
  if (auto* id_message = std::get_if<proto::Id>(&message)) {
    const proto::SessionEnd entries = entries_.session_end();
    if (!proto::receiver_checks(state_, Event::GotId, {.entries = entries}))
      return dispatch(input<Event::GotId>(proto::IdLookup::NotLookedUp, entries));
    return lookup_id(*id_message, entries);
  }
  if (std::holds_alternative<proto::Bye>(message))
    return dispatch(input<Event::GotBye>(proto::IdLookup::NotLookedUp, entries_.session_end()));
  if (auto* error = std::get_if<proto::Error>(&message)) {
    spdlog::warn("[{}] sender aborted: {} {}", label(), proto::to_string(error->code),
                 proto::escape_for_log(error->text));
    if (!cut_) cut_ = SessionCut{true, error->code};
    return dispatch(input<Event::GotError>());
  }
  dispatch(input<Event::GotUnexpected>());  // a Hello, a Chunk, a message only a receiver sends
}

void Connection::on_sent(std::uint64_t) {}

void Connection::on_transport_failure(const std::string& why) {
  if (state_ != State::Closing && !closed())
    spdlog::warn("[{}] {} (while waiting for {})", label(), why, waiting_for());
  dispatch(input<Event::TransportFailed>());
}

void Connection::on_peer_disconnected() {
  if (closed()) return;
  // A sender that leaves before its Open offered nothing to lose (rdma-send --check does
  // exactly that): worth a line, not a warning.
  if (state_ == State::AwaitOpen)
    spdlog::info("[{}] sender left before offering a file", label());
  else if (state_ == State::Authenticating)
    keys_.failed("it left without a Proof", label());
  else if (state_ != State::Closing)
    spdlog::warn("[{}] sender disconnected while waiting for {}", label(), waiting_for());
  dispatch(input<Event::Disconnected>());
}

void Connection::on_timeout(Clock::time_point now) {
  if (closed()) return;
  // A stripe group waits as one (PROTOCOL.md 7.12): the sender holds the lead's directories
  // and its end, and a member's next Join, until the group's other connections are done,
  // however long their files take. While one of them moves, this one waits on.
  if (state_ == State::InSession) {
    if (const auto moving = entries_.group_moving_until(); moving && *moving > now) {
      spdlog::debug("[{}] waiting for {}: another connection of its stripe group is busy", label(),
                    waiting_for());
      return expect_until(waiting_for(), std::min(*moving, now + context_.options.timeout));
    }
  }
  if (state_ == State::Authenticating) keys_.failed("no Proof came", label());
  if (state_ != State::Closing)
    spdlog::warn("[{}] timed out waiting for {}", label(), waiting_for());
  dispatch(input<Event::Timeout>(Input::Abort{
      proto::ErrorCode::Timeout, std::string("receiver timed out waiting for ") + waiting_for()}));
}

void Connection::on_local_failure(const std::string&) {
  dispatch(input<Event::LocalFailure>(
      Input::Abort{proto::ErrorCode::Internal, "the receiver failed; see its log"}));
}

void Connection::on_transport_lost(const std::string&) {
  dispatch(input<Event::TransportFailed>());
}

void Connection::tick(Clock::time_point now) {
  on_tick(now);
  guarded([&] { entries_.reap_retired(state_ == State::InSession); });
  // Keep a waiting version-2 sender informed: it restarts its timeout on every message.
  if (version() != proto::kVersion2 || open_.keepalive_ms == 0 ||
      !proto::receiver_owes_keepalive(state_))
    return;
  if (now - last_sent() < std::chrono::milliseconds(open_.keepalive_ms)) return;
  // Every entry settled: the sender owes the next word (more Offers, an Id or a Bye).
  if (state_ == State::InSession && entries_.ledger().all_settled()) return;
  guarded([&] { post(entries_.working()); });
}

void Connection::shut_down() {
  if (closed() || state_ == State::Closing) return;
  // A commit under way finishes (it cannot be called back) and its verdict goes out first:
  // otherwise the file could appear after the sender was told the receiver stopped.
  if (entries_.committing()) {
    shutdown_after_commit_ = true;
    return;
  }
  guarded([&] {
    dispatch(input<Event::ShuttingDown>(
        Input::Abort{proto::ErrorCode::ShuttingDown, "receiver shutting down"}));
  });
}

void Connection::abandon() {
  release_transport();
  entries_.discard_files(data_bad_);
}

void Connection::on_cm_failure(const std::string& what) {
  // rdma_cm ended the connection itself (an error, a rejection, the device gone): there
  // is nothing left to disconnect, unlike a completion error.
  mark_transport_gone();
  guarded([&] {
    if (state_ != State::Closing && !closed())
      spdlog::warn("[{}] {} (while waiting for {})", label(), what, waiting_for());
    dispatch(input<Event::Disconnected>());
  });
}

}  // namespace rdmax::receiver
