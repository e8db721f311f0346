// The sender's locked-memory budget (protocol/memlock_budget.hpp, sender/memlock.hpp): what
// fits under RLIMIT_MEMLOCK, per connection, and what --check predicts (no RDMA needed).
#include <gtest/gtest.h>

#include "protocol/memlock_budget.hpp"
#include "sender/memlock.hpp"

namespace rdmax {
namespace memlock_budget_test {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint32_t kSlot = 1u << 20;

proto::PinBudget budget(std::optional<std::uint64_t> limit, std::uint32_t connections,
                        std::uint64_t control) {
  return {limit, connections, control, 4096};
}

TEST(MemlockBudget, PinnedSizeIsWholePages) {
  EXPECT_EQ(proto::pinned_size(0, 4096), 0u);
  EXPECT_EQ(proto::pinned_size(1, 4096), 4096u);
  EXPECT_EQ(proto::pinned_size(4096, 4096), 4096u);
  EXPECT_EQ(proto::pinned_size(4097, 65536), 65536u);
}

TEST(MemlockBudget, NoLimitKeepsWhatIsWanted) {
  const auto fit = proto::fit_staging(budget(std::nullopt, 8, 800 * KiB), kSlot, 32);
  EXPECT_EQ(fit.slots, 32u);
  EXPECT_FALSE(fit.reduced());
  EXPECT_EQ(proto::connections_that_fit(budget(std::nullopt, 1, 800 * KiB), 16, kSlot), 16u);
}

TEST(MemlockBudget, EnoughLimitKeepsWhatIsWanted) {
  // 8 x 1 MiB + 800 KiB is 8.78 MiB: 9 MiB holds it.
  const auto fit = proto::fit_staging(budget(9 * MiB, 1, 800 * KiB), kSlot, 8);
  EXPECT_EQ(fit.slots, 8u);
  EXPECT_FALSE(fit.reduced());
}

TEST(MemlockBudget, ExactlyTheNeedFits) {
  const auto b = budget(8 * MiB + 800 * KiB, 1, 800 * KiB);
  EXPECT_EQ(proto::fit_staging(b, kSlot, 8).slots, 8u);
  const auto less = budget(8 * MiB + 800 * KiB - 1, 1, 800 * KiB);
  EXPECT_EQ(proto::fit_staging(less, kSlot, 8).slots, 7u);
}

// The reported case: an ordinary user at 8 MiB sending a tree to a default receiver.
TEST(MemlockBudget, EightMiBHoldsSevenOfEightSlotsBesidesTheControlBuffers) {
  const auto fit = proto::fit_staging(budget(8 * MiB, 1, 800 * KiB), kSlot, 8);
  EXPECT_EQ(fit.slots, 7u);
  EXPECT_TRUE(fit.reduced());
  EXPECT_LE(proto::connection_pins(budget(8 * MiB, 1, 800 * KiB), kSlot, fit.slots), 8 * MiB);
}

TEST(MemlockBudget, ConnectionsShareTheLimitEqually) {
  // -P 2 at 8 MiB: 4 MiB each, 800 KiB of it control: 3 slots.
  auto b = budget(8 * MiB, 2, 800 * KiB);
  EXPECT_EQ(proto::fit_staging(b, kSlot, 8).slots, 3u);
  EXPECT_LE(2 * proto::connection_pins(b, kSlot, 3), 8 * MiB);
  b.connections = 4;
  EXPECT_EQ(proto::fit_staging(b, kSlot, 8).slots, 1u);
  b.connections = 8;
  EXPECT_EQ(proto::fit_staging(b, kSlot, 8).slots, 0u);  // not even one
}

TEST(MemlockBudget, NotEvenOneSlot) {
  const auto fit = proto::fit_staging(budget(64 * KiB, 1, 800 * KiB), kSlot, 8);
  EXPECT_EQ(fit.slots, 0u);
  EXPECT_TRUE(fit.reduced());
  // Small slots still fit where large ones do not.
  EXPECT_EQ(proto::fit_staging(budget(1 * MiB, 1, 800 * KiB), 64 * 1024, 8).slots, 3u);
}

TEST(MemlockBudget, SlotsThatAreNotWholePagesRoundUp) {
  // 3 slots of 5000 bytes are 15000 bytes: 4 pages. A share of 3 pages holds 2.
  const auto b = budget(3 * 4096 + 4096, 1, 4096);
  EXPECT_EQ(proto::fit_staging(b, 5000, 8).slots, 2u);
  EXPECT_LE(proto::connection_pins(b, 5000, 2), *b.limit);
}

TEST(MemlockBudget, ConnectionsThatFitKeepOneSlotEach) {
  // 8 MiB over connections of 800 KiB + 1 MiB: 4 of them.
  EXPECT_EQ(proto::connections_that_fit(budget(8 * MiB, 1, 800 * KiB), 8, kSlot), 4u);
  EXPECT_EQ(proto::connections_that_fit(budget(8 * MiB, 1, 800 * KiB), 2, kSlot), 2u);
  EXPECT_EQ(proto::connections_that_fit(budget(64 * KiB, 1, 800 * KiB), 2, kSlot), 0u);
}

TEST(MemlockBudget, ZeroCopyWindowsShrinkToFitThree) {
  // Unlimited: the preferred windows.
  auto fit = proto::fit_file_windows(budget(std::nullopt, 1, 544 * KiB), kSlot, 8, 32);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->window_chunks, 32u);
  EXPECT_EQ(fit->slots, 8u);
  // 100 MiB: three windows of 32 chunks fit.
  fit = proto::fit_file_windows(budget(100 * MiB, 1, 544 * KiB), kSlot, 8, 32);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->window_chunks, 32u);
  // 40 MiB: windows of 13 chunks, still all 8 slots in flight.
  fit = proto::fit_file_windows(budget(40 * MiB, 1, 544 * KiB), kSlot, 8, 32);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->window_chunks, 13u);
  EXPECT_EQ(fit->slots, 8u);
  // 8 MiB: windows of 2 chunks, 2 in flight; three of them fit.
  const auto tight = budget(8 * MiB, 1, 544 * KiB);
  fit = proto::fit_file_windows(tight, kSlot, 8, 32);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->window_chunks, 2u);
  EXPECT_EQ(fit->slots, 2u);
  EXPECT_LE(544 * KiB + 3 * 2 * MiB, 8 * MiB);
  // 2 MiB: not three one-chunk windows.
  EXPECT_FALSE(proto::fit_file_windows(budget(2 * MiB, 1, 544 * KiB), kSlot, 8, 32));
}

TEST(MemlockBudget, ControlBuffersOfAConnection) {
  // 112 receive and 72 send buffers of 4 KiB, and the queue allowance.
  EXPECT_EQ(sender::control_pins(sender::kSessionDepths, 4096), (112 + 72) * 4 * KiB + 64 * KiB);
}

TEST(MemlockBudget, LimitForIsWhatEveryConnectionPins) {
  const auto b = budget(std::nullopt, 2, 800 * KiB);
  EXPECT_EQ(proto::limit_for(b, kSlot, 8), 2 * (800 * KiB + 8 * MiB));
  EXPECT_EQ(sender::ulimit_command(8 * MiB + 1), "ulimit -l 8193");
}

TEST(MemlockBudget, CheckPredictsTheReportedCase) {
  const preflight::MemlockLimit eight{8 * MiB, false};
  // One file or a tree on one connection at 8 MiB: ok, but reduced to 7 of 16 slots, with
  // the figure to raise it to.
  auto c = sender::memlock_prediction(eight, 1);
  EXPECT_TRUE(c.ok) << c.what;
  EXPECT_NE(c.what.find("is below the 16.8 MiB"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("7 of 16 slots"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("ulimit -l 17184"), std::string::npos) << c.what;
  // -P 2: 3 slots on each.
  c = sender::memlock_prediction(eight, 2);
  EXPECT_TRUE(c.ok) << c.what;
  EXPECT_NE(c.what.find("2 connections"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("3 of 16 slots"), std::string::npos) << c.what;
  // -P 8: 4 connections of 1 slot.
  c = sender::memlock_prediction(eight, 8);
  EXPECT_TRUE(c.ok) << c.what;
  EXPECT_NE(c.what.find("1 of 16 slots in flight on 4 of 8 connections"), std::string::npos)
      << c.what;
}

TEST(MemlockBudget, CheckPassesWhenItFitsAndFailsBelowOneSlot) {
  auto c = sender::memlock_prediction({64 * MiB, false}, 1);
  EXPECT_TRUE(c.ok);
  EXPECT_NE(c.what.find("covers the 16.8 MiB"), std::string::npos) << c.what;
  c = sender::memlock_prediction({std::nullopt, false}, 1);
  EXPECT_TRUE(c.ok);
  EXPECT_NE(c.what.find("unlimited"), std::string::npos) << c.what;
  c = sender::memlock_prediction({64 * KiB, true}, 1);
  EXPECT_TRUE(c.ok);
  EXPECT_NE(c.what.find("CAP_IPC_LOCK"), std::string::npos) << c.what;
  c = sender::memlock_prediction({64 * KiB, false}, 1);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.what.find("RLIMIT_MEMLOCK 64.0 KiB cannot hold one 1.0 MiB slot"), std::string::npos)
      << c.what;
  EXPECT_NE(c.remedy.find("ulimit -l unlimited"), std::string::npos);
}

}  // namespace memlock_budget_test
}  // namespace rdmax
