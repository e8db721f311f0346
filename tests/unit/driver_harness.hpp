#pragma once
// Shared set-up for the driver tests: a real receiver Connection (and, in
// sender_session_rig.hpp, the sender's Connection) over a FakeTransport, with a real
// worker pool and a temporary directory.

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "common/crypto/auth_penalties.hpp"
#include "common/digest/blake3_tree.hpp"
#include "common/digest/merkle.hpp"
#include "common/digest/sha256.hpp"
#include "common/work/work_pool.hpp"
#include "fake_transport.hpp"
#include "protocol/secrets.hpp"
#include "protocol/sender_keys.hpp"
#include "receiver/connection.hpp"
#include "receiver/partial_store.hpp"
#include "sender/connection.hpp"
#include "sender/input_file.hpp"
#include "temp_dir.hpp"

namespace rdmax::test {

using Clock = std::chrono::steady_clock;

inline std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(rng());
  return out;
}

inline Digest sha256_of(std::span<const std::uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Whether a driver took `from` --`event`--> among its recorded steps from the `first`th on
// (DriverCore::step_log): which (state, event) row an input really raised.
inline bool took(const std::vector<DriverCore::Step>& steps, std::size_t first,
                 std::string_view from, std::string_view event) {
  for (std::size_t i = first; i < steps.size(); ++i)
    if (from == steps[i].from && event == steps[i].event) return true;
  return false;
}
// The steps from the `first`th on, for a failure's message.
inline std::string steps_since(const std::vector<DriverCore::Step>& steps, std::size_t first) {
  std::string out = "steps taken:";
  for (std::size_t i = first; i < steps.size(); ++i)
    out += std::string(" ") + steps[i].from + " --" + steps[i].event + "-->";
  return out;
}

// While it lives, every log line goes to a string instead of the console, trace level
// included (a failing test prints it).
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
    logger->set_level(spdlog::level::trace);
    logger->set_pattern("%l: %v");
    spdlog::set_default_logger(std::move(logger));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::size_t size() const { return out_.str().size(); }
  std::string since(std::size_t from) const { return out_.str().substr(from); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

// Runs the pool's completions until `done` holds (bounded: a bug fails, it does not hang).
inline bool run_pool_until(WorkPool& pool, const std::function<bool()>& done,
                           std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto give_up = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    pollfd fd{pool.ready_fd(), POLLIN, 0};
    ::poll(&fd, 1, 20);
    pool.run_completions();
  }
  return true;
}

// A receiver connection over a fake transport.
// Leaves in `partials` a partial of `path` holding the first `kept` bytes of `bytes`, durable,
// kept for the offer of `bytes` with `digest`, as an interrupted transfer leaves it.
inline void keep_partial_in(
    receiver::PartialStore& partials, const std::string& path,
    const std::vector<std::uint8_t>& bytes, std::uint32_t kept, const proto::Digest& digest,
    proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256) {
  auto handle = partials.open({path, bytes.size(), digest, algorithm}, 4096);
  ASSERT_TRUE(handle.has_value());
  ASSERT_EQ(::pwrite(handle->fd(), bytes.data(), kept, 0), static_cast<ssize_t>(kept));
  std::vector<merkle::Node> nodes;
  if (algorithm == proto::DigestAlgorithm::Blake3)
    blake3::nodes(0, std::span(bytes).first(kept), false, nodes);
  else
    merkle::BlockHasher().nodes(0, std::span(bytes).first(kept), nodes);
  handle->checkpoint(kept, nodes);
}

struct ReceiverHarness {
  ReceiverHarness() = default;
  // `threads` pool threads: with one, a PoolGate decides exactly how far the disk work gets.
  explicit ReceiverHarness(unsigned threads) : pool(threads) {}

  TempDir dir{"rdmax-driver"};
  receiver::ReceiverOptions options = [] {
    receiver::ReceiverOptions o;
    o.slot_size = 4096;
    o.slots = 4;
    // One open file per entry, as the rig counts them (direct I/O opens a second one:
    // output_file_direct_io_test covers it).
    o.direct_io = false;
    o.timeout = std::chrono::seconds(5);
    o.workers = 2;
    return o;
  }();
  proto::SecretStore secrets =
      std::get<proto::SecretStore>(proto::SecretStore::parse("alice s3cret\n"));
  WorkPool pool{2};
  receiver::ReceiverMetrics metrics{dir.fd()};
  receiver::ReceiverContext context{options, dir.fd(), &secrets, pool, metrics, 0};
  FakeTransport transport;
  // --senders (docs/PROTOCOL.md 7.8), when a test requires keys; the peer's address is
  // kPeerAddress.
  std::optional<proto::SenderKeyStore> sender_keys;
  AuthPenalties penalties;
  static constexpr const char* kPeerAddress = "192.0.2.9";
  std::optional<receiver::Connection> connection;

  void require_keys(std::string_view senders_file) {
    sender_keys = std::get<proto::SenderKeyStore>(proto::SenderKeyStore::parse(senders_file));
    context.sender_keys = &*sender_keys;
    context.penalties = &penalties;
  }
  // Constructed at CONNECT_REQUEST and established at once, as the daemon sees it mostly.
  void start() {
    connection.emplace(transport, "peer", context, kPeerAddress);
    connection->step_log().record();
    connection->on_established();
  }
  // As the daemon does: a connection is destroyed only once no job of it runs on the pool
  // (a discard may still be removing the temporary when a test ends).
  ~ReceiverHarness() {
    if (!connection) return;
    connection->abandon();
    run_pool_until(pool, [&] { return connection->idle(); });
    connection.reset();
  }
  ReceiverHarness(const ReceiverHarness&) = delete;
  ReceiverHarness& operator=(const ReceiverHarness&) = delete;
  void poll() { connection->poll(); }
  // The peer sends `message`; the connection handles it.
  void send(const proto::Message& message, std::uint16_t version = proto::kVersion1) {
    transport.deliver(message, version);
    poll();
  }
  bool settle(const std::function<bool()>& done) {
    return run_pool_until(pool, [&] {
      poll();
      return done();
    });
  }
  proto::ReceiverState state() const { return connection->state(); }
};

// Holds the pool's thread in jobs of its own (barriers 1, 2, ... in the order added): the
// work queued behind a barrier waits until it is opened, so a test decides how far the
// disk and hashing work gets, and what has finished when. With a one-thread pool the jobs
// queued before a barrier is reached have all run once it is.
class PoolGate {
 public:
  explicit PoolGate(WorkPool& pool) : queue_(pool) {}
  ~PoolGate() { open_all(); }  // a thread left waiting would keep the pool from stopping
  PoolGate(const PoolGate&) = delete;
  PoolGate& operator=(const PoolGate&) = delete;

  // Queues the next barrier.
  void add() {
    const int number = ++added_;
    queue_.post(
        [s = state_, number] {
          std::unique_lock lock(s->mutex);
          s->reached = number;
          s->changed.notify_all();
          s->changed.wait(lock, [&] { return s->opened >= number; });
        },
        [] {});
  }
  // Waits (bounded) until a thread waits at barrier `number`.
  bool reached(int number) {
    std::unique_lock lock(state_->mutex);
    return state_->changed.wait_for(lock, std::chrono::seconds(10),
                                    [&] { return state_->reached >= number; });
  }
  // Queues a barrier and waits until the thread holds there.
  bool hold() {
    add();
    return reached(added_);
  }
  // Lets the oldest closed barrier pass.
  void open_next() { open_until(state_->opened + 1); }
  void open_all() { open_until(INT_MAX); }
  int added() const { return added_; }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    int reached = 0;
    int opened = 0;
  };
  void open_until(int number) {
    std::lock_guard lock(state_->mutex);
    state_->opened = number;
    state_->changed.notify_all();
  }
  std::shared_ptr<State> state_ = std::make_shared<State>();
  int added_ = 0;
  WorkQueue queue_;
};

// Runs the completions of the jobs that have finished, once (after waiting, bounded, for one).
inline std::size_t run_pool_once(WorkPool& pool) {
  pollfd fd{pool.ready_fd(), POLLIN, 0};
  ::poll(&fd, 1, 10'000);
  return pool.run_completions();
}

// While it lives, writes past `bytes` into any file of this process fail with EFBIG, as
// a full disk fails them with ENOSPC (SIGXFSZ is ignored meanwhile). Keep its life short:
// it is process-wide.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lower = saved_;
    lower.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lower);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*previous_)(int) = SIG_DFL;
};

// Files under `dir` this process holds open: a temporary (named or O_TMPFILE) shows here
// even when it has no name in the directory.
inline std::size_t open_files_under(const std::filesystem::path& dir) {
  const std::string prefix = dir.string() + "/";
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target.string().starts_with(prefix)) ++n;
  }
  return n;
}

// A message with the rdmax header of `version` but an unknown type: it does not decode.
inline std::vector<std::uint8_t> undecodable(std::uint16_t version) {
  std::vector<std::uint8_t> bytes = proto::encode(proto::Bye{}, version);
  bytes[6] = 99;  // header.type
  return bytes;
}

// What a driver posted, as one line ("Error(1) Credit(0)"), so a failure shows all of it.
// The number is the message's code (Error, Reject, Verdict, Refuse, FileVerdict), Denied's
// attempts left, the slot of a Credit or a Chunk, Working's phase; none for the others.
struct Posted {
  proto::MessageType type;
  int code = -1;  // -1: any
};

inline int code_of(const proto::Message& message) {
  return std::visit(
      [](const auto& m) -> int {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, proto::Error> || std::is_same_v<M, proto::Verdict> ||
                      std::is_same_v<M, proto::FileVerdict>)
          return static_cast<int>(m.code);
        else if constexpr (std::is_same_v<M, proto::Reject> || std::is_same_v<M, proto::Refuse>)
          return static_cast<int>(m.reason);
        else if constexpr (std::is_same_v<M, proto::Denied>)
          return m.attempts_left;
        else if constexpr (std::is_same_v<M, proto::Credit> || std::is_same_v<M, proto::Chunk>)
          return static_cast<int>(m.slot);
        else if constexpr (std::is_same_v<M, proto::Working>)
          return static_cast<int>(m.phase);
        else
          return -1;
      },
      message);
}

inline std::string describe(const std::vector<Posted>& posted) {
  std::string text;
  for (const Posted& p : posted) {
    if (!text.empty()) text += ' ';
    text += proto::to_string(p.type);
    if (p.code >= 0) text += "(" + std::to_string(p.code) + ")";
  }
  return text.empty() ? "nothing" : text;
}

// What `transport` posted from message `from` on, described the way `want` asks: with the
// code where `want` names one.
inline std::string describe_sent(const FakeTransport& transport, std::size_t from,
                                 const std::vector<Posted>& want) {
  std::vector<Posted> got;
  for (std::size_t i = from; i < transport.sent.size(); ++i) {
    const auto& m = transport.sent[i].message;
    const std::size_t k = i - from;
    const bool coded = k < want.size() && want[k].code >= 0 && want[k].type == proto::type_of(m);
    got.push_back({proto::type_of(m), coded ? code_of(m) : -1});
  }
  return describe(got);
}

// The sender driver's view of rdma_cm: it hands out the fake transport, or fails as told.
struct ScriptedCm final : sender::SenderCm {
  FakeTransport& transport;
  Transport* instead = nullptr;  // handed out in its place (a decorator over it), if set
  int routes = 0;
  int connects = 0;
  bool fail_route = false;    // rdma_resolve_route fails
  bool fail_connect = false;  // creating the queue pair or rdma_connect fails
  explicit ScriptedCm(FakeTransport& t) : transport(t) {}
  void resolve_route() override {
    ++routes;
    if (fail_route) throw std::runtime_error("rdma_resolve_route: injected failure");
  }
  Transport& connect() override {
    ++connects;
    if (fail_connect) throw std::runtime_error("ibv_create_qp: injected failure");
    if (instead != nullptr) return *instead;
    return transport;
  }
};

// A receiver and a sender connected through their fakes, as RC would connect them: the
// sender's WRITE lands in the receiver's window before the Chunk that follows it is
// delivered, or fails there (dead or foreign key), which breaks the sender's queue pair
// (IBV_WC_REM_ACCESS_ERR) and flushes what it posted after; SENDs delivered complete.
// `Sender`: a harness with a FakeTransport `transport` and a `driver` to poll (the session
// driver's SessionHarness, sender_session_rig.hpp).
template <typename Sender>
struct LinkOf {
  LinkOf(ReceiverHarness& r, Sender& s) : receiver(r), sender(s) {}

  ReceiverHarness& receiver;
  Sender& sender;
  // Sees (and may change) each of the receiver's messages on its way.
  std::function<void(proto::Message&)> tamper;
  // Sees (and may change) each of the sender's messages on its way.
  std::function<void(proto::Message&)> tamper_to_receiver;
  // Called as each WRITE lands in the receiver's window, before the SEND after it.
  std::function<void(const FakeTransport::Written&)> landed;
  bool broken = false;  // a WRITE failed at the receiver
  std::size_t from_sender = 0, writes = 0, from_receiver = 0;

  // Moves what is there; returns whether anything moved.
  bool step() {
    bool moved = false;
    auto& out = sender.transport;
    for (; !broken && from_sender < out.sent.size(); ++from_sender, moved = true) {
      const auto& sent = out.sent[from_sender];
      // The WRITEs posted before this SEND land first (a Chunk's, a FileChunk's).
      for (; writes < out.writes.size() && out.writes[writes].before <= from_sender; ++writes) {
        const auto& w = out.writes[writes];
        if (!receiver.transport.write_remote(w.remote_addr, w.rkey, w.bytes)) {
          broken = true;
          out.fail("completion error: remote access error");
          break;
        }
        if (landed) landed(w);
      }
      if (broken) break;
      proto::Message message = sent.message;
      if (tamper_to_receiver) tamper_to_receiver(message);
      receiver.transport.deliver(message, sent.version);
      out.complete_sends(1);
    }
    auto& back = receiver.transport;
    for (; from_receiver < back.sent.size(); ++from_receiver, moved = true) {
      proto::Message message = back.sent[from_receiver].message;
      if (tamper) tamper(message);
      if (!broken) out.deliver(message, back.sent[from_receiver].version);
      back.complete_sends(1);
    }
    receiver.poll();
    sender.driver->poll();
    return moved;
  }
  // Steps, running the receiver's pool, until `done` holds (bounded).
  bool run_until(const std::function<bool()>& done) {
    return run_pool_until(receiver.pool, [&] {
      step();
      return done();
    });
  }
};

}  // namespace rdmax::test
