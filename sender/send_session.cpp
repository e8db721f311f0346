#include "sender/send_session.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/error_hints.hpp"
#include "common/rdma/connection_params.hpp"
#include "common/rdma/devices.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::sender {

namespace {
using proto::SenderAction;
using proto::SenderEvent;
using proto::SenderState;

enum Tag : std::uint64_t { kTagCm = 1, kTagCq = 2, kTagSignal = 3, kTagTimer = 4 };

// The sender keeps at most this many chunks in flight, whatever the receiver offers: it
// bounds the send queue and the staging buffer.
constexpr std::uint32_t kMaxActiveSlots = 32;
constexpr std::uint32_t kRecvDepth = proto::kMaxSlotCount + 16;  // Credits burst after Accept
constexpr std::uint32_t kSendDepth = kMaxActiveSlots + 8;
// rxe on Linux 6.1 advertises an 8 MiB max message; larger slots are refused.
constexpr std::uint32_t kMaxSlotSize = 8u << 20;
// Zero-copy registers the file a window at a time: 8x what can be in flight but at most
// 32 MiB (unless more than that can be in flight), so that registering costs little per
// byte and pinned memory (up to three windows) stays modest whatever the file size.
constexpr std::uint64_t kFileWindowBytes = 32u << 20;
constexpr std::uint64_t kFileWindowsPerFlight = 8;
constexpr auto kCloseGrace = std::chrono::seconds(3);

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
}  // namespace

SendSession::SendSession(const SenderOptions& options, InputFile& file, const Digest& digest,
                         ProgressMode progress)
    : options_(options), file_(file), digest_(digest), progress_mode_(progress), id_(channel_) {
  context_.has_id = options.id.has_value();
  channel_.set_nonblocking();
  epoll_.add(channel_.fd(), EPOLLIN, kTagCm);
  epoll_.add(signals_.fd(), EPOLLIN, kTagSignal);
  epoll_.add(timer_.fd(), EPOLLIN, kTagTimer);
  timer_.arm_periodic(std::chrono::milliseconds(100));
}

SendSession::~SendSession() {
  // Teardown (QP, MRs, CQ, PD, cm_id) can take a while when the peer is gone: say so.
  spdlog::trace("releasing the connection's resources");
}

proto::SenderOutcome SendSession::run() {
  started_ = Clock::now();
  extend_deadline(options_.connect_timeout);
  try {
    id_.resolve_addr(
        options_.host.c_str(), options_.port,
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.connect_timeout));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return proto::SenderOutcome::ConnectFailed;
  }
  epoll_event events[8];
  while (state_ != SenderState::Done) {
    int n = epoll_.wait(events, 1000);
    for (int i = 0; i < n && state_ != SenderState::Done; ++i) {
      try {
        switch (events[i].data.u64) {
          case kTagCm:
            on_cm_event();
            break;
          case kTagCq:
            on_completions();
            break;
          case kTagSignal:
            if (auto sig = signals_.read_signal()) {
              spdlog::warn("interrupted by signal {}", *sig);
              error_code_ = proto::ErrorCode::ShuttingDown;
              error_text_ = "sender interrupted";
              dispatch(SenderEvent::Interrupted);
            }
            break;
          case kTagTimer:
            on_timer();
            break;
        }
      } catch (const std::exception& e) {
        // Setup failures (registration, posting) end the transfer with a clear message.
        spdlog::error("{}", e.what());
        if (!outcome_) {
          outcome_ = state_ <= SenderState::Connecting ? proto::SenderOutcome::ConnectFailed
                                                       : proto::SenderOutcome::ProtocolError;
        }
        state_ = SenderState::Done;
      }
    }
  }
  // A failed transfer leaves no half-drawn bar behind its error message.
  if (progress_) progress_->abandon();
  return outcome_.value_or(proto::SenderOutcome::ProtocolError);
}

void SendSession::dispatch(SenderEvent event) {
  pending_.push_back(event);
  if (dispatching_) return;  // actions may raise events; they run after the current ones
  dispatching_ = true;
  while (!pending_.empty()) {
    SenderEvent e = pending_.front();
    pending_.pop_front();
    auto t = proto::sender_next(state_, e, context_);
    if (t.illegal) {
      spdlog::error("protocol error: {} is not allowed in state {}", proto::to_string(e),
                    proto::to_string(state_));
      error_text_ = std::string("unexpected ") + proto::to_string(e);
    }
    spdlog::trace("{} --{}--> {}", proto::to_string(state_), proto::to_string(e),
                  proto::to_string(t.next));
    state_ = t.next;
    if (t.outcome && !outcome_) outcome_ = t.outcome;
    for (SenderAction a : t.actions) perform(a);
  }
  dispatching_ = false;
}

void SendSession::perform(SenderAction action) {
  switch (action) {
    case SenderAction::ResolveRoute:
      waiting_for_ = "route resolution";
      id_.resolve_route(
          std::chrono::duration_cast<std::chrono::milliseconds>(options_.connect_timeout));
      break;
    case SenderAction::Connect: {
      waiting_for_ = "the connection to be accepted";
      endpoint_.emplace(id_, kRecvDepth, kSendDepth, kMaxActiveSlots + 8);
      epoll_.add(endpoint_->completion_fd(), EPOLLIN, kTagCq);
      rdma_conn_param param = reliable_conn_param();
      id_.set_ack_timeout(kAckTimeoutExponent);
      id_.connect(param);
      break;
    }
    case SenderAction::SendHello:
      established_ = Clock::now();
      stats_.connect_seconds = seconds_between(started_, established_);
      spdlog::info("connected to {}", id_.peer_address());
      waiting_for_ = "the receiver's answer to Hello";
      extend_deadline(options_.timeout);
      post(proto::Hello{file_.size(), digest_, options_.chunk_size_hint, options_.name});
      break;
    case SenderAction::StartData:
      start_data();
      break;
    case SenderAction::SendMore:
      pump_data();
      break;
    case SenderAction::SendDone:
      done_sent_ = Clock::now();
      stats_.data_seconds = seconds_between(data_started_, done_sent_);
      waiting_for_ = "the verdict";
      post(proto::Done{file_.size()});
      break;
    case SenderAction::SendId:
      waiting_for_ = "the answer to the id";
      post(proto::Id{*options_.id});
      break;
    case SenderAction::SendBye:
      post(proto::Bye{});
      break;
    case SenderAction::SendError:
      post(proto::Error{error_code_, error_text_.substr(0, proto::kMaxTextBytes)});
      break;
    case SenderAction::Disconnect:
      waiting_for_ = "the disconnect to complete";
      extend_deadline(kCloseGrace);
      disconnect_pending_ = true;
      disconnect_when_drained();
      break;
    case SenderAction::Finish:
      break;
  }
}

void SendSession::post(const proto::Message& message) {
  if (!endpoint_) return;
  auto index = endpoint_->send(message);
  if (!index) throw std::runtime_error("no free send buffer: the receiver is not completing sends");
  if (*index >= send_to_slot_.size()) send_to_slot_.resize(*index + 1, -1);
  send_to_slot_[*index] = -1;
}

void SendSession::disconnect_when_drained() {
  // Disconnecting moves the QP to error and flushes what is still queued; letting our
  // last message (Done, Id, Bye or Error) complete first means the receiver gets it.
  if (disconnect_pending_ && !disconnected_ && endpoint_ && endpoint_->sends_in_flight() == 0) {
    disconnected_ = true;
    id_.disconnect();
  }
}

void SendSession::start_data() {
  const auto& a = accept_;
  if (a.slot_size > kMaxSlotSize) {
    spdlog::error("the receiver offers {} slots, above the {} this sender supports",
                  proto::format_size(a.slot_size), proto::format_size(kMaxSlotSize));
    error_text_ = "slot size too large";
    dispatch(SenderEvent::ProtocolViolation);
    return;
  }
  data_started_ = Clock::now();
  waiting_for_ = "credits from the receiver";
  progress_.emplace(progress_mode_, "sending", file_.size());
  plan_ = proto::ChunkPlan{file_.size(), a.slot_size};
  active_slots_ = std::min(a.slot_count, kMaxActiveSlots);
  // Slots become writable one by one as their Credits (with their keys) arrive.
  slot_rkey_.assign(a.slot_count, 0);
  slot_credited_.assign(a.slot_count, false);
  slot_busy_.assign(a.slot_count, false);
  slot_length_.assign(a.slot_count, 0);
  slot_offset_.assign(a.slot_count, 0);
  if (plan_.chunk_count() > 0) {
    const std::size_t chunk_slots =
        static_cast<std::size_t>(std::min<std::uint64_t>(active_slots_, plan_.chunk_count()));
    active_slots_ = static_cast<std::uint32_t>(chunk_slots);
    // Copying is the default: pinning page-cache pages cost more than copying them where
    // it was measured (Soft-RoCE: 2.0 s of registration against 0.6 s of copying per
    // 256 MiB, both on the event loop; docs/BENCHMARKS.md). --zero-copy asks for it.
    if (options_.zero_copy && !options_.inject_corruption) start_zero_copy();
    if (!file_windows_) {
      staging_ = AlignedBuffer(chunk_slots * a.slot_size);
      staging_mr_.emplace(endpoint_->pd().get(), staging_.data(), staging_.size(), 0);
    }
  }
  stats_.zero_copy = file_windows_.has_value();
  spdlog::debug("data phase: {} chunks of {}, {} slots in flight, {}", plan_.chunk_count(),
                proto::format_size(a.slot_size), active_slots_,
                file_windows_ ? "zero-copy from the file's mapping" : "copied through a buffer");
  pump_data();
}

void SendSession::start_zero_copy() {
  const std::uint64_t chunk = accept_.slot_size;
  const std::uint64_t in_flight = chunk * active_slots_;
  const std::uint64_t chunks = std::max<std::uint64_t>(
      active_slots_, std::min(kFileWindowBytes, in_flight * kFileWindowsPerFlight) / chunk);
  const std::uint64_t window = chunks * chunk;
  try {
    file_windows_.emplace(endpoint_->pd().get(), file_.map(), window);
    file_windows_->register_ahead(0);  // fails here, not mid-transfer, if it cannot work
  } catch (const std::exception& e) {
    // A file system that cannot be mapped, or a memlock limit too low to pin a window:
    // copying through a small registered buffer still works.
    spdlog::warn("zero-copy unavailable, copying through a buffer instead: {}", e.what());
    file_windows_.reset();
  }
}

void SendSession::pump_data() {
  if (state_ != SenderState::Sending) return;
  const std::uint64_t count = plan_.chunk_count();
  for (std::uint32_t s = 0; s < active_slots_ && next_chunk_ < count; ++s) {
    if (!slot_credited_[s] || slot_busy_[s]) continue;
    const std::uint64_t offset = plan_.offset(next_chunk_);
    const std::uint32_t length = plan_.length(next_chunk_);
    std::span<const std::uint8_t> local;
    std::uint32_t lkey = 0;
    if (file_windows_) {
      lkey = file_windows_->acquire(offset, length);
      local = file_windows_->bytes(offset, length);
    } else {
      std::uint8_t* buffer = staging_.data() + static_cast<std::size_t>(s) * accept_.slot_size;
      read_fully(file_.fd(), buffer, length, offset);
      // Read ahead, asynchronously, the chunk this slot will carry next, so that its pread
      // finds the page cache warm even when the hashing pass's pages have been evicted (a
      // file larger than memory). Advisory: failure changes nothing but speed.
      const std::uint64_t in_flight = std::uint64_t{active_slots_} * accept_.slot_size;
      (void)::posix_fadvise(file_.fd(), static_cast<off_t>(offset + in_flight),
                            static_cast<off_t>(length), POSIX_FADV_WILLNEED);
      if (options_.inject_corruption && *options_.inject_corruption >= offset &&
          *options_.inject_corruption < offset + length) {
        buffer[*options_.inject_corruption - offset] ^= 0xFF;
        spdlog::warn("testing: corrupted the byte at offset {}", *options_.inject_corruption);
      }
      local = {buffer, length};
      lkey = staging_mr_->lkey();
    }
    endpoint_->post_write(local, lkey,
                          accept_.region_addr + static_cast<std::uint64_t>(s) * accept_.slot_size,
                          slot_rkey_[s], false, s);
    auto index = endpoint_->send(proto::Chunk{offset, length, s});
    if (!index) throw std::logic_error("send queue exhausted by chunks");
    if (*index >= send_to_slot_.size()) send_to_slot_.resize(*index + 1, -1);
    send_to_slot_[*index] = s;
    slot_credited_[s] = false;
    slot_busy_[s] = true;
    slot_length_[s] = length;
    slot_offset_[s] = offset;
    ++next_chunk_;
    stats_.bytes += length;
  }
  // Pin the next window while the writes just posted are on the wire. Best effort: a
  // memlock limit that allows the two windows start_zero_copy pinned but not a third
  // only means acquire() registers that window when its first chunk is due.
  if (file_windows_ && next_chunk_ < count) {
    try {
      file_windows_->register_ahead(plan_.offset(next_chunk_));
    } catch (const std::exception& e) {
      spdlog::debug("not registering ahead: {}", e.what());
    }
  }
  if (next_chunk_ == count && !all_sent_signalled_) {
    for (std::uint32_t s = 0; s < active_slots_; ++s)
      if (slot_busy_[s]) return;
    all_sent_signalled_ = true;
    if (progress_) progress_->finish();
    if (file_windows_) {
      spdlog::debug("registering and releasing the file's windows took {:.3f}s",
                    std::chrono::duration<double>(file_windows_->registration_time()).count());
    }
    dispatch(SenderEvent::AllDataSent);
  }
}

void SendSession::on_cm_event() {
  while (auto event = channel_.try_get()) {
    const rdma_cm_event_type type = event->type();
    const int status = event->status();
    event->ack();  // before anything that might destroy the id
    spdlog::debug("cm event {} (status {})", rdma_event_str(type), status);
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        dispatch(SenderEvent::AddressResolved);
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED:
        require_device(id_.verbs(), options_.device);
        dispatch(SenderEvent::RouteResolved);
        break;
      case RDMA_CM_EVENT_ESTABLISHED:
        dispatch(SenderEvent::Established);
        break;
      case RDMA_CM_EVENT_REJECTED:
        spdlog::error("{}", connect_failure_message(type, status, options_.host, options_.port));
        dispatch(SenderEvent::ConnectFailed);
        break;
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_CONNECT_ERROR:
        spdlog::error("{}", connect_failure_message(type, status, options_.host, options_.port));
        dispatch(SenderEvent::ConnectFailed);
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        // The receiver disconnects right after its last message (a verdict, the secret):
        // take what already arrived before concluding the connection was lost.
        if (endpoint_) on_completions();
        if (state_ == SenderState::Done) break;
        if (state_ != SenderState::Closing) spdlog::error("the receiver disconnected");
        dispatch(SenderEvent::Disconnected);
        break;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        spdlog::error("the RDMA device was removed");
        dispatch(SenderEvent::TransportFailed);
        break;
      default:
        break;
    }
  }
}

void SendSession::on_completions() {
  endpoint_->drain_completions(completions_);
  for (const ibv_wc& wc : completions_) {
    if (wc.status != IBV_WC_SUCCESS) {
      if (state_ == SenderState::Closing || state_ == SenderState::Done) continue;  // flushes
      spdlog::error("RDMA completion error: {} (while waiting for {})",
                    ibv_wc_status_str(wc.status), waiting_for_);
      dispatch(SenderEvent::TransportFailed);
      return;
    }
    switch (wr_kind(wc.wr_id)) {
      case WorkKind::Recv: {
        extend_deadline(state_ == SenderState::Closing ? kCloseGrace : options_.timeout);
        auto decoded = endpoint_->take_received(wc);
        if (auto* failure = std::get_if<proto::DecodeFailure>(&decoded)) {
          spdlog::error("malformed message from the receiver: {} ({})",
                        proto::to_string(failure->error), failure->detail);
          error_text_ = "malformed message";
          dispatch(SenderEvent::ProtocolViolation);
        } else {
          on_message(std::get<proto::Message>(decoded));
        }
        break;
      }
      case WorkKind::Send: {
        const std::uint32_t index = wr_index(wc.wr_id);
        endpoint_->send_completed(index);
        if (index < send_to_slot_.size() && send_to_slot_[index] >= 0) {
          const auto slot = static_cast<std::size_t>(send_to_slot_[index]);
          slot_busy_[slot] = false;
          // The Chunk's SEND completed, so the WRITE before it did too: those bytes are
          // at the receiver.
          bytes_completed_ += slot_length_[slot];
          if (file_windows_) file_windows_->release(slot_offset_[slot]);
          if (progress_) progress_->update(bytes_completed_);
          send_to_slot_[index] = -1;
          pump_data();
        }
        disconnect_when_drained();
        break;
      }
      case WorkKind::Write:
        break;
    }
  }
}

void SendSession::on_message(const proto::Message& message) {
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, proto::Accept>) {
          accept_ = m;
          dispatch(SenderEvent::GotAccept);
        } else if constexpr (std::is_same_v<T, proto::Reject>) {
          spdlog::error("rejected by the receiver: {}{}{}", proto::to_string(m.reason),
                        m.text.empty() ? "" : ": ", proto::escape_for_log(m.text));
          dispatch(SenderEvent::GotReject);
        } else if constexpr (std::is_same_v<T, proto::Credit>) {
          if (m.slot >= slot_credited_.size() || slot_credited_[m.slot]) {
            spdlog::error("the receiver credited slot {} which it had not been given", m.slot);
            error_text_ = "bad credit";
            dispatch(SenderEvent::ProtocolViolation);
            return;
          }
          slot_credited_[m.slot] = true;
          slot_rkey_[m.slot] = m.rkey;
          dispatch(SenderEvent::GotCredit);
        } else if constexpr (std::is_same_v<T, proto::Verdict>) {
          stats_.verify_seconds = seconds_between(done_sent_, Clock::now());
          if (m.code == proto::VerdictCode::Good) {
            spdlog::info("verdict: good (SHA-256 {})", to_hex(digest_));
            dispatch(SenderEvent::GotVerdictGood);
          } else if (m.code == proto::VerdictCode::StorageError) {
            spdlog::error(
                "verdict: the receiver could not store the file (for example its disk is full)");
            dispatch(SenderEvent::GotVerdictFailed);
          } else {
            spdlog::error("verdict: bad ({}); sent SHA-256 {}, receiver computed {}",
                          proto::to_string(m.code), to_hex(digest_), to_hex(m.received_sha256));
            dispatch(SenderEvent::GotVerdictBad);
          }
        } else if constexpr (std::is_same_v<T, proto::Secret>) {
          secret_ = m.secret;
          dispatch(SenderEvent::GotSecret);
        } else if constexpr (std::is_same_v<T, proto::Denied>) {
          spdlog::error("the receiver denied the id");
          dispatch(SenderEvent::GotDenied);
        } else if constexpr (std::is_same_v<T, proto::Error>) {
          spdlog::error("the receiver aborted: {}{}{}", proto::to_string(m.code),
                        m.text.empty() ? "" : ": ", proto::escape_for_log(m.text));
          dispatch(SenderEvent::GotError);
        } else {
          spdlog::error("unexpected {} from the receiver",
                        proto::to_string(proto::type_of(message)));
          error_text_ = "unexpected message";
          dispatch(SenderEvent::GotUnexpected);
        }
      },
      message);
}

void SendSession::on_timer() {
  (void)timer_.read_expirations();
  if (progress_ && state_ == SenderState::Sending) progress_->refresh();
  if (Clock::now() < deadline_) return;
  if (state_ != SenderState::Closing) {
    spdlog::error("timed out waiting for {}", waiting_for_);
    error_code_ = proto::ErrorCode::Timeout;
    error_text_ = "sender timed out";
  }
  dispatch(SenderEvent::Timeout);
}

}  // namespace rdmax::sender
