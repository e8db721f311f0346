#include "receiver/connection.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "common/error.hpp"
#include "common/rdma/connection_params.hpp"
#include "protocol/names.hpp"
#include "protocol/secure_wipe.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::receiver {

namespace {
using proto::ReceiverState;
constexpr unsigned kMaxIdAttempts = 3;
constexpr auto kCloseGrace = std::chrono::seconds(3);
constexpr std::uint32_t kSpareMessages = 8;  // Done, Id, Bye, Error, Verdict, ... beyond chunks
}  // namespace

Connection::Connection(std::uint64_t number, rdma_cm_id* id, ReceiverContext& context)
    : number_(number), context_(context), id_(CmId::adopt(id)) {
  id_.set_context(this);
  peer_ = id_.peer_address();
  const std::uint32_t depth = context_.options.slots + kSpareMessages;
  // Receives are posted here, before rdma_accept: the sender may send as soon as the
  // connection is established.
  endpoint_.emplace(id_, depth, depth, 0);
  expect("Hello", context_.options.timeout);
}

Connection::~Connection() {
  context_.window_bytes_in_use -= window_charge_;
}

void Connection::accept() {
  rdma_conn_param param = reliable_conn_param();
  id_.set_ack_timeout(kAckTimeoutExponent);
  id_.accept(param);
}

void Connection::expect(const char* what, std::chrono::seconds within) {
  waiting_for_ = what;
  deadline_ = Clock::now() + within;
}

void Connection::dispatch(Event event) {
  pending_.push_back(event);
  if (dispatching_) return;  // raised by an action: handled after the current ones
  dispatching_ = true;
  // An action that throws (a registration, a post) ends this dispatch; the daemon then
  // reports a transport failure, which must be dispatched, not queued behind a loop that
  // is no longer running. The events still queued belong to the failed step: drop them.
  struct Reset {
    Connection& c;
    ~Reset() {
      if (c.dispatching_) {
        c.dispatching_ = false;
        c.pending_.clear();
      }
    }
  } reset{*this};
  while (!pending_.empty()) {
    Event e = pending_.front();
    pending_.pop_front();
    auto t = proto::receiver_next(state_, e);
    if (t.error == proto::ReceiverError::IllegalEvent) {
      spdlog::warn("[{}] protocol violation: {} in state {}", peer_, proto::to_string(e),
                   proto::to_string(state_));
      error_code_ = proto::ErrorCode::ProtocolViolation;
      error_text_ =
          std::string(proto::to_string(e)) + " not allowed in " + proto::to_string(state_);
    }
    spdlog::trace("[{}] {} --{}--> {}", peer_, proto::to_string(state_), proto::to_string(e),
                  proto::to_string(t.next));
    state_ = t.next;
    for (Action a : t.actions) perform(a);
  }
  dispatching_ = false;
}

void Connection::perform(Action action) {
  switch (action) {
    case Action::CheckHello:
      pending_.push_back(check_hello());
      break;
    case Action::SendAccept:
      data_started_ = Clock::now();
      expect("data", context_.options.timeout);
      post(proto::Accept{reinterpret_cast<std::uintptr_t>(window_.data()), 0,
                         context_.options.slot_size, slot_count_});
      // Each slot's key travels in its own Credit: keys are per slot so that each can be
      // revoked on its own (see store_chunk).
      for (std::uint32_t slot = 0; slot < slot_mrs_.size(); ++slot)
        post(proto::Credit{slot, slot_mrs_[slot]->rkey()});
      break;
    case Action::SendReject:
      spdlog::warn("[{}] rejected '{}': {} {}", peer_, proto::escape_for_log(hello_.name),
                   proto::to_string(reject_reason_), reject_text_);
      post(proto::Reject{reject_reason_, reject_text_});
      break;
    case Action::StoreChunk:
      if (auto next = store_chunk()) pending_.push_back(*next);
      break;
    case Action::SendCredit:
      // Once every byte has arrived no slot is handed back (docs/PROTOCOL.md 5.4), even
      // if this chunk, stored on the worker, was queued before the last one arrived.
      if (received_ < hello_.file_size) {
        const auto t0 = Clock::now();
        register_slot(stored_.slot);  // a fresh registration, hence a fresh key
        costs_.rekey += Clock::now() - t0;
        post(proto::Credit{stored_.slot, slot_mrs_[stored_.slot]->rkey()});
      }
      break;
    case Action::AwaitDrain:
      if (auto next = await_drain()) pending_.push_back(*next);
      break;
    case Action::Verify:
      pending_.push_back(verify());
      break;
    case Action::SendVerdict:
      expect("Id or Bye", context_.options.timeout);
      post(proto::Verdict{verdict_, computed_});
      break;
    case Action::LookupId:
      pending_.push_back(lookup_id());
      break;
    case Action::SendSecret:
      post(proto::Secret{secret_});
      proto::secure_wipe(secret_.data(), secret_.size());
      secret_.clear();
      spdlog::info("[{}] gave the secret for id '{}'", peer_, proto::escape_for_log(offered_id_));
      break;
    case Action::SendDenied:
      spdlog::warn("[{}] denied id '{}' ({} of {} attempts)", peer_,
                   proto::escape_for_log(offered_id_), id_attempts_, kMaxIdAttempts);
      post(proto::Denied{static_cast<std::uint16_t>(kMaxIdAttempts - id_attempts_)});
      break;
    case Action::SendError:
      post(proto::Error{error_code_, error_text_.substr(0, proto::kMaxTextBytes)});
      break;
    case Action::DiscardFile:
      // The worker may be writing to the file: stop it first (it drops the chunks still
      // queued and finishes the one in progress).
      worker_.reset();
      if (file_ && !committed_) {
        file_->discard();
        file_.reset();
        if (!logged_end_) log_transfer_end("none (abandoned)");
      }
      break;
    case Action::Disconnect:
      expect("the disconnect", kCloseGrace);
      disconnect_pending_ = true;
      disconnect_when_drained();
      break;
    case Action::Release:
      // The QP goes to error so nothing more lands in the window; the daemon destroys
      // this connection (QP, MRs, CQ, PD, cm_id) once the current event is handled. The
      // worker goes first: it reads the slots and writes the file.
      worker_.reset();
      (void)id_.set_qp_error();
      slot_mrs_.clear();
      if (file_ && !committed_) file_->discard();
      spdlog::debug("[{}] connection released", peer_);
      break;
  }
}

proto::ReceiverEvent Connection::check_hello() {
  const auto& o = context_.options;
  auto reject = [&](proto::RejectReason reason, std::string text) {
    reject_reason_ = reason;
    reject_text_ = std::move(text);
    return Event::HelloRejected;
  };
  if (foreign_version_)
    return reject(proto::RejectReason::UnsupportedVersion,
                  "this receiver speaks protocol version 1");
  if (auto err = proto::check_file_name(hello_.name))
    return reject(proto::RejectReason::BadName, proto::to_string(*err));
  if (hello_.file_size > o.max_size)
    return reject(proto::RejectReason::TooLarge, "larger than " + proto::format_size(o.max_size));
  try {
    if (OutputFile::free_bytes(context_.dir_fd) < hello_.file_size)
      return reject(proto::RejectReason::NoSpace, "not enough free space");
    file_.emplace(OutputFile::create(context_.dir_fd, hello_.name, o.overwrite));
    file_->preallocate(hello_.file_size);
  } catch (const FileExistsError&) {
    return reject(proto::RejectReason::Exists, "a file of that name exists");
  } catch (const std::exception& e) {
    spdlog::error("[{}] cannot create a file for '{}': {}", peer_,
                  proto::escape_for_log(hello_.name), e.what());
    return reject(proto::RejectReason::Internal, "cannot create the file");
  }
  plan_ = proto::ChunkPlan{hello_.file_size, o.slot_size};
  // A small file needs fewer slots; an empty one needs no window at all.
  slot_count_ =
      static_cast<std::uint32_t>(std::clamp<std::uint64_t>(plan_.chunk_count(), 1, o.slots));
  const std::uint64_t window_bytes =
      plan_.chunk_count() > 0 ? std::uint64_t{o.slot_size} * slot_count_ : 0;
  if (context_.window_bytes_in_use + window_bytes > o.max_memory)
    return reject(proto::RejectReason::NoMemory, "receiver memory cap reached; try again later");
  context_.window_bytes_in_use += window_bytes;
  window_charge_ = window_bytes;
  try {
    if (plan_.chunk_count() > 0) {
      window_ = AlignedBuffer(static_cast<std::size_t>(o.slot_size) * slot_count_);
      slot_mrs_.resize(slot_count_);
      for (std::uint32_t slot = 0; slot < slot_count_; ++slot) register_slot(slot);
    }
  } catch (const std::exception& e) {
    spdlog::error("[{}] cannot register the receive window: {}", peer_, e.what());
    slot_mrs_.clear();
    return reject(proto::RejectReason::NoMemory, "cannot register memory");
  }
  try {
    // At most one chunk per slot is being stored at a time.
    if (plan_.chunk_count() > 0) worker_.emplace(*file_, chunks_stored_, slot_count_);
  } catch (const std::exception& e) {
    spdlog::error("[{}] cannot start a worker thread: {}", peer_, e.what());
    slot_mrs_.clear();
    return reject(proto::RejectReason::Internal, "cannot start a worker thread");
  }
  spdlog::info("[{}] receiving '{}' ({})", peer_, proto::escape_for_log(hello_.name),
               proto::format_size(hello_.file_size));
  return Event::HelloAccepted;
}

void Connection::register_slot(std::uint32_t slot) {
  // Remote write is the only remote access a slot ever needs; it covers just that slot.
  std::uint8_t* base = window_.data() + static_cast<std::size_t>(slot) * context_.options.slot_size;
  slot_mrs_[slot].emplace(endpoint_->pd().get(), base, context_.options.slot_size,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

std::optional<proto::ReceiverEvent> Connection::store_chunk() {
  const auto& c = chunk_;
  const std::uint64_t index = received_ / context_.options.slot_size;
  // A slot is writable exactly while its MR exists: the sender holds its key.
  const bool valid = c.slot < slot_mrs_.size() && slot_mrs_[c.slot].has_value() &&
                     c.offset == received_ && index < plan_.chunk_count() &&
                     c.length == plan_.length(index);
  if (!valid) {
    spdlog::warn("[{}] bad chunk: offset {} length {} slot {} (expected offset {})", peer_,
                 c.offset, c.length, c.slot, received_);
    error_code_ = proto::ErrorCode::ProtocolViolation;
    error_text_ = "chunk breaks the data rules";
    return Event::ProtocolViolation;
  }
  // Revoke the slot's key before anyone reads it. RC delivers in order, so the WRITE that
  // filled this slot completed before its Chunk message arrived: nothing legitimate is
  // still landing, and from here a write with that key fails at the writer.
  const auto t0 = Clock::now();
  slot_mrs_[c.slot].reset();
  costs_.revoke += Clock::now() - t0;
  // The worker hashes and writes the slot in place; it stays revoked until on_chunks_stored
  // takes the result and SendCredit registers it again.
  std::span<const std::uint8_t> bytes(
      window_.data() + static_cast<std::size_t>(c.slot) * context_.options.slot_size, c.length);
  worker_->submit({c.slot, c.offset, bytes});
  received_ += c.length;
  expect("data", context_.options.timeout);
  return std::nullopt;  // ChunkStored (or VerifiedBad) comes from the worker
}

void Connection::on_chunks_stored() {
  // Read first: a chunk finished after this read signals again, so none is missed.
  (void)chunks_stored_.read_count();
  // One result per event: outstanding() counts the ones not dispatched yet. An event may
  // end the worker (DiscardFile, Release, the verdict); its last results no longer matter.
  while (worker_ && !closed()) {
    auto result = worker_->take_finished();
    if (!result) break;
    costs_.hash += result->hashing;
    costs_.write += result->writing;
    if (!result->stored) {
      spdlog::error("[{}] cannot write '{}': {}", peer_, proto::escape_for_log(hello_.name),
                    result->error.empty() ? "unknown error" : result->error);
      verdict_ = proto::VerdictCode::StorageError;
      log_transfer_end(proto::to_string(verdict_));
      dispatch(Event::VerifiedBad);
      continue;
    }
    stored_ = result->chunk;
    if (state_ == ReceiverState::Receiving) expect("data", context_.options.timeout);
    dispatch(Event::ChunkStored);
  }
}

std::optional<proto::ReceiverEvent> Connection::await_drain() {
  // The data phase is over: no key for this window works from now on. (The slots of the
  // chunks still being stored were revoked when their Chunk arrived.)
  slot_mrs_.clear();
  const auto now = Clock::now();
  if (!drain_started_) drain_started_ = now;
  if (worker_ && worker_->outstanding() > 0) {
    expect("the last chunks to be written", context_.options.timeout);
    return std::nullopt;  // asked again at each ChunkStored
  }
  costs_.drain = now - *drain_started_;
  return Event::Drained;
}

proto::ReceiverEvent Connection::verify() {
  // Every chunk is stored (Drained, after AwaitDrain revoked every slot): the worker is
  // idle and its hash complete.
  computed_ = worker_ ? worker_->finish_hash() : Sha256().finish();
  worker_.reset();  // the data phase is over
  if (received_ != hello_.file_size || done_total_ != received_) {
    verdict_ = proto::VerdictCode::SizeMismatch;
  } else if (computed_ != hello_.sha256) {
    verdict_ = proto::VerdictCode::HashMismatch;
  } else {
    try {
      file_->commit();  // fsync, then rename into place: only now may we say "good"
      committed_ = true;
      verdict_ = proto::VerdictCode::Good;
    } catch (const std::exception& e) {
      spdlog::error("[{}] cannot store '{}': {}", peer_, proto::escape_for_log(hello_.name),
                    e.what());
      verdict_ = proto::VerdictCode::StorageError;
    }
  }
  log_transfer_end(proto::to_string(verdict_));
  return verdict_ == proto::VerdictCode::Good ? Event::VerifiedGood : Event::VerifiedBad;
}

proto::ReceiverEvent Connection::lookup_id() {
  ++id_attempts_;
  if (context_.secrets != nullptr) {
    if (auto secret = context_.secrets->lookup(offered_id_)) {
      secret_ = std::move(*secret);
      return Event::IdKnown;
    }
  }
  return id_attempts_ >= kMaxIdAttempts ? Event::IdAttemptsExhausted : Event::IdUnknown;
}

void Connection::log_transfer_end(const char* verdict) {
  logged_end_ = true;
  const double seconds = std::chrono::duration<double>(Clock::now() - data_started_).count();
  const double rate = seconds > 0 ? static_cast<double>(received_) / seconds : 0;
  spdlog::info("[{}] '{}': {} of {} in {:.2f}s ({}/s), verdict {}", peer_,
               proto::escape_for_log(hello_.name), proto::format_size(received_),
               proto::format_size(hello_.file_size), seconds,
               proto::format_size(static_cast<std::uint64_t>(rate)), verdict);
  using Seconds = std::chrono::duration<double>;
  // Hashing and writing happen on the worker thread; the rest, and the wait at Done for
  // the worker to finish the chunks still queued, in the event loop.
  spdlog::debug(
      "[{}] time spent: revoking keys {:.3f}s, hashing {:.3f}s (worker), writing {:.3f}s "
      "(worker), re-keying {:.3f}s{}",
      peer_, Seconds(costs_.revoke).count(), Seconds(costs_.hash).count(),
      Seconds(costs_.write).count(), Seconds(costs_.rekey).count(),
      drain_started_ ? fmt::format(", waiting at Done for the last chunks {:.3f}s",
                                   Seconds(costs_.drain).count())
                     : std::string());
}

void Connection::post(const proto::Message& message) {
  if (disconnected_) return;
  if (!endpoint_->send(message)) {
    // Every send buffer is in flight: the peer is not acknowledging. Give up on it.
    spdlog::warn("[{}] send queue full; dropping the connection", peer_);
    disconnect_pending_ = true;
    disconnected_ = true;
    id_.disconnect();
  }
}

void Connection::disconnect_when_drained() {
  // Let the last messages (verdict, secret, error...) complete before disconnecting:
  // rdma_disconnect flushes whatever is still queued.
  if (disconnect_pending_ && !disconnected_ && endpoint_->sends_in_flight() == 0) {
    disconnected_ = true;
    id_.disconnect();
  }
}

void Connection::on_completions() {
  endpoint_->drain_completions(completions_);
  for (const ibv_wc& wc : completions_) {
    if (closed()) return;
    if (wc.status != IBV_WC_SUCCESS) {
      if (state_ == ReceiverState::Closing) continue;  // flushed by our own disconnect
      on_transport_failure(std::string("completion error: ") + ibv_wc_status_str(wc.status));
      return;
    }
    switch (wr_kind(wc.wr_id)) {
      case WorkKind::Recv: {
        auto decoded = endpoint_->take_received(wc);
        if (auto* failure = std::get_if<proto::DecodeFailure>(&decoded);
            failure && failure->error == proto::DecodeError::BadVersion &&
            state_ == ReceiverState::AwaitHello) {
          // A peer speaking another version gets a Reject it can understand (the header's
          // magic and version never move), not an Error.
          foreign_version_ = true;
          dispatch(Event::GotHello);
        } else if (failure) {
          spdlog::warn("[{}] malformed message: {} ({})", peer_, proto::to_string(failure->error),
                       failure->detail);
          error_code_ = proto::ErrorCode::ProtocolViolation;
          error_text_ = std::string("malformed message: ") + proto::to_string(failure->error);
          dispatch(Event::ProtocolViolation);
        } else {
          on_message(std::get<proto::Message>(decoded));
        }
        break;
      }
      case WorkKind::Send:
        endpoint_->send_completed(wr_index(wc.wr_id));
        disconnect_when_drained();
        break;
      case WorkKind::Write:
        break;
    }
  }
}

void Connection::on_message(const proto::Message& message) {
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, proto::Hello>) {
          hello_ = m;
          dispatch(Event::GotHello);
        } else if constexpr (std::is_same_v<T, proto::Chunk>) {
          chunk_ = m;
          dispatch(Event::GotChunk);
        } else if constexpr (std::is_same_v<T, proto::Done>) {
          done_total_ = m.total_bytes;
          dispatch(Event::GotDone);
        } else if constexpr (std::is_same_v<T, proto::Id>) {
          offered_id_ = m.id;
          dispatch(Event::GotId);
        } else if constexpr (std::is_same_v<T, proto::Bye>) {
          dispatch(Event::GotBye);
        } else if constexpr (std::is_same_v<T, proto::Error>) {
          spdlog::warn("[{}] sender aborted: {} {}", peer_, proto::to_string(m.code),
                       proto::escape_for_log(m.text));
          dispatch(Event::GotError);
        } else {
          dispatch(Event::GotUnexpected);
        }
      },
      message);
}

void Connection::on_established() {
  spdlog::debug("[{}] connection established", peer_);
}

void Connection::on_disconnected() {
  // Messages that arrived before the disconnect (a Bye, an Id) are handled first.
  on_completions();
  if (closed()) return;
  if (state_ != ReceiverState::Closing && state_ != ReceiverState::Closed)
    spdlog::warn("[{}] sender disconnected while waiting for {}", peer_, waiting_for_);
  disconnected_ = true;
  dispatch(Event::Disconnected);
}

void Connection::on_transport_failure(const std::string& why) {
  spdlog::warn("[{}] {} (while waiting for {})", peer_, why, waiting_for_);
  dispatch(Event::TransportFailed);
}

void Connection::on_tick(Clock::time_point now) {
  if (closed() || now < deadline_) return;
  if (state_ != ReceiverState::Closing) {
    spdlog::warn("[{}] timed out waiting for {}", peer_, waiting_for_);
    error_code_ = proto::ErrorCode::Timeout;
    error_text_ = std::string("receiver timed out waiting for ") + waiting_for_;
  }
  dispatch(Event::Timeout);
}

void Connection::shut_down() {
  if (closed() || state_ == ReceiverState::Closing) return;
  error_code_ = proto::ErrorCode::ShuttingDown;
  error_text_ = "receiver shutting down";
  dispatch(Event::ShuttingDown);
}

}  // namespace rdmax::receiver
