#pragma once
// The sender's side of a session's window (docs/PROTOCOL.md 5.4, 7.5): the slots the
// receiver credits, and where each chunk's bytes come from on their way into one. A chunk
// the ledger plans (as credits and --bwlimit allow) is read into its slot's part of a
// registered staging buffer by a worker (sender/chunk_reads.hpp), or, with --zero-copy, is
// written from its file's mapping, registered a window at a time (sender/file_windows.hpp);
// in the order planned, each goes as an RDMA WRITE and then its FileChunk (RC keeps them in
// order). What is pinned fits RLIMIT_MEMLOCK (sender/memlock.hpp).

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/connection/transport.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/wire.hpp"
#include "sender/chunk_reads.hpp"
#include "sender/file_windows.hpp"
#include "sender/outgoing_entries.hpp"
#include "sender/rate_limit.hpp"
#include "sender/sender_input.hpp"
#include "sender/sender_settings.hpp"

namespace rdmax::sender {

// --bwlimit for a whole command: one token bucket that every connection draws from. It
// starts, empty, when the first chunk of the command is ready, so that connection set-up
// and hashing do not fill it.
class SharedBwlimit {
 public:
  explicit SharedBwlimit(std::uint64_t rate) : rate_(rate) {}
  // Made at the first chunk, with a burst of one chunk (`chunk`: the receiver's slot size)
  // and TokenBucket's 20 ms of slack for a late wake-up, for one file or a tree alike
  // (rdma-send(1)): the data phase never beats the rate.
  TokenBucket& bucket(std::chrono::steady_clock::time_point now, std::uint64_t chunk) {
    if (!bucket_) bucket_.emplace(rate_, chunk, now);
    return *bucket_;
  }

 private:
  std::uint64_t rate_;
  std::optional<TokenBucket> bucket_;
};

class SendWindow {
 public:
  using Clock = std::chrono::steady_clock;

  SendWindow(const SenderSettings& settings, OutgoingEntries& entries, SenderHooks& hooks)
      : settings_(settings), entries_(entries), hooks_(hooks) {}

  // How many slots may be written at once, the Accept's as far as RLIMIT_MEMLOCK holds them
  // (with --zero-copy: and the files' windows); none: not even one.
  std::optional<std::uint32_t> fit(const proto::Accept& accept);
  // The session's data path over `transport`, once the entries' ledger is made; with
  // `chunk_key`, every chunk is sealed under it (docs/PROTOCOL.md 7.11), and copied (a
  // sealed connection is never --zero-copy).
  void start(Transport& transport, std::uint32_t slot_size,
             const proto::SealKey* chunk_key = nullptr);
  // --bwlimit: when the next chunk held by the bucket may go.
  std::optional<Clock::time_point> resume_at() const { return resume_at_; }

  // A Credit: the slot may be written (false: it breaks the rules; a violation is raised).
  bool credit(const proto::Credit& credit);
  // Plans and starts every chunk the credits and --bwlimit allow, and posts those whose
  // bytes are ready, in the order planned.
  void send_chunks();
  // The FileChunk SEND for `slot` completed (so its WRITE did too); false: no chunk was in
  // flight there.
  bool completed(std::uint32_t slot);
  // The data phase: from the first Credit to the last chunk's completion.
  std::optional<std::pair<Clock::time_point, Clock::time_point>> data_span() const;
  // Cancels the reads and waits for the ones running (they use the staging buffer).
  void stop();
  // Without the wait: the reads cancelled; busy() while one still runs.
  void cancel();
  bool busy() const;

 private:
  void use_staging();
  // Where a chunk's bytes come from: the file's registered mapping (--zero-copy), else the
  // staging buffer, read into it by a worker.
  void start_chunk(const proto::PlannedChunk& chunk);
  FileWindows* windows_for(OutgoingEntry& e, std::uint64_t offset);
  // The chunks whose bytes are ready: their WRITEs and FileChunks. True when it dropped one
  // instead (its file no longer taken, or unreadable): a slot is free again.
  bool post_chunks();

  const SenderSettings& settings_;
  OutgoingEntries& entries_;
  SenderHooks& hooks_;
  Transport* transport_ = nullptr;
  std::uint32_t slot_size_ = 0;
  std::optional<Clock::time_point> resume_at_;  // --bwlimit: a chunk waits for the bucket
  Clock::time_point data_began_{};              // the first Credit
  Clock::time_point last_data_{};               // the last chunk's completion
  std::span<std::uint8_t> staging_;             // the transport's allocation
  std::optional<Registration> staging_key_;
  // --zero-copy: each file being sent is registered a window at a time (0: copying).
  std::uint64_t window_bytes_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> in_flight_;  // per slot: entry, offset
  // The chunks planned whose WRITE is not posted yet, in order (their reads run on the pool).
  // After the staging buffer, which it reads into: stopped (stop) before that goes.
  std::optional<ChunkReads> reads_;
};

}  // namespace rdmax::sender
