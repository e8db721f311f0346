#pragma once
// rdma-send --bwlimit: the rate as people type it, and a token bucket that paces chunks.
// Pure (no clock of its own): the caller passes the time, so tests drive it with a fake one.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmax {

// Bytes per second, written as a size (protocol/sizes.hpp: K, M, G, T are powers of 1024,
// as in every size both programs read and print, whether written "4M", "4MB" or "4MiB"),
// optionally followed by "/s" ("500M", "1GiB/s"). Rejects empty text, zero, signs,
// fractions, whitespace, unknown units and values that do not fit in 64 bits.
[[nodiscard]] std::optional<std::uint64_t> parse_rate(std::string_view text);

// A token bucket: tokens accrue at `rate` bytes per second up to `burst` bytes (one chunk)
// and kWakeSlack of the rate, and a chunk goes only when the bucket holds its length; the
// bucket starts empty, so over any span from the start the average never exceeds the rate,
// even for the first chunk. The slack is what a sender woken a little late (a timer, a busy
// loop) would otherwise lose for good with a bucket of exactly one chunk: full when the
// chunk is due, it could not count the time it waited for the wake-up. It never lets two
// chunks go back to back: after one goes, the next still needs a chunk's worth, minus at
// most the slack.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kWakeSlack{20};

  TokenBucket(std::uint64_t rate, std::uint64_t burst, Clock::time_point start);

  // Whether `bytes` may go at `now` (a request above the burst needs only a full bucket).
  [[nodiscard]] bool ready(std::uint64_t bytes, Clock::time_point now);
  // When `bytes` may go: `now` when ready(), else the moment the bucket holds enough.
  [[nodiscard]] Clock::time_point ready_at(std::uint64_t bytes, Clock::time_point now);
  // `bytes` went at `now`: the bucket loses them (it may go below zero only when a caller
  // sent without asking, and then refills from there).
  void take(std::uint64_t bytes, Clock::time_point now);

 private:
  void refill(Clock::time_point now);
  double need(std::uint64_t bytes) const;

  std::uint64_t rate_;
  std::uint64_t burst_;
  double capacity_;    // bytes: the burst and the slack
  double tokens_ = 0;  // bytes
  Clock::time_point last_;
};

}  // namespace rdmax
