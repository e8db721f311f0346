#pragma once
// What rdma-recv counts for an operator (rdma-recv --metrics, docs/man/rdma-recv.1): the
// event loop counts, and the metrics server's threads read (render()). Every figure is an
// atomic that the loop alone writes and a scrape reads with a relaxed load: each is monotonic
// on its own, and no two need agree (a scrape between two counts of one chunk sees one).
// Nothing here takes a lock the loop could wait on.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/metrics/metrics_address.hpp"
#include "common/os/fd.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {

// How a file sent to this receiver ended (a directory is not counted).
enum class FileOutcome : std::uint8_t {
  Good,          // verified and committed
  BadDigest,     // its bytes did not match the digest it was offered with
  BadSize,       // fewer or more bytes than offered
  StorageError,  // the disk refused it
  Abandoned,     // its sender gave it up (the digest at the end, PROTOCOL.md 7.9)
  Identical,     // already in place, byte for byte (Have): nothing was sent
};

// Why a sender was turned away before any of its files was looked at.
enum class SenderRefusal : std::uint8_t {
  Address,       // outside --allow, or inside --deny
  NoKey,         // --senders, and it claimed no key
  WrongKey,      // its Proof did not check (an unknown id or another key)
  SlowedDown,    // refused while its address waits out a penalty for failed proofs
  SealRequired,  // --require-seal, and it did not ask to seal
};

class ReceiverMetrics {
 public:
  using Counter = std::atomic<std::uint64_t>;

  // `dir_fd`: --dir, whose free space a scrape reads (fstatvfs), through a descriptor of its
  // own, so that a scrape never reads one the daemon closed; -1: none.
  explicit ReceiverMetrics(int dir_fd = -1);

  // Counted on the event loop.
  Counter received_bytes{0};  // chunk bytes that arrived, good or bad
  Counter written_bytes{0};   // chunk bytes hashed and written into files
  Counter files_resumed{0};   // files taken from a kept partial (Resume)
  Counter connections_accepted{0};
  void count(FileOutcome outcome) { add(files_[index(outcome)]); }
  void count_refused(proto::RejectReason reason) { add(files_refused_.at(index(reason))); }
  void count(SenderRefusal refusal) { add(senders_refused_[index(refusal)]); }
  void count_verification(std::chrono::steady_clock::duration took);
  std::uint64_t files(FileOutcome outcome) const { return load(files_[index(outcome)]); }
  // Files refused, for every reason together.
  std::uint64_t files_refused() const {
    std::uint64_t n = 0;
    for (const Counter& c : files_refused_) n += load(c);
    return n;
  }

  // Published by the loop on its tick: what only the loop may read.
  Counter connections_open{0};
  Counter pool_queued{0};  // jobs posted to the worker pool and not started

  // The Prometheus text format (version 0.0.4), every series from the start (at 0), each
  // family whole. Safe on any thread.
  std::string render() const;

 private:
  template <typename E>
  static constexpr std::size_t index(E e) {
    return static_cast<std::size_t>(e);
  }
  static void add(Counter& c, std::uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
  static std::uint64_t load(const Counter& c) { return c.load(std::memory_order_relaxed); }

  Fd dir_;
  std::array<Counter, 6> files_{};
  std::array<Counter, 16> files_refused_{};  // by RejectReason's value
  std::array<Counter, 5> senders_refused_{};
  Counter verifications_{0};
  Counter verification_ns_{0};
};

}  // namespace rdmax::receiver
