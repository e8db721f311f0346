#pragma once
// One sender's connection, seen from the receiver: its own PD, CQ, QP and registered
// window, a temporary output file, and the pure state machine
// (protocol/receiver_machine.hpp) that decides what happens next.
//
// Lifecycle: created on CONNECT_REQUEST (receives posted, then accepted); driven by
// completions, CM events, its worker's eventfd and the daemon's timer; ends in Closed,
// after which the daemon destroys it. Destruction order (reverse of the members below):
// the slot worker (joined), its eventfd, the cm_id with its QP, then the slots' MRs, the
// window, then the endpoint (CQ, channel, PD); the transfer's file last of all.
//
// Threads: everything here runs on the daemon's event loop except the SlotWorker, which
// hashes and writes chunks whose slots are revoked (receiver/slot_worker.hpp).

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/epoll.hpp"
#include "common/event_fd.hpp"
#include "common/output_file.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/endpoint.hpp"
#include "common/rdma/memory_region.hpp"
#include "common/sha256.hpp"
#include "protocol/chunk_plan.hpp"
#include "protocol/receiver_machine.hpp"
#include "protocol/secrets.hpp"
#include "protocol/wire.hpp"
#include "receiver/options.hpp"
#include "receiver/slot_worker.hpp"

namespace rdmax::receiver {

// What every connection shares with the daemon.
struct ReceiverContext {
  const ReceiverOptions& options;
  int dir_fd;
  const proto::SecretStore* secrets;      // null: every id is denied
  std::uint64_t window_bytes_in_use = 0;  // registered by all connections, vs --max-memory
};

class Connection {
 public:
  using Clock = std::chrono::steady_clock;

  Connection(std::uint64_t number, rdma_cm_id* id, ReceiverContext& context);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  void accept();
  int completion_fd() const { return endpoint_->completion_fd(); }
  // Readable when the worker has stored chunks: call on_chunks_stored().
  int chunks_stored_fd() const { return chunks_stored_.fd(); }
  std::uint64_t number() const { return number_; }
  bool closed() const { return state_ == proto::ReceiverState::Closed; }

  void on_completions();
  void on_chunks_stored();
  void on_established();
  void on_disconnected();
  void on_transport_failure(const std::string& why);
  void on_tick(Clock::time_point now);
  void shut_down();

 private:
  using Event = proto::ReceiverEvent;
  using Action = proto::ReceiverAction;

  void dispatch(Event event);
  void perform(Action action);
  void on_message(const proto::Message& message);
  void post(const proto::Message& message);
  void disconnect_when_drained();
  void expect(const char* what, std::chrono::seconds within);

  // Action bodies that produce the next event.
  Event check_hello();
  std::optional<Event> store_chunk();
  std::optional<Event> await_drain();
  Event verify();
  Event lookup_id();
  void register_slot(std::uint32_t slot);
  void log_transfer_end(const char* verdict);

  std::uint64_t number_;
  ReceiverContext& context_;
  std::string peer_;
  proto::ReceiverState state_ = proto::ReceiverState::AwaitHello;
  std::deque<Event> pending_;
  bool dispatching_ = false;
  Clock::time_point deadline_;
  const char* waiting_for_ = "Hello";
  Clock::time_point data_started_;
  std::optional<Clock::time_point> drain_started_;  // Done arrived
  struct {
    Clock::duration revoke{}, hash{}, write{}, rekey{}, drain{};
  } costs_;  // where the data phase's time goes (logged with -v); hash and write: the worker's

  // The transfer.
  proto::Hello hello_;
  proto::Chunk chunk_{};
  SlotWorker::Chunk stored_{};  // the chunk a ChunkStored is about
  std::string offered_id_;
  proto::ChunkPlan plan_{};
  std::uint64_t received_ = 0;  // bytes of every valid Chunk so far, stored or still queued
  std::uint64_t done_total_ = 0;
  bool logged_end_ = false;
  bool foreign_version_ = false;  // the first message spoke another protocol version
  Digest computed_{};
  std::optional<OutputFile> file_;
  std::uint32_t slot_count_ = 0;
  std::uint64_t window_charge_ = 0;  // this connection's share of window_bytes_in_use
  proto::VerdictCode verdict_ = proto::VerdictCode::Good;
  proto::RejectReason reject_reason_ = proto::RejectReason::Internal;
  std::string reject_text_;
  proto::ErrorCode error_code_ = proto::ErrorCode::ProtocolViolation;
  std::string error_text_;
  unsigned id_attempts_ = 0;
  std::string secret_;  // wiped as soon as it is sent
  bool disconnect_pending_ = false;
  bool disconnected_ = false;
  bool committed_ = false;
  std::vector<ibv_wc> completions_;

  // Resources; see the lifecycle note above for why this order.
  std::optional<Endpoint> endpoint_;
  AlignedBuffer window_;
  std::vector<std::optional<MemoryRegion>> slot_mrs_;  // engaged: the sender holds its key
  CmId id_;
  // After id_: if creating it throws, the half-built connection still destroys the cm_id.
  EventFd chunks_stored_;
  // Last, so destroyed first: its thread reads the window and writes file_, so it must be
  // stopped and joined before either (or the eventfd it signals) goes, whichever way the
  // connection ends. Engaged from an accepted Hello with data until the verdict or the
  // first way out (DiscardFile, Release).
  std::optional<SlotWorker> worker_;
};

}  // namespace rdmax::receiver
