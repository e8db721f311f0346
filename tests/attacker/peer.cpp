#include "peer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "common/cli/error_hints.hpp"
#include "common/rdma/connection_params.hpp"

namespace rdmax::attacker {
namespace {
constexpr std::uint32_t kRecvDepth = 64;  // as rdma-send: enough for any Accept we use
constexpr std::uint32_t kSendDepth = 16;
constexpr std::uint32_t kWriteWrs = 16;
constexpr std::size_t kMinLocalBytes = 128;
// Raw SENDs use wr_ids of kind Send above the endpoint's own send indices.
constexpr std::uint32_t kRawIndexBase = 1u << 20;
}  // namespace

void note(const std::string& text) {
  std::fprintf(stderr, "rdmax-attacker: %s\n", text.c_str());
}

std::string to_hex_u64(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(value));
  return text;
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

Peer::Peer(const Options& options, std::string label, std::uint32_t raw_slots)
    : options_(options),
      label_(std::move(label)),
      raw_slots_(std::max<std::uint32_t>(raw_slots, 1)),
      id_(channel_) {
  channel_.set_nonblocking();
}

void Peer::connect(std::size_t local_bytes) {
  const auto bound = std::chrono::milliseconds(options_.timeout_s * 1000);
  id_.resolve_addr(options_.host.c_str(), options_.port, bound);
  expect_cm(RDMA_CM_EVENT_ADDR_RESOLVED);
  id_.resolve_route(bound);
  expect_cm(RDMA_CM_EVENT_ROUTE_RESOLVED);
  endpoint_.emplace(id_.verbs(), kRecvDepth, kSendDepth, kWriteWrs + raw_slots_);
  qp_.emplace(id_, endpoint_->pd().get(), endpoint_->qp_attributes());
  endpoint_->attach(qp_->get());
  local_ = AlignedBuffer(std::max(local_bytes, kMinLocalBytes));
  // The attacker's own memory needs no remote access at all.
  local_mr_.emplace(endpoint_->pd().get(), local_.data(), local_.size(), IBV_ACCESS_LOCAL_WRITE);
  raw_ = AlignedBuffer(raw_slots_ * kRawBytes);
  raw_mr_.emplace(endpoint_->pd().get(), raw_.data(), raw_.size(), IBV_ACCESS_LOCAL_WRITE);
  raw_busy_.assign(raw_slots_, false);
  // As our programs connect: a hostile peer that dies unheard must be found out too.
  rdma_conn_param param = reliable_conn_param();
  id_.connect(param);
  expect_cm(RDMA_CM_EVENT_ESTABLISHED);
  established_at_ = Clock::now();
  connected_ = true;
  note(label_ + ": connected to " + id_.peer_address());
}

void Peer::send(const proto::Message& message, std::uint16_t version) {
  if (!endpoint_->send(message, version)) throw SetupError(label_ + ": no free send buffer");
}

void Peer::send_raw(std::span<const std::uint8_t> bytes) {
  if (bytes.size() > kRawBytes) throw std::logic_error("send_raw: message too long");
  // Take the next free raw buffer; wait (bounded) for one to complete if all are busy.
  const auto deadline = Clock::now() + std::chrono::seconds(options_.timeout_s);
  std::optional<std::uint32_t> slot;
  while (!slot) {
    for (std::uint32_t i = 0; i < raw_slots_ && !slot; ++i) {
      const std::uint32_t candidate = (next_raw_ + i) % raw_slots_;
      if (!raw_busy_[candidate]) slot = candidate;
    }
    if (!slot && (qp_failed_ || !pump(deadline)))
      throw SetupError(label_ + ": no raw send buffer completed (" + ended_how() + ")");
  }
  next_raw_ = (*slot + 1) % raw_slots_;
  std::uint8_t* buffer = raw_.data() + static_cast<std::size_t>(*slot) * kRawBytes;
  std::copy(bytes.begin(), bytes.end(), buffer);
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(buffer);
  sge.length = static_cast<std::uint32_t>(bytes.size());
  sge.lkey = raw_mr_->lkey();
  ibv_send_wr wr{};
  wr.wr_id = make_wr_id(WorkKind::Send, kRawIndexBase + *slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int err = ::ibv_post_send(qp_->get(), &wr, &bad); err != 0)
    throw SetupError(label_ + ": ibv_post_send (raw): " + std::strerror(err));
  raw_busy_[*slot] = true;
}

std::optional<proto::Message> Peer::next_message() {
  const auto deadline = Clock::now() + std::chrono::seconds(options_.timeout_s);
  while (messages_.empty() && !qp_failed_ && !disconnected_ && pump(deadline)) {
  }
  if (messages_.empty()) return std::nullopt;
  proto::Message m = std::move(messages_.front());
  messages_.pop_front();
  return m;
}

std::vector<proto::Message> Peer::take_messages() {
  std::vector<proto::Message> out(std::make_move_iterator(messages_.begin()),
                                  std::make_move_iterator(messages_.end()));
  messages_.clear();
  return out;
}

WriteResult Peer::write(std::size_t local_offset, std::size_t length, std::uint64_t addr,
                        std::uint32_t rkey) {
  const std::uint32_t index = next_write_++;
  endpoint_->post_write({local_.data() + local_offset, length}, local_mr_->lkey(), addr, rkey, true,
                        index);
  const auto deadline = Clock::now() + std::chrono::seconds(options_.timeout_s);
  while (!writes_.contains(index) && pump(deadline)) {
  }
  WriteResult r;
  if (auto it = writes_.find(index); it != writes_.end()) r.status = it->second;
  return r;
}

bool Peer::wait_disconnected(std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  while (!disconnected_ && pump(deadline)) {
  }
  return disconnected_;
}

void Peer::poll_for(std::chrono::milliseconds within, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + within;
  while (!done() && pump(deadline)) {
  }
}

void Peer::wait_all_disconnected(const std::vector<Peer*>& peers, Clock::time_point deadline) {
  std::vector<pollfd> fds;
  for (;;) {
    const bool all =
        std::all_of(peers.begin(), peers.end(), [](const Peer* p) { return p->disconnected_; });
    const auto now = Clock::now();
    if (all || now >= deadline) return;
    fds.clear();
    for (const Peer* p : peers) p->add_pollfds(fds);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 200))) < 0 &&
        errno != EINTR)
      throw std::runtime_error("poll failed");
    for (Peer* p : peers) p->service();
  }
}

std::string Peer::ended_how() const {
  if (qp_failed_) return std::string("queue pair failed: ") + ibv_wc_status_str(first_error_);
  if (disconnected_) return "the receiver disconnected";
  return "timed out after " + std::to_string(options_.timeout_s) + "s";
}

std::string Peer::describe(const proto::Message& m) {
  std::string detail = proto::to_string(proto::type_of(m));
  if (auto* r = std::get_if<proto::Reject>(&m))
    detail += std::string("(") + to_string(r->reason) + ": \"" + r->text + "\")";
  if (auto* e = std::get_if<proto::Error>(&m))
    detail += std::string("(") + to_string(e->code) + ": \"" + e->text + "\")";
  if (auto* v = std::get_if<proto::Verdict>(&m))
    detail += std::string("(") + to_string(v->code) + ")";
  if (auto* r = std::get_if<proto::Refuse>(&m))
    detail += "(entry " + std::to_string(r->entry) + ", " + to_string(r->reason) + ": \"" +
              r->text + "\")";
  if (auto* t = std::get_if<proto::Take>(&m)) detail += "(entry " + std::to_string(t->entry) + ")";
  if (auto* v = std::get_if<proto::FileVerdict>(&m))
    detail += "(entry " + std::to_string(v->entry) + ", " + to_string(v->code) + ")";
  return detail;
}

void Peer::close() noexcept {
  if (!connected_) return;
  connected_ = false;
  id_.disconnect();
  try {
    wait_disconnected(std::chrono::seconds(2));
  } catch (...) {
  }
}

// Waits for one fd to become readable (bounded by `deadline`) and handles what arrived.
// Returns false once the deadline has passed.
bool Peer::pump(Clock::time_point deadline) {
  const auto now = Clock::now();
  if (now >= deadline) return false;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
  std::vector<pollfd> fds;
  add_pollfds(fds);
  if (::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 1000))) < 0 &&
      errno != EINTR)
    throw std::runtime_error("poll failed");
  service();
  return true;
}

void Peer::add_pollfds(std::vector<pollfd>& fds) const {
  fds.push_back({channel_.fd(), POLLIN, 0});
  if (endpoint_) fds.push_back({endpoint_->completion_fd(), POLLIN, 0});
}

// Handles whatever has arrived, without waiting. Completions are drained after the CM
// events, so a message that preceded DISCONNECTED is never missed.
void Peer::service() {
  while (auto event = channel_.try_get()) {
    const auto type = event->type();
    event->ack();
    if (type == RDMA_CM_EVENT_DISCONNECTED && !disconnected_) {
      disconnected_ = true;
      disconnected_at_ = Clock::now();
    }
  }
  if (endpoint_) handle_completions();
}

void Peer::handle_completions() {
  endpoint_->drain_completions(completions_);
  for (const ibv_wc& wc : completions_) {
    const WorkKind kind = wr_kind(wc.wr_id);
    const std::uint32_t index = wr_index(wc.wr_id);
    const bool raw = kind == WorkKind::Send && index >= kRawIndexBase;
    if (kind == WorkKind::Write) writes_[index] = wc.status;
    if (raw) {
      if (index - kRawIndexBase < raw_slots_) raw_busy_[index - kRawIndexBase] = false;
      ++(wc.status == IBV_WC_SUCCESS ? raw_ok_ : raw_failed_);
    }
    if (wc.status != IBV_WC_SUCCESS) {
      if (!qp_failed_) {
        first_error_ = wc.status;
        note(label_ + ": completion error " + ibv_wc_status_str(wc.status) + " (vendor_err " +
             std::to_string(wc.vendor_err) + ", " +
             (kind == WorkKind::Write  ? "write"
              : raw                    ? "raw send"
              : kind == WorkKind::Send ? "send"
                                       : "recv") +
             ")");
      }
      qp_failed_ = true;
      continue;
    }
    if (kind == WorkKind::Send && !raw) {
      endpoint_->send_completed(index);
    } else if (kind == WorkKind::Recv) {
      auto decoded = endpoint_->take_received(wc);
      if (auto* m = std::get_if<proto::Message>(&decoded)) {
        messages_.push_back(std::move(*m));
        last_message_at_ = Clock::now();
      } else {
        note(label_ + ": undecodable message: " + std::get<proto::DecodeFailure>(decoded).detail);
      }
    }
  }
}

void Peer::expect_cm(rdma_cm_event_type wanted) {
  const auto deadline = Clock::now() + std::chrono::seconds(options_.timeout_s);
  while (Clock::now() < deadline) {
    pollfd fd{channel_.fd(), POLLIN, 0};
    (void)::poll(&fd, 1, 200);
    if (auto event = channel_.try_get()) {
      const auto type = event->type();
      const int status = event->status();
      const std::string words = cm_reject_words(event->get());  // valid until the ack
      event->ack();
      if (type == wanted) return;
      if (type == RDMA_CM_EVENT_REJECTED)
        throw ConnectRefused(
            label_ + ": the receiver refused the connection" + (words.empty() ? "" : ": " + words),
            words);
      throw SetupError(label_ + ": expected " + rdma_event_str(wanted) + ", got " +
                       rdma_event_str(type) + " (status " + std::to_string(status) + ")");
    }
  }
  throw SetupError(label_ + ": no " + rdma_event_str(wanted) + " within " +
                   std::to_string(options_.timeout_s) + "s");
}

// ---------------------------------------------------------------------------------
// Payload and sessions
// ---------------------------------------------------------------------------------
Payload make_payload(const Options& options) {
  Payload p;
  p.bytes.resize(options.size);
  std::mt19937_64 random(std::random_device{}());
  for (auto& b : p.bytes) b = static_cast<std::uint8_t>(random());
  Sha256 hash;
  hash.update(std::span<const std::uint8_t>(p.bytes));
  p.digest = hash.finish();
  if (!options.save.empty()) {
    std::ofstream out(options.save, std::ios::binary);
    out.write(reinterpret_cast<const char*>(p.bytes.data()),
              static_cast<std::streamsize>(p.bytes.size()));
    if (!out) throw SetupError("cannot write " + options.save);
  }
  return p;
}

Session open_session(const Options& options, const Payload& payload, const std::string& name) {
  Session s;
  s.peer = std::make_unique<Peer>(options, name);
  s.peer->connect(payload.bytes.size());
  std::copy(payload.bytes.begin(), payload.bytes.end(), s.peer->local());
  s.peer->send(proto::Hello{payload.bytes.size(), payload.digest, 0, name});
  s.accept = s.peer->expect_message<proto::Accept>("Accept");
  s.slot_rkey.assign(s.accept.slot_count, s.accept.region_rkey);
  // An older receiver announced one key for the whole region and sent no first Credits;
  // an empty file has no chunk, hence no Credit.
  s.held.assign(s.accept.slot_count, s.accept.region_rkey != 0);
  const bool credits = s.accept.region_rkey == 0 && !payload.bytes.empty();
  for (std::uint32_t i = 0; i < s.accept.slot_count && credits; ++i) {
    auto c = s.peer->expect_message<proto::Credit>("first Credit");
    if (c.slot >= s.accept.slot_count || s.held[c.slot])
      throw SetupError("bad first Credit for slot " + std::to_string(c.slot));
    s.slot_rkey[c.slot] = c.rkey;
    s.held[c.slot] = true;
  }
  std::string keys;
  for (auto k : s.slot_rkey) keys += " 0x" + to_hex_u64(k);
  note(name + ": Accept addr 0x" + to_hex_u64(s.accept.region_addr) + ", " +
       std::to_string(s.accept.slot_count) + " x " + std::to_string(s.accept.slot_size) +
       " bytes; slot rkeys" + keys);
  return s;
}

std::uint64_t slot_addr(const proto::Accept& a, std::uint32_t slot) {
  return a.region_addr + static_cast<std::uint64_t>(slot) * a.slot_size;
}

void write_chunk(Session& s, std::uint64_t index, std::uint32_t slot, std::uint64_t file_size) {
  const std::uint64_t offset = index * s.accept.slot_size;
  const auto length =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(s.accept.slot_size, file_size - offset));
  auto r = s.peer->write(offset, length, slot_addr(s.accept, slot), s.slot_rkey[slot]);
  if (!r.ok()) throw SetupError("a legitimate chunk write failed: " + r.describe());
  s.peer->send(proto::Chunk{offset, length, slot});
  s.held[slot] = false;
}

std::uint32_t take_credit(Session& s, std::uint32_t slot) {
  auto c = s.peer->expect_message<proto::Credit>("Credit");
  if (c.slot != slot) throw SetupError("Credit for slot " + std::to_string(c.slot));
  const std::uint32_t old = s.slot_rkey[slot];
  s.slot_rkey[slot] = c.rkey;
  s.held[slot] = true;
  note("Credit slot " + std::to_string(slot) + ": rkey 0x" + to_hex_u64(old) + " -> 0x" +
       to_hex_u64(c.rkey));
  return old;
}

}  // namespace rdmax::attacker
