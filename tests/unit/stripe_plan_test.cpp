// The sender's plan of one file over several connections (protocol/stripe_plan.hpp,
// docs/STRIPING.md): chunks handed out in file order to whichever member asks, every size at
// the chunk edges, 1 to 4 members, stores in any order, a resume's start, and a member lost at
// every point of the file.

#include "protocol/stripe_plan.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using rdmax::proto::StripePlan;
using PlannedChunk = StripePlan::Chunk;

constexpr std::uint32_t kChunk = 4096;

std::vector<std::uint64_t> edge_sizes() {
  return {0,          1, kChunk - 1, kChunk, kChunk + 1, 2 * kChunk - 1, 2 * kChunk, 7 * kChunk + 5,
          16 * kChunk};
}

// Drives a plan to the end: members ask in a random order, hold up to `window` chunks each,
// and their chunks are stored in a random order. Checks, all along, what the plan promises.
void run_to_the_end(std::uint64_t size, std::uint64_t from, std::uint16_t members,
                    std::uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "size " << size << " from " << from << " members " << members
                                  << " seed " << seed);
  StripePlan plan(size, kChunk, from, members);
  std::mt19937 random(seed);
  const std::size_t window = 1 + seed % 3;
  std::vector<std::vector<PlannedChunk>> held(members);
  std::vector<std::uint64_t> handed_out;  // offsets, in the order handed out
  std::vector<bool> stored(size / kChunk + 1, false);
  std::uint64_t expected_next = from;
  for (int step = 0; step < 100000 && !plan.all_stored(); ++step) {
    const auto m = static_cast<std::uint16_t>(random() % members);
    if (held[m].size() < window && random() % 2 == 0) {
      if (auto chunk = plan.next(m)) {
        ASSERT_EQ(chunk->offset, expected_next) << "chunks go in file order, none twice";
        ASSERT_EQ(chunk->length, std::min<std::uint64_t>(kChunk, size - chunk->offset));
        ASSERT_GT(chunk->length, 0u);
        expected_next += chunk->length;
        held[m].push_back(*chunk);
        handed_out.push_back(chunk->offset);
      } else {
        ASSERT_EQ(expected_next, size) << "nothing handed out while chunks remain";
      }
      continue;
    }
    if (held[m].empty()) continue;
    const std::size_t pick = random() % held[m].size();
    const PlannedChunk chunk = held[m][pick];
    held[m].erase(held[m].begin() + static_cast<std::ptrdiff_t>(pick));
    ASSERT_TRUE(plan.stored(m, chunk.offset));
    ASSERT_FALSE(plan.stored(m, chunk.offset)) << "a chunk is stored once";
    stored[chunk.offset / kChunk] = true;
    std::uint64_t prefix = from;
    while (prefix < size && stored[prefix / kChunk])
      prefix += std::min<std::uint64_t>(kChunk, size - prefix);
    ASSERT_EQ(plan.stored_prefix(), prefix);
  }
  ASSERT_TRUE(plan.all_stored());
  EXPECT_EQ(plan.stored_prefix(), size);
  std::uint64_t handed = 0, by_members = 0;
  for (std::uint16_t m = 0; m < members; ++m) {
    EXPECT_TRUE(plan.member_done(m));
    EXPECT_EQ(plan.in_flight(m), 0u);
    EXPECT_EQ(plan.handed(m), plan.stored_by(m));
    handed += plan.handed(m);
    by_members += plan.stored_by(m);
  }
  EXPECT_EQ(handed, size - from) << "every byte from the start handed out exactly once";
  EXPECT_EQ(by_members, size - from);
  EXPECT_FALSE(plan.next(0).has_value());
}

TEST(StripePlan, EverySizeAtTheChunkEdgesOverOneToFourMembers) {
  for (const std::uint64_t size : edge_sizes())
    for (std::uint16_t members = 1; members <= 4; ++members)
      for (std::uint32_t seed = 1; seed <= 6; ++seed) run_to_the_end(size, 0, members, seed);
}

TEST(StripePlan, AResumeStartsOnTheChunkGridInsideTheFile) {
  for (const std::uint64_t size : edge_sizes())
    for (std::uint64_t from = kChunk; from < size; from += kChunk)
      for (std::uint16_t members = 1; members <= 3; ++members)
        run_to_the_end(size, from, members, static_cast<std::uint32_t>(size + from + members));
  EXPECT_THROW(StripePlan(10 * kChunk, kChunk, kChunk + 1, 2), std::invalid_argument);
  EXPECT_THROW(StripePlan(10 * kChunk, kChunk, 10 * kChunk, 2), std::invalid_argument)
      << "a resume leaves something to send";
  EXPECT_THROW(StripePlan(kChunk, 0, 0, 2), std::invalid_argument);
  EXPECT_THROW(StripePlan(kChunk, kChunk, 0, 0), std::invalid_argument);
}

TEST(StripePlan, AnEmptyFileIsStoredWithoutAChunk) {
  StripePlan plan(0, kChunk, 0, 2);
  EXPECT_TRUE(plan.all_stored());
  EXPECT_FALSE(plan.next(0).has_value());
  EXPECT_TRUE(plan.member_done(0));
  EXPECT_TRUE(plan.member_done(1));
}

// A slow member holds its chunk: the others go on past it, the prefix waits for it, and a
// member is done only once its own chunks are stored and none is left to hand out.
TEST(StripePlan, TheFastMemberCarriesMoreAndThePrefixWaitsForTheSlowOne) {
  StripePlan plan(4 * kChunk, kChunk, 0, 2);
  const auto slow = plan.next(1);
  ASSERT_EQ(slow, (PlannedChunk{0, kChunk}));
  for (std::uint64_t at = kChunk; at < 4 * kChunk; at += kChunk) {
    const auto chunk = plan.next(0);
    ASSERT_EQ(chunk, (PlannedChunk{at, kChunk}));
    ASSERT_TRUE(plan.stored(0, at));
  }
  EXPECT_EQ(plan.stored_prefix(), 0u) << "chunk 0 is not stored yet";
  EXPECT_TRUE(plan.member_done(0));
  EXPECT_FALSE(plan.member_done(1));
  EXPECT_FALSE(plan.stored(0, 0)) << "chunk 0 is member 1's";
  ASSERT_TRUE(plan.stored(1, 0));
  EXPECT_TRUE(plan.all_stored());
  EXPECT_EQ(plan.handed(0), 3u * kChunk);
  EXPECT_EQ(plan.handed(1), 1u * kChunk);
}

// A member lost at every point of a file: the plan is interrupted (nothing more for anyone),
// the lost member's chunks in flight are not counted stored, the others' still come back,
// and the prefix is exactly what was stored in file order without a gap.
TEST(StripePlan, AMemberLostAtEveryPointInterruptsTheFileAtItsStoredPrefix) {
  const std::uint64_t size = 6 * kChunk + 100;
  for (std::uint32_t lose_after = 0; lose_after <= 7; ++lose_after) {
    SCOPED_TRACE(lose_after);
    StripePlan plan(size, kChunk, 0, 2);
    std::vector<PlannedChunk> of[2];
    // Members take turns; member 0 stores at once, member 1 holds its chunks.
    for (std::uint32_t i = 0; i < lose_after; ++i) {
      const auto m = static_cast<std::uint16_t>(i % 2);
      if (auto chunk = plan.next(m)) {
        of[m].push_back(*chunk);
        if (m == 0) {
          ASSERT_TRUE(plan.stored(0, chunk->offset));
        }
      }
    }
    const std::uint64_t prefix = plan.lose(1);
    EXPECT_TRUE(plan.interrupted());
    EXPECT_EQ(prefix, plan.stored_prefix());
    // Member 0's chunks are stored, member 1's are not: the prefix is member 0's chunks from
    // the start of the file up to member 1's first.
    std::uint64_t expected = 0;
    for (const PlannedChunk& c : of[0])
      if (c.offset == expected) expected += c.length;
    EXPECT_EQ(prefix, expected);
    EXPECT_FALSE(plan.next(0).has_value()) << "nothing more after an interruption";
    EXPECT_FALSE(plan.next(1).has_value());
    for (const PlannedChunk& c : of[1]) EXPECT_FALSE(plan.stored(1, c.offset)) << "lost with it";
    EXPECT_TRUE(plan.member_done(0));
    EXPECT_TRUE(plan.member_done(1));
    EXPECT_FALSE(plan.all_stored());
  }
}

// The other member's chunks still in flight when one is lost come back and extend the prefix.
TEST(StripePlan, TheChunksOfTheMembersLeftStillCountAfterAnInterruption) {
  StripePlan plan(4 * kChunk, kChunk, 0, 2);
  const auto a = plan.next(0);
  const auto b = plan.next(0);
  const auto c = plan.next(1);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(plan.lose(1), 0u);
  EXPECT_FALSE(plan.member_done(0)) << "its own two chunks are in flight";
  ASSERT_TRUE(plan.stored(0, b->offset));
  ASSERT_TRUE(plan.stored(0, a->offset));
  EXPECT_EQ(plan.stored_prefix(), 2u * kChunk) << "up to the lost member's chunk";
  EXPECT_TRUE(plan.member_done(0));
}

TEST(StripePlan, AMemberOutOfRangeGetsNothingAndStoresNothing) {
  StripePlan plan(4 * kChunk, kChunk, 0, 2);
  EXPECT_FALSE(plan.next(2).has_value());
  EXPECT_FALSE(plan.stored(2, 0));
  EXPECT_TRUE(plan.member_done(2));
  EXPECT_EQ(plan.handed(2), 0u);
}

}  // namespace
