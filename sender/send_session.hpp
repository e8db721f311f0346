#pragma once
// One transfer from the sender's side: an epoll loop over the CM channel, the CQ's
// completion channel, signals and a timer, feeding events to the pure state machine
// (protocol/sender_machine.hpp) and carrying out the actions it returns.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/epoll.hpp"
#include "common/input_file.hpp"
#include "common/progress_bar.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/endpoint.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/memory_region.hpp"
#include "common/sha256.hpp"
#include "common/signal_fd.hpp"
#include "common/timer_fd.hpp"
#include "protocol/chunk_plan.hpp"
#include "protocol/sender_machine.hpp"
#include "protocol/wire.hpp"
#include "sender/file_windows.hpp"
#include "sender/options.hpp"

namespace rdmax::sender {

struct TransferStats {
  std::uint64_t bytes = 0;
  double connect_seconds = 0;
  double data_seconds = 0;
  double verify_seconds = 0;
  bool zero_copy = false;
};

class SendSession {
 public:
  SendSession(const SenderOptions& options, InputFile& file, const Digest& digest,
              ProgressMode progress);
  ~SendSession();
  [[nodiscard]] proto::SenderOutcome run();
  const std::string& secret() const { return secret_; }
  const TransferStats& stats() const { return stats_; }

 private:
  using Clock = std::chrono::steady_clock;

  void dispatch(proto::SenderEvent event);
  void perform(proto::SenderAction action);
  void on_cm_event();
  void on_completions();
  void on_message(const proto::Message& message);
  void on_timer();
  void start_data();
  void start_zero_copy();
  void pump_data();
  void post(const proto::Message& message);
  void disconnect_when_drained();
  void extend_deadline(std::chrono::seconds by) { deadline_ = Clock::now() + by; }

  const SenderOptions& options_;
  InputFile& file_;
  Digest digest_;
  proto::SenderState state_ = proto::SenderState::ResolvingAddress;
  proto::SenderContext context_;
  std::optional<proto::SenderOutcome> outcome_;
  std::deque<proto::SenderEvent> pending_;
  bool dispatching_ = false;
  Clock::time_point deadline_;
  Clock::time_point started_, established_, data_started_, done_sent_;
  std::string waiting_for_ = "address resolution";

  // Data phase.
  proto::Accept accept_{};
  proto::ChunkPlan plan_{};
  std::uint32_t active_slots_ = 0;
  std::uint64_t next_chunk_ = 0;
  std::vector<std::uint32_t> slot_rkey_;
  std::vector<bool> slot_credited_;         // the receiver let us write this slot
  std::vector<bool> slot_busy_;             // our Chunk SEND for this slot has not completed
  std::vector<std::uint32_t> slot_length_;  // bytes of the chunk last written to each slot
  std::vector<std::uint64_t> slot_offset_;  // and its file offset
  std::vector<std::int64_t> send_to_slot_;
  bool all_sent_signalled_ = false;
  bool disconnect_pending_ = false;
  bool disconnected_ = false;
  proto::ErrorCode error_code_ = proto::ErrorCode::ProtocolViolation;
  std::string error_text_;
  std::string secret_;
  TransferStats stats_;
  ProgressMode progress_mode_;
  std::optional<ProgressBar> progress_;  // the data phase's; bytes whose chunk completed
  std::uint64_t bytes_completed_ = 0;

  // Resources, in construction order; destroyed in reverse: the cm_id (and its QP)
  // first, then the file's or the staging buffer's MRs, then the endpoint (CQ, PD), then
  // the channel. Either file_windows_ (zero-copy) or the staging buffer is used.
  Epoll epoll_;
  SignalFd signals_;
  TimerFd timer_;
  EventChannel channel_;
  std::optional<Endpoint> endpoint_;
  AlignedBuffer staging_;
  std::optional<MemoryRegion> staging_mr_;
  std::optional<FileWindows> file_windows_;
  CmId id_;
  std::vector<ibv_wc> completions_;
};

}  // namespace rdmax::sender
