// rdmax-attacker: a hostile rdmax sender for the security tests (docs/SECURITY.md).
//
// It connects to rdma-recv with real verbs through rdma_cm, speaks the protocol well
// enough to be accepted (Hello with the correct SHA-256 of a file it generates), and then
// tries one RDMA WRITE the receiver must refuse, or guesses ids. It is deliberately
// sequential: every wait polls one fd with a bound, no event loop.
//
// Output: one line on stdout per run, "attack NAME: refused (STATUS)" (exit 0) or
// "attack NAME: SUCCEEDED ..." (exit 1); details of each step go to stderr. Exit 2 is a
// usage error, 3 means the attack could not be set up (no connection, the receiver
// rejected the offer, a control write that should have worked failed, a timeout).
//
// Every attack write is preceded by a control write on the same queue pair with a key
// that is valid (or by a whole good transfer), so "refused" means refused because of
// the key or the address, not because this peer is broken.

#include <poll.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/endpoint.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/memory_region.hpp"
#include "common/sha256.hpp"
#include "protocol/wire.hpp"

namespace rdmax::attacker {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitRefused = 0;
constexpr int kExitSucceeded = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSetup = 3;
constexpr std::uint32_t kRecvDepth = 64;  // as rdma-send: enough for any Accept we use
constexpr std::uint32_t kSendDepth = 16;
constexpr std::uint32_t kWriteWrs = 16;
constexpr std::size_t kProbeBytes = 64;  // size of an attack write

struct Options {
  std::string command;
  std::string host;
  std::uint16_t port = 18515;
  int timeout_s = 10;
  std::uint64_t size = 150000;
  std::string tag = "attack";
  std::string save;  // where to store the generated file, for the caller to compare
};

// The attack could not be carried out: not a verdict on the receiver.
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string to_hex_u64(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(value));
  return text;
}

void note(const std::string& text) {
  std::fprintf(stderr, "rdmax-attacker: %s\n", text.c_str());
}

// The outcome of one RDMA WRITE: its completion status, or none within the timeout.
struct WriteResult {
  std::optional<ibv_wc_status> status;
  bool ok() const { return status && *status == IBV_WC_SUCCESS; }
  std::string describe() const {
    return status ? ibv_wc_status_str(*status) : "no completion within the timeout";
  }
};

// One RC connection to the receiver, driven synchronously.
class Peer {
 public:
  Peer(const Options& options, std::string label)
      : options_(options), label_(std::move(label)), id_(channel_) {
    channel_.set_nonblocking();
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;
  ~Peer() { close(); }

  // Resolves, connects and registers `local` (the bytes this peer writes from).
  void connect(std::size_t local_bytes) {
    const auto bound = std::chrono::milliseconds(options_.timeout_s * 1000);
    id_.resolve_addr(options_.host.c_str(), options_.port, bound);
    expect_cm(RDMA_CM_EVENT_ADDR_RESOLVED);
    id_.resolve_route(bound);
    expect_cm(RDMA_CM_EVENT_ROUTE_RESOLVED);
    endpoint_.emplace(id_, kRecvDepth, kSendDepth, kWriteWrs);
    local_ = AlignedBuffer(std::max<std::size_t>(local_bytes, 2 * kProbeBytes));
    // The attacker's own memory needs no remote access at all.
    local_mr_.emplace(endpoint_->pd().get(), local_.data(), local_.size(), IBV_ACCESS_LOCAL_WRITE);
    rdma_conn_param param{};
    param.initiator_depth = 1;
    param.responder_resources = 1;
    param.retry_count = 7;
    param.rnr_retry_count = 7;
    id_.connect(param);
    expect_cm(RDMA_CM_EVENT_ESTABLISHED);
    connected_ = true;
    note(label_ + ": connected to " + id_.peer_address());
  }

  std::uint8_t* local() { return local_.data(); }

  void send(const proto::Message& message) {
    if (!endpoint_->send(message)) throw SetupError(label_ + ": no free send buffer");
  }

  // The next message from the receiver, or nullopt if the connection ended or the
  // timeout passed first.
  std::optional<proto::Message> next_message() {
    const auto deadline = Clock::now() + std::chrono::seconds(options_.timeout_s);
    while (messages_.empty() && !qp_failed_ && !disconnected_ && pump(deadline)) {
    }
    if (messages_.empty()) return std::nullopt;
    proto::Message m = std::move(messages_.front());
    messages_.pop_front();
    return m;
  }

  // A message of type T; anything else (or nothing) is a setup failure.
  template <typename T>
  T expect_message(const char* what) {
    auto m = next_message();
    if (!m) throw SetupError(label_ + ": no " + what + " (" + ended_how() + ")");
    if (auto* t = std::get_if<T>(&*m)) return *t;
    std::string detail = proto::to_string(proto::type_of(*m));
    if (auto* r = std::get_if<proto::Reject>(&*m))
      detail += std::string(" ") + to_string(r->reason) + " " + r->text;
    if (auto* e = std::get_if<proto::Error>(&*m))
      detail += std::string(" ") + to_string(e->code) + " " + e->text;
    throw SetupError(label_ + ": expected " + what + ", got " + detail);
  }

  // RDMA WRITE of `length` bytes of local memory at `local_offset` to (addr, rkey); waits
  // for its (signaled) completion.
  WriteResult write(std::size_t local_offset, std::size_t length, std::uint64_t addr,
                    std::uint32_t rkey) {
    const std::uint32_t index = next_write_++;
    endpoint_->post_write({local_.data() + local_offset, length}, local_mr_->lkey(), addr, rkey,
                          true, index);
    const auto deadline = Clock::now() + std::chrono::seconds(options_.timeout_s);
    while (!writes_.contains(index) && pump(deadline)) {
    }
    WriteResult r;
    if (auto it = writes_.find(index); it != writes_.end()) r.status = it->second;
    return r;
  }

  // Waits (bounded) for the receiver to disconnect; true if it did.
  bool wait_disconnected(std::chrono::seconds within) {
    const auto deadline = Clock::now() + within;
    while (!disconnected_ && pump(deadline)) {
    }
    return disconnected_;
  }

  std::string ended_how() const {
    if (qp_failed_) return std::string("queue pair failed: ") + ibv_wc_status_str(first_error_);
    if (disconnected_) return "the receiver disconnected";
    return "timed out after " + std::to_string(options_.timeout_s) + "s";
  }

  void close() noexcept {
    if (!connected_) return;
    connected_ = false;
    (void)id_.disconnect();
    try {
      wait_disconnected(std::chrono::seconds(2));
    } catch (...) {
    }
  }

 private:
  // Waits for one fd to become readable (bounded by `deadline`) and handles what arrived.
  // Returns false once the deadline has passed.
  bool pump(Clock::time_point deadline) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    pollfd fds[2] = {{channel_.fd(), POLLIN, 0}, {-1, POLLIN, 0}};
    if (endpoint_) fds[1].fd = endpoint_->completion_fd();
    if (::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000))) < 0 && errno != EINTR)
      throw std::runtime_error("poll failed");
    while (auto event = channel_.try_get()) {
      const auto type = event->type();
      event->ack();
      if (type == RDMA_CM_EVENT_DISCONNECTED) disconnected_ = true;
    }
    if (endpoint_) handle_completions();
    return true;
  }

  void handle_completions() {
    endpoint_->drain_completions(completions_);
    for (const ibv_wc& wc : completions_) {
      const WorkKind kind = wr_kind(wc.wr_id);
      if (kind == WorkKind::Write) writes_[wr_index(wc.wr_id)] = wc.status;
      if (wc.status != IBV_WC_SUCCESS) {
        if (!qp_failed_) {
          first_error_ = wc.status;
          note(label_ + ": completion error " + ibv_wc_status_str(wc.status) + " (vendor_err " +
               std::to_string(wc.vendor_err) + ", " +
               (kind == WorkKind::Write  ? "write"
                : kind == WorkKind::Send ? "send"
                                         : "recv") +
               ")");
        }
        qp_failed_ = true;
        continue;
      }
      if (kind == WorkKind::Send) {
        endpoint_->send_completed(wr_index(wc.wr_id));
      } else if (kind == WorkKind::Recv) {
        auto decoded = endpoint_->take_received(wc);
        if (auto* m = std::get_if<proto::Message>(&decoded)) {
          messages_.push_back(std::move(*m));
        } else {
          note(label_ + ": undecodable message: " + std::get<proto::DecodeFailure>(decoded).detail);
        }
      }
    }
  }

  void expect_cm(rdma_cm_event_type wanted) {
    const auto deadline = Clock::now() + std::chrono::seconds(options_.timeout_s);
    while (Clock::now() < deadline) {
      pollfd fd{channel_.fd(), POLLIN, 0};
      (void)::poll(&fd, 1, 200);
      if (auto event = channel_.try_get()) {
        const auto type = event->type();
        const int status = event->status();
        event->ack();
        if (type == wanted) return;
        throw SetupError(label_ + ": expected " + rdma_event_str(wanted) + ", got " +
                         rdma_event_str(type) + " (status " + std::to_string(status) + ")");
      }
    }
    throw SetupError(label_ + ": no " + rdma_event_str(wanted) + " within " +
                     std::to_string(options_.timeout_s) + "s");
  }

  const Options& options_;
  std::string label_;
  bool connected_ = false;
  bool disconnected_ = false;
  bool qp_failed_ = false;
  ibv_wc_status first_error_ = IBV_WC_SUCCESS;
  std::uint32_t next_write_ = 0;
  std::deque<proto::Message> messages_;
  std::map<std::uint32_t, ibv_wc_status> writes_;
  std::vector<ibv_wc> completions_;
  // Destroyed in reverse: the cm_id (and QP) first, then the local MR, the endpoint
  // (CQ, PD), the channel. The same order as rdma-send.
  EventChannel channel_;
  std::optional<Endpoint> endpoint_;
  AlignedBuffer local_;
  std::optional<MemoryRegion> local_mr_;
  CmId id_;
};

// ---------------------------------------------------------------------------------
// The file offered in every Hello: random bytes, hashed here.
// ---------------------------------------------------------------------------------
struct Payload {
  std::vector<std::uint8_t> bytes;
  Digest sha256{};
};

Payload make_payload(const Options& options) {
  Payload p;
  p.bytes.resize(options.size);
  std::mt19937_64 random(std::random_device{}());
  for (auto& b : p.bytes) b = static_cast<std::uint8_t>(random());
  Sha256 hash;
  hash.update(std::span<const std::uint8_t>(p.bytes));
  p.sha256 = hash.finish();
  if (!options.save.empty()) {
    std::ofstream out(options.save, std::ios::binary);
    out.write(reinterpret_cast<const char*>(p.bytes.data()),
              static_cast<std::streamsize>(p.bytes.size()));
    if (!out) throw SetupError("cannot write " + options.save);
  }
  return p;
}

// A connected peer that offered `payload` under `name` and got an Accept, then the first
// Credit of every slot (docs/PROTOCOL.md 5.3: each slot has its own key).
struct Session {
  std::unique_ptr<Peer> peer;
  proto::Accept accept;
  std::vector<std::uint32_t> slot_rkey;  // the key this peer holds or last held per slot
  std::vector<bool> held;                // this peer holds the slot's credit
};

Session open_session(const Options& options, const Payload& payload, const std::string& name) {
  Session s;
  s.peer = std::make_unique<Peer>(options, name);
  s.peer->connect(payload.bytes.size());
  std::copy(payload.bytes.begin(), payload.bytes.end(), s.peer->local());
  s.peer->send(proto::Hello{payload.bytes.size(), payload.sha256, 0, name});
  s.accept = s.peer->expect_message<proto::Accept>("Accept");
  s.slot_rkey.assign(s.accept.slot_count, s.accept.region_rkey);
  // An older receiver announced one key for the whole region and sent no first Credits.
  s.held.assign(s.accept.slot_count, s.accept.region_rkey != 0);
  for (std::uint32_t i = 0; i < s.accept.slot_count && s.accept.region_rkey == 0; ++i) {
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

// Writes chunk `index` of the payload into `slot` and announces it with a Chunk.
void write_chunk(Session& s, std::uint64_t index, std::uint32_t slot, std::uint64_t file_size) {
  const std::uint64_t offset = index * s.accept.slot_size;
  const auto length =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(s.accept.slot_size, file_size - offset));
  auto r = s.peer->write(offset, length, slot_addr(s.accept, slot), s.slot_rkey[slot]);
  if (!r.ok()) throw SetupError("a legitimate chunk write failed: " + r.describe());
  s.peer->send(proto::Chunk{offset, length, slot});
  s.held[slot] = false;
}

// Waits for the Credit of `slot` and takes its new key; returns the key it replaced.
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

// A whole good transfer, one chunk at a time; returns after Verdict(Good).
void complete_transfer(Session& s, const Payload& payload) {
  const std::uint64_t size = payload.bytes.size();
  const std::uint64_t chunks = (size + s.accept.slot_size - 1) / s.accept.slot_size;
  for (std::uint64_t i = 0; i < chunks; ++i) {
    const auto slot = static_cast<std::uint32_t>(i % s.accept.slot_count);
    write_chunk(s, i, slot, size);
    // The receiver returns no slot after the last chunk (docs/PROTOCOL.md 5.4).
    if (i + 1 < chunks) (void)take_credit(s, slot);
  }
  s.peer->send(proto::Done{size});
  auto m = s.peer->next_message();
  // Trailing Credits (an older receiver credits the last chunk too) are not the answer.
  while (m && std::holds_alternative<proto::Credit>(*m)) m = s.peer->next_message();
  if (!m || !std::holds_alternative<proto::Verdict>(*m)) throw SetupError("no Verdict after Done");
  const auto& v = std::get<proto::Verdict>(*m);
  if (v.code != proto::VerdictCode::Good)
    throw SetupError(std::string("verdict ") + proto::to_string(v.code));
  note("verdict Good");
}

// Control: an in-bounds write with the key the receiver gave must succeed.
void control_write(Session& s, std::uint32_t slot) {
  auto r = s.peer->write(0, kProbeBytes, slot_addr(s.accept, slot), s.slot_rkey[slot]);
  if (!r.ok()) throw SetupError("control write with a valid key failed: " + r.describe());
  note("control write to slot " + std::to_string(slot) + " with its key: success");
}

// Reports one attack write: refused (exit 0) or succeeded (exit 1).
struct Verdicts {
  std::vector<std::string> refused;
  std::vector<std::string> succeeded;
  void add(const std::string& what, const WriteResult& r) {
    note(what + ": " + r.describe());
    (r.ok() ? succeeded : refused).push_back(what + ": " + r.describe());
  }
};

std::string file_name(const Options& o, const std::string& suffix) {
  return o.tag + "-" + o.command + suffix + ".bin";
}

// ---------------------------------------------------------------------------------
// Attacks
// ---------------------------------------------------------------------------------
void attack_write_after_verdict(const Options& o, const Payload& p, Verdicts& v) {
  Session s = open_session(o, p, file_name(o, ""));
  complete_transfer(s, p);
  // Prefer a slot whose credit this peer still holds: a key it was given and never used,
  // which only the end of the data phase can have revoked. Otherwise the last slot used.
  std::uint32_t slot = 0;
  bool held = false;
  for (std::uint32_t i = 0; i < s.accept.slot_count && !held; ++i) {
    if (s.held[i]) {
      slot = i;
      held = true;
    }
  }
  if (!held) {
    const std::uint64_t chunks = (p.bytes.size() + s.accept.slot_size - 1) / s.accept.slot_size;
    slot = static_cast<std::uint32_t>((chunks - 1) % s.accept.slot_count);
  }
  v.add("write to slot " + std::to_string(slot) + " after Verdict with " +
            (held ? "its unused credited key" : "the key of the last chunk"),
        s.peer->write(0, kProbeBytes, slot_addr(s.accept, slot), s.slot_rkey[slot]));
}

void attack_write_past_window(const Options& o, const Payload& p, Verdicts& v) {
  {
    Session s = open_session(o, p, file_name(o, "-1"));
    const std::uint32_t last = s.accept.slot_count - 1;
    control_write(s, last);
    const std::uint64_t end = slot_addr(s.accept, s.accept.slot_count);
    v.add("write at the window's end", s.peer->write(0, kProbeBytes, end, s.slot_rkey[last]));
  }
  // The refused write killed that queue pair: the straddling write needs a new one.
  Session s = open_session(o, p, file_name(o, "-2"));
  const std::uint32_t last = s.accept.slot_count - 1;
  control_write(s, last);
  const std::uint64_t end = slot_addr(s.accept, s.accept.slot_count);
  v.add("write straddling the window's end",
        s.peer->write(0, 2 * kProbeBytes, end - kProbeBytes, s.slot_rkey[last]));
}

void attack_stale_slot_key(const Options& o, const Payload& p, Verdicts& v) {
  if (p.bytes.size() == 0) throw SetupError("--size must be > 0 for this attack");
  Session s = open_session(o, p, file_name(o, ""));
  write_chunk(s, 0, 0, p.bytes.size());
  // The Credit proves the receiver consumed slot 0; the key it replaced must be dead.
  const std::uint32_t old = take_credit(s, 0);
  if (old == s.slot_rkey[0]) note("the Credit repeats the old rkey: it was never revoked");
  v.add("write to slot 0 with its old rkey after its Credit",
        s.peer->write(0, kProbeBytes, slot_addr(s.accept, 0), old));
}

void attack_cross_connection_key(const Options& o, const Payload& p, Verdicts& v) {
  Session a = open_session(o, p, file_name(o, "-a"));
  Session b = open_session(o, p, file_name(o, "-b"));
  control_write(a, 0);
  v.add("B's rkey and address on A's queue pair",
        a.peer->write(0, kProbeBytes, slot_addr(b.accept, 0), b.slot_rkey[0]));
}

void attack_key_after_reconnect(const Options& o, const Payload& p, Verdicts& v) {
  proto::Accept first;
  std::uint32_t first_rkey = 0;
  {
    Session s = open_session(o, p, file_name(o, "-1"));
    first = s.accept;
    first_rkey = s.slot_rkey[0];
    s.peer->close();
  }
  Session s = open_session(o, p, file_name(o, "-2"));
  control_write(s, 0);
  v.add("the first connection's slot 0 rkey and address on the second",
        s.peer->write(0, kProbeBytes, first.region_addr, first_rkey));
}

// After a good verdict, unknown ids until the receiver gives up. Returns the exit status.
int attack_id_guess(const Options& o, const Payload& p) {
  Session s = open_session(o, p, file_name(o, ""));
  complete_transfer(s, p);
  std::vector<unsigned> left;
  bool secret = false;
  for (int attempt = 1; attempt <= 5; ++attempt) {
    s.peer->send(proto::Id{"guess-" + std::to_string(attempt)});
    auto m = s.peer->next_message();
    if (!m) break;
    if (auto* d = std::get_if<proto::Denied>(&*m)) {
      left.push_back(d->attempts_left);
      note("Id guess-" + std::to_string(attempt) + ": Denied, attempts_left " +
           std::to_string(d->attempts_left));
      if (d->attempts_left == 0) break;
    } else if (std::get_if<proto::Secret>(&*m)) {
      secret = true;
      break;
    } else {
      note(std::string("Id answered with ") + proto::to_string(proto::type_of(*m)));
      break;
    }
  }
  const bool disconnected = s.peer->wait_disconnected(std::chrono::seconds(o.timeout_s));
  std::string counts;
  for (unsigned n : left) counts += (counts.empty() ? "" : " ") + std::to_string(n);
  const std::string summary = std::to_string(left.size()) + " attempts, attempts_left " +
                              (counts.empty() ? "none" : counts) +
                              (disconnected ? ", then disconnected" : ", NOT disconnected");
  if (secret) {
    std::printf("attack id-guess: SUCCEEDED (a guessed id got a secret; %s)\n", summary.c_str());
    return kExitSucceeded;
  }
  const bool refused = left == std::vector<unsigned>{2, 1, 0} && disconnected;
  std::printf("attack id-guess: %s (%s)\n", refused ? "refused" : "SUCCEEDED", summary.c_str());
  return refused ? kExitRefused : kExitSucceeded;
}

int run(const Options& o) {
  const Payload payload = make_payload(o);
  if (o.command == "id-guess") return attack_id_guess(o, payload);
  Verdicts v;
  if (o.command == "write-after-verdict") attack_write_after_verdict(o, payload, v);
  if (o.command == "write-past-window") attack_write_past_window(o, payload, v);
  if (o.command == "stale-slot-key") attack_stale_slot_key(o, payload, v);
  if (o.command == "cross-connection-key") attack_cross_connection_key(o, payload, v);
  if (o.command == "key-after-reconnect") attack_key_after_reconnect(o, payload, v);
  auto join = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& part : parts) s += (s.empty() ? "" : "; ") + part;
    return s;
  };
  if (!v.succeeded.empty()) {
    std::printf("attack %s: SUCCEEDED (%s)\n", o.command.c_str(), join(v.succeeded).c_str());
    return kExitSucceeded;
  }
  std::printf("attack %s: refused (%s)\n", o.command.c_str(), join(v.refused).c_str());
  return kExitRefused;
}

}  // namespace
}  // namespace rdmax::attacker

int main(int argc, char** argv) {
  using namespace rdmax::attacker;
  Options o;
  CLI::App app{"rdmax-attacker: a hostile rdmax sender for the security tests"};
  app.add_option("command", o.command, "the attack")
      ->required()
      ->check(CLI::IsMember({"write-after-verdict", "write-past-window", "stale-slot-key",
                             "cross-connection-key", "key-after-reconnect", "id-guess"}));
  app.add_option("-H,--host", o.host, "receiver address")->required();
  app.add_option("-p,--port", o.port, "receiver port");
  app.add_option("--timeout", o.timeout_s, "bound on every wait, seconds")
      ->check(CLI::Range(1, 600));
  app.add_option("--size", o.size, "size of the generated file offered in Hello")
      ->check(CLI::Range(1, 64 << 20));
  app.add_option("--tag", o.tag, "prefix of the file names offered (TAG-COMMAND[-n].bin)");
  app.add_option("--save", o.save, "also write the generated file here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::printf("attack %s: not carried out (%s)\n", o.command.c_str(), e.what());
    return kExitSetup;
  }
}
