#include "receiver/connection.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "protocol/names.hpp"
#include "protocol/receiver_rules.hpp"
#include "protocol/secure_wipe.hpp"
#include "protocol/sizes.hpp"
#include "receiver/output_tree.hpp"

namespace rdmax::receiver {

namespace {
using proto::ReceiverState;
using Input = ReceiverInput;
constexpr unsigned kMaxIdAttempts = 3;

template <typename T>
const T* data_of(const ReceiverInput& input) {
  return std::get_if<T>(&input.data);
}
}  // namespace

Connection::Connection(Transport& transport, std::string peer, ReceiverContext& context)
    : DriverCore(std::move(peer)), context_(context) {
  attach(transport);
  expect("Hello", context_.options.timeout);
}

Connection::~Connection() {
  context_.window_bytes_in_use -= window_charge_;
  proto::secure_wipe(secret_.data(), secret_.size());
}

bool Connection::idle() const {
  return (!file_ || file_->idle()) && session_idle();
}

void Connection::dispatch(ReceiverInput input) {
  dispatcher_.dispatch(std::move(input), [this](const ReceiverInput& next) { step(next); });
}

void Connection::step(const ReceiverInput& input) {
  const auto t = proto::receiver_next(state_, input.event);
  if (t.error == proto::ReceiverError::IllegalEvent) {
    spdlog::warn("[{}] protocol violation: {} in state {}", label(), proto::to_string(input.event),
                 proto::to_string(state_));
  }
  spdlog::trace("[{}] {} --{}--> {}", label(), proto::to_string(state_),
                proto::to_string(input.event), proto::to_string(t.next));
  const State before = state_;
  state_ = t.next;
  // A sender that breaks the rules loses what it stored: nothing of it is kept to resume.
  if (t.error == proto::ReceiverError::IllegalEvent || input.event == Event::ProtocolViolation)
    data_bad_ = true;
  for (Action a : t.actions) {
    if (a == Action::SendError && t.error == proto::ReceiverError::IllegalEvent) {
      post(proto::Error{proto::ErrorCode::ProtocolViolation,
                        std::string(proto::to_string(input.event)) + " not allowed in " +
                            proto::to_string(before)});
      continue;
    }
    perform(a, input);
  }
}

void Connection::perform(Action action, const ReceiverInput& cause) {
  switch (action) {
    case Action::CheckHello:
      check_hello(cause);
      break;
    case Action::SendAccept:
      send_accept();
      break;
    case Action::SendReject: {
      const auto* r = data_of<Input::Rejection>(cause);
      const Input::Rejection rejection =
          r != nullptr ? *r : Input::Rejection{proto::RejectReason::Internal, "rejected"};
      spdlog::warn(
          "[{}] rejected {}: {} {}", label(),
          session_ ? std::string("a session") : "'" + proto::escape_for_log(hello_.name) + "'",
          proto::to_string(rejection.reason), rejection.text);
      post(proto::Reject{rejection.reason, rejection.text});
      break;
    }
    case Action::StoreChunk:
      if (session_)
        store_session_chunk(std::get<proto::FileChunk>(cause.data));
      else
        store_chunk(std::get<proto::Chunk>(cause.data));
      break;
    case Action::SendCredit:
      if (session_)
        send_session_credit(std::get<Input::StoredSlot>(cause.data));
      else
        send_credit(std::get<Input::StoredSlot>(cause.data).slot);
      break;
    case Action::AwaitDrain:
      await_drain(cause);
      break;
    case Action::Verify:
      verify();
      break;
    case Action::SendVerdict:
      if (const auto* v = data_of<Input::Verdict>(cause)) verdict_ = v->code;
      log_transfer_end(proto::to_string(verdict_));
      expect("Id or Bye", context_.options.timeout);
      post(proto::Verdict{verdict_, computed_});
      break;
    case Action::LookupId:
      lookup_id(std::get<proto::Id>(cause.data));
      break;
    case Action::SendSecret: {
      // The Secret owns the only copy from here, and is wiped as soon as it is encoded
      // (the send buffer is wiped when the SEND completes).
      proto::Message message = proto::Secret{std::move(secret_)};
      secret_.clear();
      auto& text = std::get<proto::Secret>(message).secret;
      struct Wipe {
        std::string& s;
        ~Wipe() { proto::secure_wipe(s.data(), s.size()); }
      } wipe{text};
      post(message);
      spdlog::info("[{}] gave the secret for the id", label());
      break;
    }
    case Action::SendDenied:
      // Not a warning: an id that is not in the secrets file is the normal way to be denied.
      spdlog::info("[{}] denied an id ({} of {} attempts)", label(), id_attempts_, kMaxIdAttempts);
      expect("Id or Bye", context_.options.timeout);
      post(proto::Denied{static_cast<std::uint16_t>(kMaxIdAttempts - id_attempts_)});
      break;
    case Action::SendError:
      send_error(cause);
      break;
    case Action::DiscardFile:
      discard_file();
      break;
    case Action::Disconnect:
      begin_disconnect();
      break;
    case Action::Release:
      release();
      break;
    case Action::CheckOpen:
      check_open(cause);
      break;
    case Action::CheckOffer:
      check_offer(std::get<proto::Offer>(cause.data));
      break;
    case Action::SendTake:
      send_take(std::get<Input::EntryTaken>(cause.data).entry);
      break;
    case Action::SendRefuse:
      send_refuse(std::get<Input::EntryRefusal>(cause.data));
      break;
    case Action::FinishEntries:
      finish_entries(cause);
      break;
    case Action::SendFileVerdict:
      send_file_verdict(std::get<Input::EntryVerdict>(cause.data));
      break;
    case Action::SendResume:
      send_resume(std::get<Input::EntryTaken>(cause.data).entry);
      break;
    case Action::SendHave:
      if (session_)
        send_session_have(std::get<Input::EntryTaken>(cause.data).entry);
      else
        send_have();
      break;
  }
}

void Connection::check_hello(const ReceiverInput& cause) {
  const auto& o = context_.options;
  auto reject = [&](proto::RejectReason reason, std::string text) {
    dispatch({Event::HelloRejected, Input::Rejection{reason, std::move(text)}});
  };
  if (const auto* foreign = data_of<Input::ForeignVersion>(cause)) {
    return reject(
        proto::RejectReason::UnsupportedVersion,
        "this receiver speaks protocol versions 1 and 2, not " + std::to_string(foreign->version));
  }
  hello_ = std::get<proto::Hello>(cause.data);
  const proto::ExtensionsRead extensions = proto::read_extensions(hello_.extensions, "Hello");
  if (extensions.refusal) return reject(extensions.refusal->reason, extensions.refusal->text);
  resume_understood_ = extensions.resume_understood;
  for (std::uint16_t type : extensions.ignored)
    spdlog::debug("[{}] ignoring Hello extension 0x{:04x}", label(), type);
  // Cheap checks first (protocol/receiver_rules.hpp): nothing is created for an offer that
  // fails them.
  if (auto refusal = proto::check_hello_file(hello_, o.max_size))
    return reject(refusal->reason, refusal->text);
  const proto::Window window = proto::window_for_file(hello_.file_size, o.slot_size, o.slots);
  if (auto refusal = proto::check_memory(context_.window_bytes_in_use, window, o.max_memory))
    return reject(refusal->reason, refusal->text);
  slot_count_ = window.slots;
  context_.window_bytes_in_use += window.bytes;
  window_charge_ = window.bytes;
  ledger_ = proto::ReceiveLedger(hello_.file_size, o.slot_size, slot_count_);
  // Creating (and preallocating) the file is disk work: the pool does it. The window is
  // pinned only for an offer that passed every check.
  expect_own_work("the file to be created");
  file_.emplace(context_.pool, context_.dir_fd, hello_.name, o.overwrite, hello_.digest_algorithm);
  if (resume_understood_) file_->set_resume({context_.partials, hello_.digest, o.slot_size, true});
  file_->create(hello_.file_size, context_.space, [this](const IncomingFile::Outcome& outcome) {
    guarded([&] {
      if (state_ != State::CheckingHello) return;  // abandoned meanwhile
      using Kind = IncomingFile::Outcome::Kind;
      switch (outcome.kind) {
        case Kind::Ok:
          if (!register_window()) {
            return dispatch({Event::HelloRejected, Input::Rejection{proto::RejectReason::NoMemory,
                                                                    "cannot register memory"}});
          }
          if (file_->resumed_from() > 0) {
            ledger_ = proto::ReceiveLedger(hello_.file_size, context_.options.slot_size,
                                           slot_count_, file_->resumed_from());
            spdlog::info("[{}] resuming '{}' ({}) at {}", label(),
                         proto::escape_for_log(hello_.name), proto::format_size(hello_.file_size),
                         proto::format_size(file_->resumed_from()));
          } else {
            spdlog::info("[{}] receiving '{}' ({})", label(), proto::escape_for_log(hello_.name),
                         proto::format_size(hello_.file_size));
          }
          return dispatch({Event::HelloAccepted, {}});
        case Kind::Have:
          return dispatch({Event::HelloHave, {}});
        case Kind::Exists:
          return dispatch({Event::HelloRejected, Input::Rejection{proto::RejectReason::Exists,
                                                                  "a file of that name exists"}});
        case Kind::NoSpace:
          return dispatch({Event::HelloRejected, Input::Rejection{proto::RejectReason::NoSpace,
                                                                  "not enough free space"}});
        case Kind::BadPath:
          return dispatch({Event::HelloRejected,
                           Input::Rejection{proto::RejectReason::BadName, outcome.error}});
        case Kind::Failed:
          spdlog::error("[{}] cannot create a file for '{}': {}", label(),
                        proto::escape_for_log(hello_.name), outcome.error);
          return dispatch({Event::HelloRejected, Input::Rejection{proto::RejectReason::Internal,
                                                                  "cannot create the file"}});
      }
    });
  });
}

bool Connection::register_window() {
  if (window_charge_ == 0) return true;  // an empty file: no window
  try {
    window_ = transport()->allocate(static_cast<std::size_t>(window_charge_));
    slot_keys_.resize(slot_count_);
    for (std::uint32_t slot = 0; slot < slot_count_; ++slot) register_slot(slot);
    return true;
  } catch (const std::exception& e) {
    spdlog::error("[{}] cannot register the receive window: {}", label(), e.what());
    for (std::uint32_t slot = 0; slot < slot_keys_.size(); ++slot) revoke_slot(slot);
    return false;
  }
}

void Connection::send_accept() {
  data_started_ = Clock::now();
  if (session_) {
    post(proto::Accept{reinterpret_cast<std::uintptr_t>(window_.data()), 0,
                       context_.options.slot_size, slot_count_});
    for (std::uint32_t slot = 0; slot < slot_keys_.size(); ++slot) {
      if (!session_ledger_.grant(slot)) break;  // nothing to receive: no credit
      post(proto::Credit{slot, slot_keys_[slot]->rkey});
    }
    return expect_session();
  }
  expect("data", context_.options.timeout);
  // RC order puts it before the Accept, where the sender looks for it (PROTOCOL.md 7.6).
  if (file_ && file_->resumed_from() > 0) post(proto::Resume{0, file_->resumed_from()});
  post(proto::Accept{reinterpret_cast<std::uintptr_t>(window_.data()), 0,
                     context_.options.slot_size, slot_count_});
  // Each slot's key travels in its own Credit, so each can be revoked on its own. An empty
  // file has no chunk, hence no credit.
  if (ledger_.plan().chunk_count() == 0) return;
  for (std::uint32_t slot = 0; slot < slot_count_; ++slot) {
    if (!ledger_.grant(slot)) throw std::logic_error("slot granted twice");
    post(proto::Credit{slot, slot_keys_[slot]->rkey});
  }
}

void Connection::store_chunk(const proto::Chunk& c) {
  if (auto error = ledger_.accept_chunk(c)) {
    spdlog::warn("[{}] bad chunk: offset {} length {} slot {} (expected offset {}): {}", label(),
                 c.offset, c.length, c.slot, ledger_.received(), proto::to_string(*error));
    return dispatch(
        {Event::ProtocolViolation,
         Input::Abort{proto::ErrorCode::ProtocolViolation,
                      std::string("chunk breaks the data rules: ") + proto::to_string(*error)}});
  }
  // Revoke the slot's key before anyone reads it. RC delivers in order, so the WRITE that
  // filled this slot completed before its Chunk arrived: nothing legitimate is still
  // landing, and from here a write with that key fails at the writer.
  revoke_slot(c.slot);
  context_.bytes_received += c.length;
  expect_data();
  file_->store(c.slot, c.offset, slot_bytes(c.slot).first(c.length),
               [this](const IncomingFile::Stored& stored) { guarded([&] { on_stored(stored); }); });
}

void Connection::on_stored(const IncomingFile::Stored& stored) {
  if (state_ != State::Receiving && state_ != State::Draining) return;
  if (!stored.outcome.ok()) {
    spdlog::error("[{}] cannot write '{}': {}", label(), proto::escape_for_log(hello_.name),
                  stored.outcome.error);
    return dispatch({Event::VerifiedBad, Input::Verdict{proto::VerdictCode::StorageError}});
  }
  dispatch({Event::ChunkStored, Input::StoredSlot{stored.slot}});
}

void Connection::send_credit(std::uint32_t slot) {
  // Once every byte has arrived no slot is handed back (docs/PROTOCOL.md 5.4); the wait
  // is for the sender's Done then.
  if (!ledger_.stored(slot)) return expect_data();
  register_slot(slot);  // a fresh registration, hence a fresh key
  if (!ledger_.grant(slot)) throw std::logic_error("slot granted twice");
  post(proto::Credit{slot, slot_keys_[slot]->rkey});
  expect_data();
}

void Connection::await_drain(const ReceiverInput& cause) {
  if (const auto* done = data_of<proto::Done>(cause)) {
    done_total_ = done->total_bytes;
    // The data phase is over: no key for this window works from now on. (The slots of the
    // chunks still being stored were revoked when their Chunk arrived.)
    ledger_.close();
    for (std::uint32_t slot = 0; slot < slot_keys_.size(); ++slot) revoke_slot(slot);
  } else if (const auto* stored = data_of<Input::StoredSlot>(cause)) {
    ledger_.stored(stored->slot);  // false: the ledger is closed, nothing is credited again
  }
  if (ledger_.storing() > 0) {
    expect_own_work("the last chunks to be stored");
    return;  // asked again at each ChunkStored
  }
  dispatch({Event::Drained, {}});
}

void Connection::verify() {
  computed_ = file_->finish_hash();
  using Code = proto::VerdictCode;
  // What is wrong with the data itself is never kept for a resume.
  // received() counts the bytes before a Resume offset too (the ledger starts there).
  if (ledger_.received() != hello_.file_size || done_total_ != ledger_.received()) {
    data_bad_ = true;
    return dispatch({Event::VerifiedBad, Input::Verdict{Code::SizeMismatch}});
  }
  if (computed_ != hello_.digest) {
    data_bad_ = true;
    return dispatch({Event::VerifiedBad, Input::Verdict{Code::HashMismatch}});
  }
  // fsync, then rename into place: only then may the verdict say Good. On the pool.
  expect_own_work("the file to be committed");
  committing_ = true;
  file_->commit([this](const IncomingFile::Outcome& outcome) {
    committing_ = false;
    if (outcome.ok()) ++context_.files_stored;
    guarded([&] {
      if (state_ != State::Verifying) {
        // The connection was lost meanwhile: a running fsync and rename cannot be called
        // back, so the file may be in place with no verdict sent (PROTOCOL.md 5.5).
        if (outcome.ok())
          spdlog::warn("[{}] '{}' was committed, but the sender was gone before its verdict",
                       label(), proto::escape_for_log(hello_.name));
        return;
      }
      if (outcome.ok()) {
        dispatch({Event::VerifiedGood, Input::Verdict{Code::Good}});
      } else {
        spdlog::error("[{}] cannot store '{}': {}", label(), proto::escape_for_log(hello_.name),
                      outcome.error);
        data_bad_ = true;
        dispatch({Event::VerifiedBad, Input::Verdict{Code::StorageError}});
      }
      // A shutdown asked for during the commit: the sender has its verdict first.
      if (shutdown_after_commit_) shut_down();
    });
  });
}

void Connection::lookup_id(const proto::Id& id) {
  ++id_attempts_;
  spdlog::info("[{}] id '{}' offered", label(), proto::escape_for_log(id.id));
  if (context_.secrets != nullptr) {
    if (auto secret = context_.secrets->lookup(id.id)) {
      secret_ = std::move(*secret);
      return dispatch({Event::IdKnown, {}});
    }
  }
  dispatch({id_attempts_ >= kMaxIdAttempts ? Event::IdAttemptsExhausted : Event::IdUnknown, {}});
}

void Connection::send_error(const ReceiverInput& cause) {
  const auto* abort = data_of<Input::Abort>(cause);
  const Input::Abort reason =
      abort != nullptr ? *abort : Input::Abort{proto::ErrorCode::Internal, "receiver failure"};
  post(proto::Error{reason.code, reason.text.substr(0, proto::kMaxTextBytes)});
}

void Connection::discard_file() {
  if (session_) return discard_session_files();
  if (!file_ || file_->committed()) return;
  // Jobs not started are dropped; the temporary goes once the running one is done, unless
  // the transfer was interrupted: then what was stored is kept for a resume.
  if (data_bad_)
    file_->discard();
  else
    file_->keep();
  // An offer rejected before Accept has no transfer to report; a commit under way reports
  // itself when it is done.
  if (!logged_end_ && data_started_ != Clock::time_point{} && !committing_)
    log_transfer_end(nullptr);
}

void Connection::release() {
  // Nothing more lands in the window or leaves this side; the daemon destroys the
  // connection, then its transport (QP, MRs, CQ, PD, cm_id), once no job uses them. A
  // temporary still there (a step on the way out failed before DiscardFile) goes too.
  release_transport();
  discard_file();
  spdlog::debug("[{}] connection released", label());
}

void Connection::register_slot(std::uint32_t slot) {
  slot_keys_[slot] = transport()->register_memory(slot_bytes(slot), Access::RemoteWrite);
}

void Connection::revoke_slot(std::uint32_t slot) {
  if (!slot_keys_[slot]) return;
  transport()->deregister(*slot_keys_[slot]);
  slot_keys_[slot].reset();
}

std::span<std::uint8_t> Connection::slot_bytes(std::uint32_t slot) {
  const std::size_t size = context_.options.slot_size;
  return window_.subspan(static_cast<std::size_t>(slot) * size, size);
}

void Connection::expect_data() {
  // Every byte is here: the sender owes Done.
  if (ledger_.complete()) return expect("Done", context_.options.timeout);
  // While every slot's chunk is being stored the sender cannot send: the wait is on our
  // own disk, which must not time the sender out.
  for (std::uint32_t slot = 0; slot < ledger_.slot_count(); ++slot)
    if (ledger_.state(slot) == proto::ReceiveLedger::SlotState::Credited)
      return expect("data", context_.options.timeout);
  expect_own_work("chunks to be stored");
}

void Connection::log_transfer_end(const char* verdict) {
  if (logged_end_) return;
  logged_end_ = true;
  log_file_end(hello_.name, ledger_.received(), hello_.file_size, data_started_,
               hello_.digest_algorithm, computed_, verdict);
}

void Connection::log_file_end(const std::string& name, std::uint64_t received, std::uint64_t size,
                              Clock::time_point since, proto::DigestAlgorithm algorithm,
                              const Digest& computed, const char* verdict) const {
  const double seconds = std::chrono::duration<double>(Clock::now() - since).count();
  const double rate = seconds > 0 ? static_cast<double>(received) / seconds : 0;
  const std::string progress = fmt::format(
      "{} of {} in {:.2f}s ({}/s)", proto::format_size(received), proto::format_size(size), seconds,
      proto::format_size(static_cast<std::uint64_t>(rate)));
  // Abandoned: no digest was computed, and there is no verdict to name.
  if (verdict == nullptr) {
    spdlog::info("[{}] '{}': abandoned after {}", label(), proto::escape_for_log(name), progress);
    return;
  }
  spdlog::info("[{}] '{}': {}, {} {}, verdict {}", label(), proto::escape_for_log(name), progress,
               proto::to_string(algorithm), to_hex(computed), verdict);
}

void Connection::on_message(Inbound inbound) {
  if (closed()) return;
  if (version() == 0) {
    if (auto* f = std::get_if<proto::DecodeFailure>(&inbound.decoded);
        f != nullptr && f->error == proto::DecodeError::BadVersion) {
      // A peer speaking another version gets a Reject it can understand, in version 1
      // (the header's magic and version never move): not an Error.
      set_version(proto::kVersion1);
      return dispatch({Event::GotHello, Input::ForeignVersion{inbound.version}});
    }
    set_version(inbound.version != 0 ? inbound.version : proto::kVersion1);
  }
  if (auto* failure = std::get_if<proto::DecodeFailure>(&inbound.decoded)) {
    spdlog::warn("[{}] malformed message: {} ({})", label(), proto::to_string(failure->error),
                 failure->detail);
    return dispatch({Event::ProtocolViolation, Input::Abort{proto::ErrorCode::ProtocolViolation,
                                                            std::string("malformed message: ") +
                                                                proto::to_string(failure->error)}});
  }
  if (inbound.version != version()) {
    spdlog::warn("[{}] a version-{} message on a version-{} connection", label(), inbound.version,
                 version());
    return dispatch(
        {Event::ProtocolViolation, Input::Abort{proto::ErrorCode::ProtocolViolation,
                                                "message version differs from the connection's"}});
  }
  auto& message = std::get<proto::Message>(inbound.decoded);
  if (inbound.version >= proto::kVersion2 && proto::type_of(message) >= proto::MessageType::Open)
    return on_session_message(message);
  if (auto* hello = std::get_if<proto::Hello>(&message))
    return dispatch({Event::GotHello, std::move(*hello)});
  if (auto* chunk = std::get_if<proto::Chunk>(&message)) {
    // A session's data comes in FileChunks: a version-1 Chunk names no entry, and as GotChunk
    // (legal in InSession) StoreChunk would take it for a FileChunk and fail as our own
    // error (Error(Internal)) instead of the peer's.
    if (session_) return dispatch({Event::GotUnexpected, {}});
    return dispatch({Event::GotChunk, *chunk});
  }
  if (auto* done = std::get_if<proto::Done>(&message)) return dispatch({Event::GotDone, *done});
  const bool id_or_bye =
      std::holds_alternative<proto::Id>(message) || std::holds_alternative<proto::Bye>(message);
  if (session_ && state_ == State::InSession && id_or_bye) {
    if (auto problem = session_end_problem(std::holds_alternative<proto::Id>(message))) {
      spdlog::warn("[{}] protocol violation: {}", label(), *problem);
      return dispatch(
          {Event::ProtocolViolation, Input::Abort{proto::ErrorCode::ProtocolViolation, *problem}});
    }
  }
  if (auto* id = std::get_if<proto::Id>(&message)) return dispatch({Event::GotId, std::move(*id)});
  if (std::holds_alternative<proto::Bye>(message)) return dispatch({Event::GotBye, {}});
  if (auto* error = std::get_if<proto::Error>(&message)) {
    spdlog::warn("[{}] sender aborted: {} {}", label(), proto::to_string(error->code),
                 proto::escape_for_log(error->text));
    return dispatch({Event::GotError, {}});
  }
  dispatch({Event::GotUnexpected, {}});
}

void Connection::on_sent(std::uint64_t) {}

void Connection::on_transport_failure(const std::string& why) {
  if (state_ != State::Closing && !closed())
    spdlog::warn("[{}] {} (while waiting for {})", label(), why, waiting_for());
  dispatch({Event::TransportFailed, {}});
}

void Connection::on_peer_disconnected() {
  if (closed()) return;
  // A sender that leaves before its Hello offered nothing to lose (rdma-send --check does
  // exactly that): worth a line, not a warning.
  if (state_ == State::AwaitHello)
    spdlog::info("[{}] sender left before offering a file", label());
  else if (state_ != State::Closing)
    spdlog::warn("[{}] sender disconnected while waiting for {}", label(), waiting_for());
  dispatch({Event::Disconnected, {}});
}

void Connection::on_timeout() {
  if (closed()) return;
  if (state_ == State::Closing) return dispatch({Event::Timeout, {}});
  spdlog::warn("[{}] timed out waiting for {}", label(), waiting_for());
  dispatch({Event::Timeout,
            Input::Abort{proto::ErrorCode::Timeout,
                         std::string("receiver timed out waiting for ") + waiting_for()}});
}

void Connection::on_local_failure(const std::string&) {
  dispatch({Event::LocalFailure,
            Input::Abort{proto::ErrorCode::Internal, "the receiver failed; see its log"}});
}

void Connection::on_transport_lost(const std::string&) {
  dispatch({Event::TransportFailed, {}});
}

void Connection::tick(Clock::time_point now) {
  on_tick(now);
  if (session_) guarded([&] { reap_retired(); });
  // Keep a waiting version-2 sender informed: it restarts its timeout on every message.
  const std::uint32_t keepalive_ms = session_ ? open_.keepalive_ms : hello_.keepalive_ms;
  if (version() != proto::kVersion2 || keepalive_ms == 0 || !proto::receiver_owes_keepalive(state_))
    return;
  if (now - last_sent() < std::chrono::milliseconds(keepalive_ms)) return;
  const auto phase = state_ == State::CheckingHello || state_ == State::CheckingOpen
                         ? proto::WorkPhase::Preparing
                     : state_ == State::Verifying ? proto::WorkPhase::Committing
                                                  : proto::WorkPhase::Storing;
  const std::uint64_t stored = session_ ? session_bytes_ : file_ ? file_->bytes_stored() : 0;
  guarded([&] { post(proto::Working{phase, stored}); });
}

void Connection::shut_down() {
  if (closed() || state_ == State::Closing) return;
  // A commit under way finishes (it cannot be called back) and its verdict goes out first:
  // otherwise the file could appear after the sender was told the receiver stopped.
  if (committing()) {
    shutdown_after_commit_ = true;
    return;
  }
  guarded([&] {
    dispatch({Event::ShuttingDown,
              Input::Abort{proto::ErrorCode::ShuttingDown, "receiver shutting down"}});
  });
}

void Connection::abandon() {
  release_transport();
  discard_file();
}

void Connection::send_have() {
  spdlog::info("[{}] '{}' ({}) is here already: nothing to receive", label(),
               proto::escape_for_log(hello_.name), proto::format_size(hello_.file_size));
  computed_ = hello_.digest;
  verdict_ = proto::VerdictCode::Good;
  expect("Id or Bye", context_.options.timeout);
  post(proto::Have{0, hello_.digest});
}

void Connection::on_cm_failure(const std::string& what) {
  mark_transport_gone();
  guarded([&] { on_transport_failure(what); });
}

}  // namespace rdmax::receiver
