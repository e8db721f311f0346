#pragma once
// The attacker's side of one RC connection to rdma-recv, driven synchronously (every
// wait polls with a bound, no event loop), and the helpers every attack shares: the
// options, the generated file, a session that got as far as Accept and the first Credits.

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/digest/sha256.hpp"
#include "common/os/aligned_buffer.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/endpoint.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/memory_region.hpp"
#include "common/rdma/queue_pair.hpp"
#include "protocol/wire.hpp"

namespace rdmax::attacker {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string command;
  std::string host;
  std::uint16_t port = 18515;
  int timeout_s = 10;
  std::uint64_t size = 150000;
  std::string tag = "attack";
  std::string save;  // where to store the generated file, for the caller to compare
  // Hostile-protocol commands (hostile.cpp).
  int receiver_timeout_s = 3;  // the receiver's --timeout
  int slack_s = 3;             // how late after its timeout the receiver may still react
  std::optional<int> count;    // idle: connections; flood: messages
  std::string dir;             // the receiver's --dir, to check that nothing was left there
  // keys (hostile_keys.cpp): the legitimate sender's key file, one of an id with a SUBDIR,
  // an id the receiver does not know, and whether to pause for the caller.
  std::string key_file;
  std::string subdir_key_file;
  std::string unknown_id = "mallory";
  bool pause = false;
};

// The attack could not be carried out: not a verdict on the receiver.
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The receiver refused the connection in rdma_cm itself (REJECTED), giving `words` as its
// reason (docs/PROTOCOL.md 4.1; empty when it gave none).
struct ConnectRefused : SetupError {
  ConnectRefused(const std::string& what, std::string why)
      : SetupError(what), words(std::move(why)) {}
  std::string words;
};

void note(const std::string& text);
std::string to_hex_u64(std::uint64_t value);
double seconds_between(Clock::time_point from, Clock::time_point to);

// The outcome of one RDMA WRITE: its completion status, or none within the timeout.
struct WriteResult {
  std::optional<ibv_wc_status> status;
  bool ok() const { return status && *status == IBV_WC_SUCCESS; }
  std::string describe() const {
    return status ? ibv_wc_status_str(*status) : "no completion within the timeout";
  }
};

class Peer {
 public:
  // Raw SENDs (send_raw) of up to kRawBytes each, at most `raw_slots` in flight.
  static constexpr std::size_t kRawBytes = 8192;

  Peer(const Options& options, std::string label, std::uint32_t raw_slots = 8);
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;
  ~Peer() { close(); }

  // Resolves, connects and registers `local` (the bytes this peer writes from). Throws
  // ConnectRefused when the receiver rejects the connection request.
  void connect(std::size_t local_bytes);

  std::uint8_t* local() { return local_.data(); }
  const std::string& label() const { return label_; }

  // A well-formed message, through the real encoder, in `version`.
  void send(const proto::Message& message, std::uint16_t version = proto::kVersion1);
  // Any bytes as one SEND, however malformed (longer than a RECV buffer, too).
  void send_raw(std::span<const std::uint8_t> bytes);

  // The next message from the receiver, or nullopt if the connection ended or the
  // timeout passed first.
  std::optional<proto::Message> next_message();
  // Every message received and not yet taken, without waiting.
  std::vector<proto::Message> take_messages();
  bool has_messages() const { return !messages_.empty(); }

  // A message of type T; anything else (or nothing) is a setup failure.
  template <typename T>
  T expect_message(const char* what) {
    auto m = next_message();
    if (!m) throw SetupError(label_ + ": no " + what + " (" + ended_how() + ")");
    if (auto* t = std::get_if<T>(&*m)) return *t;
    throw SetupError(label_ + ": expected " + what + ", got " + describe(*m));
  }

  // RDMA WRITE of `length` bytes of local memory at `local_offset` to (addr, rkey); waits
  // for its (signaled) completion.
  WriteResult write(std::size_t local_offset, std::size_t length, std::uint64_t addr,
                    std::uint32_t rkey);

  // Waits (bounded) for the receiver to disconnect; true if it did.
  bool wait_disconnected(std::chrono::milliseconds within);
  // Handles whatever arrives until `done` holds or `within` has passed.
  void poll_for(std::chrono::milliseconds within, const std::function<bool()>& done);
  // Waits until `peers` have all been disconnected or `deadline` passes, polling them all.
  static void wait_all_disconnected(const std::vector<Peer*>& peers, Clock::time_point deadline);

  bool disconnected() const { return disconnected_; }
  bool qp_failed() const { return qp_failed_; }
  Clock::time_point established_at() const { return established_at_; }
  Clock::time_point disconnected_at() const { return disconnected_at_; }
  // When the latest message from the receiver arrived (epoch: none yet).
  Clock::time_point last_message_at() const { return last_message_at_; }
  unsigned raw_sends_ok() const { return raw_ok_; }
  unsigned raw_sends_failed() const { return raw_failed_; }
  std::string first_error() const { return ibv_wc_status_str(first_error_); }
  std::string ended_how() const;
  static std::string describe(const proto::Message& m);

  void close() noexcept;

 private:
  bool pump(Clock::time_point deadline);
  void add_pollfds(std::vector<pollfd>& fds) const;
  void service();
  void handle_completions();
  void expect_cm(rdma_cm_event_type wanted);

  const Options& options_;
  std::string label_;
  std::uint32_t raw_slots_;
  bool connected_ = false;
  bool disconnected_ = false;
  bool qp_failed_ = false;
  ibv_wc_status first_error_ = IBV_WC_SUCCESS;
  Clock::time_point established_at_{};
  Clock::time_point disconnected_at_{};
  Clock::time_point last_message_at_{};
  std::uint32_t next_write_ = 0;
  std::uint32_t next_raw_ = 0;
  std::vector<bool> raw_busy_;
  unsigned raw_ok_ = 0;
  unsigned raw_failed_ = 0;
  std::deque<proto::Message> messages_;
  std::map<std::uint32_t, ibv_wc_status> writes_;
  std::vector<ibv_wc> completions_;
  // Destroyed in reverse: the QP first, then the MRs and their buffers, the endpoint
  // (its MRs, CQ, channel, PD), the cm_id, the event channel. The order of RdmaTransport.
  EventChannel channel_;
  CmId id_;
  std::optional<Endpoint> endpoint_;
  AlignedBuffer local_;
  std::optional<MemoryRegion> local_mr_;
  AlignedBuffer raw_;
  std::optional<MemoryRegion> raw_mr_;
  std::optional<QueuePair> qp_;
};

// The file offered in every Hello: random bytes, hashed here.
struct Payload {
  std::vector<std::uint8_t> bytes;
  Digest digest{};  // the whole-file SHA-256 (the attacker offers algorithm 1)
};
Payload make_payload(const Options& options);

// A connected peer that offered `payload` under `name` and got an Accept, then the first
// Credit of every slot (docs/PROTOCOL.md 5.3: each slot has its own key).
struct Session {
  std::unique_ptr<Peer> peer;
  proto::Accept accept;
  std::vector<std::uint32_t> slot_rkey;  // the key this peer holds or last held per slot
  std::vector<bool> held;                // this peer holds the slot's credit
};
Session open_session(const Options& options, const Payload& payload, const std::string& name);

std::uint64_t slot_addr(const proto::Accept& a, std::uint32_t slot);
// Writes chunk `index` of the payload into `slot` and announces it with a Chunk.
void write_chunk(Session& s, std::uint64_t index, std::uint32_t slot, std::uint64_t file_size);
// Waits for the Credit of `slot` and takes its new key; returns the key it replaced.
std::uint32_t take_credit(Session& s, std::uint32_t slot);

}  // namespace rdmax::attacker
