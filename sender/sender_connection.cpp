#include "sender/sender_connection.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/error.hpp"
#include "protocol/names.hpp"
#include "protocol/refusals.hpp"
#include "protocol/secure_wipe.hpp"
#include "protocol/sizes.hpp"
#include "protocol/transfer_rules.hpp"

namespace rdmax::sender {

proto::Error error_to_send(const SenderInput& cause) {
  const auto* abort = std::get_if<SenderInput::Abort>(&cause.data);
  if (abort == nullptr) return proto::Error{proto::ErrorCode::Internal, "sender failure"};
  return proto::Error{abort->code, abort->text.substr(0, proto::kMaxTextBytes)};
}

void keep_secret(SenderInput& cause, std::string& kept) {
  auto& received = std::get<proto::Secret>(cause.data).secret;
  kept.assign(received);
  proto::secure_wipe(received.data(), received.size());
}

namespace {
using Input = SenderInput;

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void read_fully(int fd, std::uint8_t* out, std::size_t length, std::uint64_t offset) {
  while (length > 0) {
    ssize_t n = ::pread(fd, out, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_sys("pread");
    if (n == 0) throw std::runtime_error("the file shrank while it was being sent");
    out += n;
    length -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

// A version-2 Hello asks for a Working at least three times per timeout, so one lost to
// scheduling never times a healthy receiver out.
std::uint32_t keepalive_for(std::chrono::seconds timeout) {
  const auto ms = static_cast<std::uint64_t>(timeout.count()) * 1000 / 3;
  return static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(ms, proto::kMinKeepaliveMs, proto::kMaxKeepaliveMs));
}
}  // namespace

SenderConnection::SenderConnection(const SenderSettings& settings, InputFile& file,
                                   const FileDigest& digest, SenderCm& cm, std::string peer_label)
    : DriverCore(std::move(peer_label)),
      settings_(settings),
      file_(file),
      digest_(digest),
      cm_(cm) {}

SenderConnection::~SenderConnection() {
  proto::secure_wipe(secret_.data(), secret_.size());
}

void SenderConnection::start() {
  started_ = Clock::now();
  expect("address resolution", settings_.connect_timeout);
}

void SenderConnection::on_address_resolved() {
  guarded([&] { dispatch({Event::AddressResolved, {}}); });
}
void SenderConnection::on_route_resolved() {
  guarded([&] { dispatch({Event::RouteResolved, {}}); });
}
void SenderConnection::on_established() {
  guarded([&] { dispatch({Event::Established, {}}); });
}
void SenderConnection::on_connect_failed(const std::string& why) {
  spdlog::error("{}", why);
  guarded([&] { dispatch({Event::ConnectFailed, {}}); });
}
void SenderConnection::on_cm_failure(const std::string& why) {
  mark_transport_gone();
  spdlog::error("{}", why);
  guarded([&] { dispatch({Event::TransportFailed, {}}); });
}

void SenderConnection::interrupt(int) {
  guarded([&] {
    dispatch(
        {Event::Interrupted, Input::Abort{proto::ErrorCode::ShuttingDown, "sender interrupted"}});
  });
}

void SenderConnection::tick(Clock::time_point now) {
  if (progress_ && state_ == State::Sending) progress_->refresh();
  if (resume_at_ && now >= *resume_at_) {
    resume_at_.reset();
    guarded([&] { pump(); });
  }
  on_tick(now);
}

void SenderConnection::dispatch(SenderInput input) {
  dispatcher_.dispatch(std::move(input), [this](SenderInput& next) { step(next); });
}

void SenderConnection::step(SenderInput& input) {
  const auto t = proto::sender_next(state_, input.event, {settings_.id.has_value()});
  if (t.illegal) {
    spdlog::error("protocol error: {} is not allowed in state {}", proto::to_string(input.event),
                  proto::to_string(state_));
    input.data = Input::Abort{proto::ErrorCode::ProtocolViolation,
                              std::string("unexpected ") + proto::to_string(input.event)};
  }
  spdlog::trace("{} --{}--> {}", proto::to_string(state_), proto::to_string(input.event),
                proto::to_string(t.next));
  state_ = t.next;
  if (t.outcome && !outcome_) outcome_ = t.outcome;
  for (Action a : t.actions) perform(a, input);
  if (state_ == State::Done && progress_) progress_->abandon();
}

void SenderConnection::perform(Action action, SenderInput& cause) {
  switch (action) {
    case Action::ResolveRoute:
      expect("route resolution", settings_.connect_timeout);
      cm_.resolve_route();
      break;
    case Action::Connect: {
      expect("the connection to be accepted", settings_.connect_timeout);
      attach(cm_.connect());
      set_version(settings_.version);
      break;
    }
    case Action::SendHello: {
      stats_.connect_seconds = seconds_between(started_, Clock::now());
      spdlog::info("connected to {}", label());
      expect_reply("the receiver's answer to Hello");
      // No chunk size hint (0): the receiver sizes its slots for its own memory and device.
      proto::Hello hello{file_.size(), digest_.value, 0, settings_.name};
      if (version() >= proto::kVersion2) {
        hello.keepalive_ms = keepalive_for(settings_.timeout);
        hello.digest_algorithm = digest_.algorithm;
        // We understand Resume and Have (PROTOCOL.md 7.6).
        hello.extensions.push_back({proto::kExtensionResume, {}});
      } else if (digest_.algorithm != proto::DigestAlgorithm::WholeFileSha256) {
        throw std::logic_error("protocol version 1 carries only the whole-file SHA-256");
      }
      post(hello);
      break;
    }
    case Action::StartData:
      start_data(std::get<proto::Accept>(cause.data));
      break;
    case Action::SendMore:
      pump();
      break;
    case Action::SendDone:
      done_sent_ = Clock::now();
      stats_.data_seconds = seconds_between(data_started_, done_sent_);
      expect_reply("the verdict");
      post(proto::Done{file_.size()});
      break;
    case Action::SendId:
      expect_reply("the answer to the id");
      post(proto::Id{*settings_.id});
      break;
    case Action::KeepSecret:
      keep_secret(cause, secret_);
      break;
    case Action::SendBye:
      post(proto::Bye{});
      break;
    case Action::SendError:
      post(error_to_send(cause));
      break;
    case Action::Disconnect:
      begin_disconnect();
      break;
    case Action::Finish:
      // Whatever the way out, nothing more is sent or lands in our memory.
      release_transport();
      break;
    case Action::StartSession:
      // Only a session driver (sender/session_connection.hpp) is asked this.
      throw std::logic_error("one-file driver asked to start a session");
  }
}

void SenderConnection::start_data(const proto::Accept& accept) {
  if (const auto problem = proto::check_accept(accept, digest_.algorithm, stats_.resumed_from)) {
    const std::string why = proto::describe(*problem, accept, stats_.resumed_from);
    spdlog::error("{}", why);
    return dispatch(
        {Event::ProtocolViolation, Input::Abort{proto::ErrorCode::ProtocolViolation, why}});
  }
  accept_ = accept;
  data_started_ = Clock::now();
  expect_reply("credits from the receiver");
  progress_.emplace(settings_.progress, "sending", file_.size());
  ledger_ = proto::SendLedger(file_.size(), accept, kMaxActiveSlots, stats_.resumed_from);
  if (stats_.resumed_from > 0) progress_->update(stats_.resumed_from);
  if (settings_.bwlimit) bwlimit_.emplace(*settings_.bwlimit, accept.slot_size, data_started_);
  if (const std::uint32_t wanted = ledger_.active_slots(); wanted > 0) {
    // What is pinned must fit RLIMIT_MEMLOCK (sender/memlock.hpp): fewer slots in flight,
    // smaller zero-copy windows, or, when not even one slot fits, no transfer.
    std::uint32_t slots = wanted;
    // Copying is the default: pinning page-cache pages cost more than copying them where
    // it was measured (Soft-RoCE: 2.0 s of registration against 0.6 s of copying per
    // 256 MiB, both on the event loop; docs/BENCHMARKS.md). --zero-copy asks for it.
    if (settings_.zero_copy && !settings_.inject_corruption) {
      const std::uint64_t preferred = preferred_window_chunks(accept.slot_size, wanted);
      std::optional<proto::WindowFit> fit = proto::WindowFit{
          static_cast<std::uint32_t>(std::min<std::uint64_t>(preferred, UINT32_MAX)), wanted};
      if (settings_.memlock != nullptr)
        fit = settings_.memlock->file_windows(accept.slot_size, wanted, preferred);
      if (fit) {
        slots = fit->slots;
        start_zero_copy(fit->window_chunks);
      } else {
        spdlog::warn(
            "zero-copy unavailable, copying through a buffer instead: RLIMIT_MEMLOCK "
            "cannot hold three windows of one chunk");
      }
    }
    if (!file_windows_ && settings_.memlock != nullptr)
      slots = settings_.memlock->staging_slots(accept.slot_size, wanted);
    if (slots == 0) return cannot_pin(accept.slot_size);
    if (slots < wanted)
      ledger_ = proto::SendLedger(file_.size(), accept, slots, stats_.resumed_from);
    if (!file_windows_) {
      staging_ = transport()->allocate(std::size_t{ledger_.active_slots()} * accept.slot_size);
      staging_key_ = transport()->register_memory(staging_, Access::LocalRead);
    }
  }
  stats_.zero_copy = file_windows_.has_value();
  spdlog::debug("data phase: {} chunks of {}, {} slots in flight, {}", ledger_.plan().chunk_count(),
                proto::format_size(accept.slot_size), ledger_.active_slots(),
                file_windows_ ? "zero-copy from the file's mapping" : "copied through a buffer");
  pump();
}

void SenderConnection::cannot_pin(std::uint32_t slot_size) {
  settings_.memlock->cannot_fit(slot_size);
  dispatch({Event::LocalFailure,
            Input::Abort{proto::ErrorCode::Internal,
                         "the sender cannot pin one slot under its RLIMIT_MEMLOCK"}});
}

void SenderConnection::start_zero_copy(std::uint64_t window_chunks) {
  try {
    file_windows_.emplace(*transport(), file_.map(), window_chunks * accept_.slot_size);
    file_windows_->register_ahead(0);  // fails here, not mid-transfer, if it cannot work
  } catch (const std::exception& e) {
    // A file system that cannot be mapped, or a memlock limit too low to pin a window:
    // copying through a small registered buffer still works.
    spdlog::warn("zero-copy unavailable, copying through a buffer instead: {}", e.what());
    file_windows_.reset();
  }
}

std::pair<Registration, std::span<const std::uint8_t>> SenderConnection::chunk_bytes(
    const proto::SendLedger::Planned& c) {
  if (file_windows_)
    return {file_windows_->acquire(c.offset, c.length), file_windows_->bytes(c.offset, c.length)};
  std::uint8_t* buffer = staging_.data() + static_cast<std::size_t>(c.slot) * accept_.slot_size;
  read_fully(file_.fd(), buffer, c.length, c.offset);
  // Read ahead, asynchronously, the chunk this slot will carry next, so that its pread
  // finds the page cache warm even when the hashing pass's pages have been evicted (a file
  // larger than memory). Advisory: failure changes nothing but speed.
  const std::uint64_t in_flight = std::uint64_t{ledger_.active_slots()} * accept_.slot_size;
  ::posix_fadvise(file_.fd(), static_cast<off_t>(c.offset + in_flight),
                  static_cast<off_t>(c.length), POSIX_FADV_WILLNEED);
  if (const auto at = settings_.inject_corruption;
      at && *at >= c.offset && *at < c.offset + c.length) {
    buffer[*at - c.offset] ^= 0xFF;
    spdlog::warn("testing: corrupted the byte at offset {}", *at);
  }
  return {*staging_key_, {buffer, c.length}};
}

void SenderConnection::pump() {
  if (state_ != State::Sending) return;
  while (auto chunk = held_by_bwlimit() ? std::nullopt : ledger_.next()) {
    if (bwlimit_) bwlimit_->take(chunk->length, Clock::now());
    const auto [source, bytes] = chunk_bytes(*chunk);
    transport()->write(source, bytes, chunk->remote_addr, chunk->rkey);
    // The tag names the slot: its completion frees the slot (and the chunk's window).
    post(proto::Chunk{chunk->offset, chunk->length, chunk->slot}, chunk->slot + 1);
    stats_.bytes += chunk->length;
  }
  // Pin the next window while the writes just posted are on the wire. Best effort: a
  // memlock limit that allows two windows but not a third only means acquire() registers
  // that window when its first chunk is due.
  if (file_windows_ && stats_.resumed_from + ledger_.bytes_sent() < file_.size()) {
    try {
      file_windows_->register_ahead(stats_.resumed_from + ledger_.bytes_sent());
    } catch (const std::exception& e) {
      spdlog::debug("not registering ahead: {}", e.what());
    }
  }
  if (ledger_.all_done() && !all_sent_signalled_) {
    all_sent_signalled_ = true;
    if (progress_) progress_->finish();
    if (file_windows_)
      spdlog::debug("registering and releasing the file's windows took {:.3f}s",
                    std::chrono::duration<double>(file_windows_->registration_time()).count());
    dispatch({Event::AllDataSent, {}});
  }
}

// --bwlimit: whether the next chunk must wait for the token bucket (then resume_at() says
// until when).
bool SenderConnection::held_by_bwlimit() {
  resume_at_.reset();
  const std::uint64_t left = file_.size() - ledger_.bytes_sent();
  if (!bwlimit_ || left == 0) return false;
  const std::uint64_t next = std::min<std::uint64_t>(left, accept_.slot_size);
  const auto now = Clock::now();
  if (const auto at = bwlimit_->ready_at(next, now); at > now) resume_at_ = at;
  return resume_at_.has_value();
}

void SenderConnection::on_sent(std::uint64_t tag) {
  if (tag == 0) return;  // a control message
  const auto slot = static_cast<std::uint32_t>(tag - 1);
  const std::uint64_t offset = ledger_.offset_in_flight(slot);
  // The Chunk's SEND completed, so the WRITE before it did too: those bytes are at the
  // receiver.
  if (ledger_.completed(slot) == 0) return;
  if (file_windows_) file_windows_->release(offset);
  if (progress_) progress_->update(stats_.resumed_from + ledger_.bytes_completed());
  pump();
}

void SenderConnection::expect_reply(const char* what) {
  expect(what, settings_.timeout);
}

void SenderConnection::on_message(Inbound inbound) {
  if (finished()) return;
  auto* message = std::get_if<proto::Message>(&inbound.decoded);
  if (!proto::sender_accepts_version(version(), inbound.version, message,
                                     state_ == State::AwaitAccept)) {
    spdlog::error("a version-{} message from the receiver on a version-{} connection",
                  inbound.version, version());
    return dispatch(
        {Event::ProtocolViolation, Input::Abort{proto::ErrorCode::ProtocolViolation,
                                                "message version differs from the connection's"}});
  }
  if (message == nullptr) {
    const auto& failure = std::get<proto::DecodeFailure>(inbound.decoded);
    spdlog::error("malformed message from the receiver: {} ({})", proto::to_string(failure.error),
                  failure.detail);
    return dispatch({Event::ProtocolViolation,
                     Input::Abort{proto::ErrorCode::ProtocolViolation, "malformed message"}});
  }
  // The receiver spoke: the wait starts again (in Closing, the close grace stands).
  if (state_ != State::Closing) expect_reply(waiting_for());
  handle(*message, inbound.version);
}

void SenderConnection::handle(proto::Message& message, std::uint16_t message_version) {
  using proto::VerdictCode;
  if (const auto* m = std::get_if<proto::Accept>(&message)) return dispatch({Event::GotAccept, *m});
  if (const auto* m = std::get_if<proto::Reject>(&message)) {
    // A receiver that speaks only an older version refuses in that version (PROTOCOL 7.1):
    // worth connecting again in it. A refusal in our own version is about something else
    // in the Hello (an extension it must understand) and is final.
    if (proto::rejects_our_version(*m, message_version, version())) {
      spdlog::warn("the receiver does not speak protocol version {}{}{}", version(),
                   m->text.empty() ? "" : ": ", proto::escape_for_log(m->text));
      return dispatch({Event::GotRejectVersion, {}});
    }
    spdlog::error("rejected by the receiver: {}",
                  proto::describe_refusal(m->reason, m->text, proto::RefusalScope::File));
    return dispatch({Event::GotReject, {}});
  }
  if (const auto* m = std::get_if<proto::Credit>(&message)) {
    // The ledger exists from the Accept on; a Credit before it is the machine's to refuse.
    if (state_ == State::Sending || state_ == State::AwaitVerdict) {
      if (auto error = ledger_.credit(*m)) {
        spdlog::error("the receiver credited slot {}: {}", m->slot, proto::to_string(*error));
        return dispatch({Event::ProtocolViolation,
                         Input::Abort{proto::ErrorCode::ProtocolViolation,
                                      std::string("bad credit: ") + proto::to_string(*error)}});
      }
    }
    return dispatch({Event::GotCredit, {}});
  }
  if (const auto* m = std::get_if<proto::Verdict>(&message)) {
    stats_.verify_seconds = seconds_between(done_sent_, Clock::now());
    if (m->code == VerdictCode::Good) {
      spdlog::debug("verdict: good");  // the summary line names the digest
      return dispatch({Event::GotVerdictGood, {}});
    }
    if (m->code == VerdictCode::StorageError) {
      spdlog::error(
          "verdict: the receiver could not store the file (for example its disk is full)");
      return dispatch({Event::GotVerdictFailed, {}});
    }
    spdlog::error("verdict: bad ({}); sent {} digest {}, receiver computed {}",
                  proto::to_string(m->code), proto::to_string(digest_.algorithm),
                  to_hex(digest_.value), to_hex(m->received_digest));
    return dispatch({Event::GotVerdictBad, {}});
  }
  if (auto* m = std::get_if<proto::Secret>(&message)) {
    SenderInput input{Event::GotSecret, proto::Secret{m->secret}};
    proto::secure_wipe(m->secret.data(), m->secret.size());  // the decoded copy
    return dispatch(std::move(input));
  }
  if (std::holds_alternative<proto::Denied>(message)) {
    spdlog::error("the receiver denied the id");
    return dispatch({Event::GotDenied, {}});
  }
  if (const auto* m = std::get_if<proto::Error>(&message)) {
    spdlog::error("the receiver aborted: {}{}{}", proto::to_string(m->code),
                  m->text.empty() ? "" : ": ", proto::escape_for_log(m->text));
    const bool gave_up =
        m->code == proto::ErrorCode::Timeout || m->code == proto::ErrorCode::ShuttingDown;
    return dispatch({gave_up ? Event::GotErrorGaveUp : Event::GotError, {}});
  }
  if (const auto* m = std::get_if<proto::Resume>(&message)) return on_resume(*m);
  if (const auto* m = std::get_if<proto::Have>(&message)) {
    if (state_ == State::AwaitAccept && m->entry == 0 && m->digest != digest_.value) {
      spdlog::error("the receiver says it has the file, with another digest ({})",
                    to_hex(m->digest));
      return dispatch({Event::ProtocolViolation, Input::Abort{proto::ErrorCode::ProtocolViolation,
                                                              "Have with another digest"}});
    }
    if (state_ == State::AwaitAccept && m->entry == 0 && version() >= proto::kVersion2) {
      spdlog::info("the receiver has '{}' already (same size and digest): nothing to send",
                   proto::escape_for_log(settings_.name));
      stats_.skipped = true;
    }
    return dispatch({Event::GotHave, {}});
  }
  if (const auto* m = std::get_if<proto::Working>(&message)) {
    spdlog::debug("the receiver is still at work ({}, {} stored)", proto::to_string(m->phase),
                  proto::format_size(m->stored_bytes));
    return dispatch({Event::GotWorking, {}});
  }
  spdlog::error("unexpected {} from the receiver", proto::to_string(proto::type_of(message)));
  dispatch({Event::GotUnexpected,
            Input::Abort{proto::ErrorCode::ProtocolViolation, "unexpected message"}});
}

// PROTOCOL.md 7.6: only before the Accept, once, for entry 0, inside the file; the slot
// size it must be a multiple of comes with the Accept (start_data checks). Resuming needs
// the fs-verity digest: the receiver cannot continue a whole-file SHA-256.
void SenderConnection::on_resume(const proto::Resume& m) {
  // Elsewhere than AwaitAccept the machine refuses the Resume by itself. The slot size is
  // not known yet: the Accept that follows checks the alignment (proto::check_accept).
  if (state_ == State::AwaitAccept) {
    auto bad = [&](const std::string& why) {
      spdlog::error("bad Resume: {}", why);
      dispatch({Event::ProtocolViolation,
                Input::Abort{proto::ErrorCode::ProtocolViolation, "bad Resume: " + why}});
    };
    if (version() < proto::kVersion2) return bad("a Resume in version 1");
    if (m.entry != 0) return bad("entry " + std::to_string(m.entry) + " of a single file");
    const proto::ResumeFacts facts{digest_.algorithm, m.offset, file_.size(), 0,
                                   stats_.resumed_from > 0};
    if (const auto problem = proto::check_resume(facts))
      return bad(proto::describe(*problem, facts));
    stats_.resumed_from = m.offset;
    spdlog::info("the receiver has the first {} of '{}' already: resuming there",
                 proto::format_size(m.offset), proto::escape_for_log(settings_.name));
  }
  dispatch({Event::GotResume, {}});
}

void SenderConnection::on_transport_failure(const std::string& why) {
  if (state_ != State::Closing && !finished())
    spdlog::error("RDMA {} (while waiting for {})", why, waiting_for());
  dispatch({Event::TransportFailed, {}});
}

void SenderConnection::on_peer_disconnected() {
  if (finished()) return;
  if (state_ != State::Closing) spdlog::error("the receiver disconnected");
  dispatch({Event::Disconnected, {}});
}

void SenderConnection::on_timeout() {
  if (finished()) return;
  if (state_ == State::Closing) return dispatch({Event::Timeout, {}});
  spdlog::error("timed out waiting for {}", waiting_for());
  dispatch({Event::Timeout, Input::Abort{proto::ErrorCode::Timeout, "sender timed out"}});
}

void SenderConnection::on_local_failure(const std::string&) {
  dispatch({Event::LocalFailure, Input::Abort{proto::ErrorCode::Internal, "sender failure"}});
}

void SenderConnection::on_transport_lost(const std::string&) {
  dispatch({Event::TransportFailed, {}});
}

}  // namespace rdmax::sender
