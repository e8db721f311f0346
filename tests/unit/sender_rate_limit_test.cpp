// --bwlimit: the rate parser and the token bucket, driven by a fake clock.
#include "sender/rate_limit.hpp"

#include <gtest/gtest.h>

#include "protocol/sizes.hpp"

namespace rdmax {
namespace {

using namespace std::chrono_literals;
using Clock = TokenBucket::Clock;

// One rule for every size both programs read (protocol/sizes.hpp): K, M, G, T are powers
// of 1024 however they are written, as the rates the programs print (MiB/s).
TEST(ParseRate, UnitsArePowersOf1024AsInEverySize) {
  EXPECT_EQ(parse_rate("1"), 1u);
  EXPECT_EQ(parse_rate("500M"), 500ull << 20);
  EXPECT_EQ(parse_rate("4M"), 4u << 20);
  EXPECT_EQ(parse_rate("4k"), 4096u);
  EXPECT_EQ(parse_rate("2G"), 2ull << 30);
  EXPECT_EQ(parse_rate("1T"), 1ull << 40);
  EXPECT_EQ(parse_rate("4Ki"), std::nullopt);  // as every size: "4K", "4KB" or "4KiB"
  EXPECT_EQ(parse_rate("4KiB"), 4096u);
  EXPECT_EQ(parse_rate("1GiB/s"), 1u << 30);
  EXPECT_EQ(parse_rate("10MB"), 10u << 20);
  EXPECT_EQ(parse_rate("10MB/s"), 10u << 20);
  EXPECT_EQ(parse_rate("10mb/S"), 10u << 20);
  EXPECT_EQ(parse_rate("100B"), 100u);
  for (const char* text : {"1K", "64M", "3G"})
    EXPECT_EQ(parse_rate(text), proto::parse_size(text)) << text;
}

TEST(ParseRate, RejectsZeroNegativesAndGarbage) {
  for (const char* bad : {"", "0", "0M", "-5M", "+5M", "5.5M", " 5M", "5M ", "M", "5X", "5Mx",
                          "5 M", "abc", "5MiBs", "18446744073709551616", "20000000000T"})
    EXPECT_FALSE(parse_rate(bad)) << bad;
  EXPECT_EQ(parse_rate("18446744073709551615"), UINT64_MAX);
}

TEST(TokenBucket, StartsEmptyAndPacesOneChunkPerInterval) {
  const auto t0 = Clock::time_point{} + 1000s;
  TokenBucket bucket(1'000'000, 100'000, t0);  // 1 MB/s, 100 kB chunks: one per 100 ms
  EXPECT_FALSE(bucket.ready(100'000, t0));
  EXPECT_EQ(bucket.ready_at(100'000, t0), t0 + 100ms);
  EXPECT_FALSE(bucket.ready(100'000, t0 + 99ms));
  EXPECT_TRUE(bucket.ready(100'000, t0 + 100ms));
  bucket.take(100'000, t0 + 100ms);
  EXPECT_EQ(bucket.ready_at(100'000, t0 + 100ms), t0 + 200ms);
}

TEST(TokenBucket, BurstIsOneChunk) {
  const auto t0 = Clock::time_point{} + 1000s;
  TokenBucket bucket(1'000'000, 100'000, t0);
  // Idle for 10 s: the bucket holds one chunk and 20 ms of the rate (the slack for a late
  // wake-up), not ten seconds' worth: the next chunk waits 80 ms, never none.
  const auto t = t0 + 10s;
  EXPECT_TRUE(bucket.ready(100'000, t));
  bucket.take(100'000, t);
  EXPECT_FALSE(bucket.ready(100'000, t));
  EXPECT_EQ(bucket.ready_at(100'000, t), t + 80ms);
  // A request above the burst waits for a chunk's worth only.
  EXPECT_EQ(bucket.ready_at(500'000, t), t + 80ms);
  EXPECT_FALSE(bucket.ready(100'000, t + 79ms));
}

TEST(TokenBucket, ShortLastChunkWaitsOnlyForItsBytes) {
  const auto t0 = Clock::time_point{} + 1000s;
  TokenBucket bucket(1'000'000, 100'000, t0);
  EXPECT_EQ(bucket.ready_at(10'000, t0), t0 + 10ms);
}

TEST(TokenBucket, LongRunAverageMatchesTheRate) {
  // A sender that asks when it may go and is woken then, up to 3 ms late each time (a
  // timer's slack): the average over many chunks stays at the rate, the lateness not lost.
  const auto t0 = Clock::time_point{} + 1000s;
  const std::uint64_t rate = 4'000'000, chunk = 1u << 20;
  TokenBucket bucket(rate, chunk, t0);
  auto now = t0;
  std::uint64_t sent = 0;
  for (int i = 0; i < 200; ++i) {
    now = bucket.ready_at(chunk, now) + std::chrono::milliseconds(i % 4);
    ASSERT_TRUE(bucket.ready(chunk, now));
    bucket.take(chunk, now);
    sent += chunk;
  }
  const double seconds = std::chrono::duration<double>(now - t0).count();
  const double measured = static_cast<double>(sent) / seconds;
  EXPECT_NEAR(measured, static_cast<double>(rate), rate * 0.001);
  EXPECT_LE(measured, static_cast<double>(rate));
}

TEST(TokenBucket, LatenessBeyondTheSlackIsLostNotMadeUp) {
  // Woken 100 ms late every time: a bucket that made it all up would send bursts.
  const auto t0 = Clock::time_point{} + 1000s;
  const std::uint64_t rate = 1'000'000, chunk = 100'000;
  TokenBucket bucket(rate, chunk, t0);
  auto now = t0;
  for (int i = 0; i < 10; ++i) {
    now = bucket.ready_at(chunk, now) + 100ms;
    bucket.take(chunk, now);
    EXPECT_EQ(bucket.ready_at(chunk, now), now + 80ms) << "at most 20 ms made up";
  }
}

TEST(TokenBucket, ClockGoingBackwardsAddsNothing) {
  const auto t0 = Clock::time_point{} + 1000s;
  TokenBucket bucket(1'000'000, 100'000, t0);
  EXPECT_FALSE(bucket.ready(1, t0 - 5s));
  EXPECT_TRUE(bucket.ready(100'000, t0 + 100ms));
}

}  // namespace
}  // namespace rdmax
