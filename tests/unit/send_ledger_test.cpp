#include "one_file_send_ledger.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

// The sender's data-phase rules for one file (docs/PROTOCOL.md 5.2-5.3): each rule and each
// error on its own, as the sender's session ledger applies them to a file
// (one_file_send_ledger.hpp). ledger_simulation_test.cpp runs them against the receiver's.

namespace {

using namespace rdmax::proto;
using SendLedger = rdmax::test::OneFileSendLedger;
using Planned = SendLedger::Planned;

constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kRegion = 0x7f00'0000'0000;

Accept accept(std::uint32_t slot_size, std::uint32_t slot_count, std::uint64_t region = kRegion) {
  return Accept{region, 0, slot_size, slot_count};
}

// Everything observable, to check that a refused call changed nothing.
std::string snapshot(const SendLedger& ledger) {
  std::string s =
      std::to_string(ledger.bytes_sent()) + "/" + std::to_string(ledger.bytes_completed()) + ":";
  for (std::uint32_t i = 0; i < ledger.slot_count(); ++i)
    s += std::string(ledger.credited(i) ? "c" : "-") + (ledger.busy(i) ? "b" : "-");
  return s;
}

TEST(SendLedger, ErrorNames) {
  EXPECT_STREQ(to_string(CreditError::SlotOutOfRange), "SlotOutOfRange");
  EXPECT_STREQ(to_string(CreditError::AlreadyHeld), "AlreadyHeld");
  EXPECT_STREQ(to_string(static_cast<CreditError>(200)), "?");
}

TEST(SendLedger, StartsWithNothingCreditedOrBusy) {
  SendLedger ledger(10000, accept(4096, 4), 8);
  EXPECT_EQ(ledger.slot_count(), 4U);
  EXPECT_EQ(ledger.active_slots(), 3U);  // three chunks
  for (std::uint32_t s = 0; s < 4; ++s) {
    EXPECT_FALSE(ledger.credited(s));
    EXPECT_FALSE(ledger.busy(s));
  }
  EXPECT_FALSE(ledger.credited(kU32Max));
  EXPECT_FALSE(ledger.busy(kU32Max));
  EXPECT_EQ(ledger.bytes_sent(), 0U);
  EXPECT_EQ(ledger.bytes_completed(), 0U);
  EXPECT_FALSE(ledger.all_done());
  EXPECT_EQ(ledger.plan().chunk_count(), 3U);
  EXPECT_EQ(ledger.next(), std::nullopt);  // no credit yet
}

TEST(SendLedger, ActiveSlotsAreTheSmallestOfThreeLimits) {
  EXPECT_EQ(SendLedger(100 * 4096, accept(4096, 4), 8).active_slots(), 4U);  // slot_count
  EXPECT_EQ(SendLedger(100 * 4096, accept(4096, 4), 2).active_slots(), 2U);  // max_active
  EXPECT_EQ(SendLedger(2 * 4096, accept(4096, 4), 8).active_slots(), 2U);    // chunks
  EXPECT_EQ(SendLedger(1, accept(4096, 64), 64).active_slots(), 1U);
  EXPECT_EQ(SendLedger(0, accept(4096, 4), 8).active_slots(), 0U);  // empty file
  // 0 breaks the precondition and is taken as 1.
  EXPECT_EQ(SendLedger(100 * 4096, accept(4096, 4), 0).active_slots(), 1U);
  // A huge chunk count does not truncate to 32 bits on the way.
  EXPECT_EQ(SendLedger(UINT64_MAX, accept(4096, 64), kU32Max).active_slots(), 64U);
}

TEST(SendLedger, PlansTheNextChunkOnTheLowestFreeSlot) {
  SendLedger ledger(10000, accept(4096, 3), 3);
  ASSERT_EQ(ledger.credit(Credit{2, 0x22}), std::nullopt);
  ASSERT_EQ(ledger.credit(Credit{1, 0x11}), std::nullopt);
  EXPECT_TRUE(ledger.credited(1));
  EXPECT_TRUE(ledger.credited(2));
  EXPECT_EQ(ledger.next(), (Planned{1, 0, 4096, kRegion + 4096, 0x11}));
  EXPECT_FALSE(ledger.credited(1));
  EXPECT_TRUE(ledger.busy(1));
  EXPECT_EQ(ledger.bytes_sent(), 4096U);
  EXPECT_EQ(ledger.next(), (Planned{2, 4096, 4096, kRegion + 8192, 0x22}));
  EXPECT_EQ(ledger.bytes_sent(), 8192U);
  EXPECT_EQ(ledger.next(), std::nullopt);  // nothing credited
  ASSERT_EQ(ledger.credit(Credit{0, 0x10}), std::nullopt);
  EXPECT_EQ(ledger.next(), (Planned{0, 8192, 10000 - 8192, kRegion, 0x10}));
  EXPECT_EQ(ledger.bytes_sent(), 10000U);
  EXPECT_EQ(ledger.bytes_completed(), 0U);
  EXPECT_FALSE(ledger.all_done());
}

TEST(SendLedger, DuplicateCreditIsAlreadyHeld) {
  SendLedger ledger(10000, accept(4096, 2), 2);
  ASSERT_EQ(ledger.credit(Credit{0, 7}), std::nullopt);
  const std::string before = snapshot(ledger);
  EXPECT_EQ(ledger.credit(Credit{0, 7}), CreditError::AlreadyHeld);
  EXPECT_EQ(snapshot(ledger), before);
  EXPECT_EQ(ledger.next()->rkey, 7U);
}

// An older Credit delivered after a newer one (or a replayed one) while the credit is held:
// refused, and the key already held is the one used.
TEST(SendLedger, StaleCreditIsAlreadyHeldAndKeepsTheCurrentKey) {
  SendLedger ledger(10 * 4096, accept(4096, 1), 1);
  ASSERT_EQ(ledger.credit(Credit{0, 1}), std::nullopt);
  ASSERT_EQ(ledger.next()->rkey, 1U);
  ASSERT_EQ(ledger.credit(Credit{0, 2}), std::nullopt);              // new key while busy: fine
  EXPECT_EQ(ledger.credit(Credit{0, 1}), CreditError::AlreadyHeld);  // the old one again
  EXPECT_EQ(ledger.completed(0), 4096U);
  const auto p = ledger.next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rkey, 2U);
  EXPECT_EQ(p->offset, 4096U);
}

// Slots the receiver never announced.
TEST(SendLedger, FutureSlotIsOutOfRange) {
  SendLedger ledger(10000, accept(4096, 2), 2);
  const std::string before = snapshot(ledger);
  EXPECT_EQ(ledger.credit(Credit{2, 1}), CreditError::SlotOutOfRange);
  EXPECT_EQ(ledger.credit(Credit{64, 1}), CreditError::SlotOutOfRange);
  EXPECT_EQ(ledger.credit(Credit{kU32Max, 1}), CreditError::SlotOutOfRange);
  EXPECT_EQ(snapshot(ledger), before);
  EXPECT_EQ(ledger.next(), std::nullopt);
}

TEST(SendLedger, CreditWhileBusyWaitsForTheCompletion) {
  SendLedger ledger(10 * 4096, accept(4096, 1), 1);
  ASSERT_EQ(ledger.credit(Credit{0, 1}), std::nullopt);
  ASSERT_TRUE(ledger.next().has_value());
  // The receiver stored the chunk before our SEND's completion was polled.
  ASSERT_EQ(ledger.credit(Credit{0, 2}), std::nullopt);
  EXPECT_TRUE(ledger.credited(0));
  EXPECT_TRUE(ledger.busy(0));
  EXPECT_EQ(ledger.next(), std::nullopt);  // credited but busy: not yet
  EXPECT_EQ(ledger.bytes_sent(), 4096U);
  EXPECT_EQ(ledger.completed(0), 4096U);
  EXPECT_EQ(ledger.next(), (Planned{0, 4096, 4096, kRegion, 2}));
}

TEST(SendLedger, CreditsAboveTheActiveSlotsAreRecordedNeverUsed) {
  SendLedger ledger(10 * 4096, accept(4096, 4), 2);
  ASSERT_EQ(ledger.active_slots(), 2U);
  ASSERT_EQ(ledger.credit(Credit{3, 3}), std::nullopt);
  ASSERT_EQ(ledger.credit(Credit{2, 2}), std::nullopt);
  EXPECT_TRUE(ledger.credited(3));
  EXPECT_EQ(ledger.credit(Credit{3, 3}), CreditError::AlreadyHeld);
  EXPECT_EQ(ledger.next(), std::nullopt);
  ASSERT_EQ(ledger.credit(Credit{1, 1}), std::nullopt);
  EXPECT_EQ(ledger.next()->slot, 1U);
  EXPECT_EQ(ledger.next(), std::nullopt);  // slot 1 busy, slot 0 not credited, 2 and 3 idle
  EXPECT_TRUE(ledger.credited(2));
  EXPECT_FALSE(ledger.busy(2));
  EXPECT_FALSE(ledger.busy(3));
}

TEST(SendLedger, CompletedOnlyForBusySlots) {
  SendLedger ledger(10000, accept(4096, 3), 3);
  EXPECT_EQ(ledger.completed(0), 0U);
  EXPECT_EQ(ledger.completed(3), 0U);
  EXPECT_EQ(ledger.completed(kU32Max), 0U);
  ASSERT_EQ(ledger.credit(Credit{0, 1}), std::nullopt);
  ASSERT_EQ(ledger.credit(Credit{1, 1}), std::nullopt);
  ASSERT_TRUE(ledger.next().has_value());
  EXPECT_EQ(ledger.completed(1), 0U);  // credited, not busy
  EXPECT_TRUE(ledger.credited(1));
  EXPECT_EQ(ledger.completed(0), 4096U);
  EXPECT_FALSE(ledger.busy(0));
  EXPECT_EQ(ledger.completed(0), 0U);  // twice
  EXPECT_EQ(ledger.bytes_completed(), 4096U);
}

TEST(SendLedger, CompletionsInAnyOrder) {
  SendLedger ledger(10000, accept(4096, 3), 3);
  for (std::uint32_t s = 0; s < 3; ++s) ASSERT_EQ(ledger.credit(Credit{s, s}), std::nullopt);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ledger.next().has_value());
  EXPECT_EQ(ledger.next(), std::nullopt);  // every chunk handed out
  EXPECT_EQ(ledger.completed(2), 10000U - 8192);
  EXPECT_FALSE(ledger.all_done());
  EXPECT_EQ(ledger.completed(0), 4096U);
  EXPECT_FALSE(ledger.all_done());
  EXPECT_EQ(ledger.bytes_completed(), 10000U - 4096);
  EXPECT_EQ(ledger.completed(1), 4096U);
  EXPECT_TRUE(ledger.all_done());
  EXPECT_EQ(ledger.bytes_completed(), 10000U);
}

TEST(SendLedger, TrailingCreditsAfterTheLastChunk) {
  SendLedger ledger(4096, accept(4096, 2), 2);
  ASSERT_EQ(ledger.credit(Credit{0, 1}), std::nullopt);
  ASSERT_TRUE(ledger.next().has_value());
  ASSERT_EQ(ledger.completed(0), 4096U);
  ASSERT_TRUE(ledger.all_done());
  EXPECT_EQ(ledger.credit(Credit{0, 2}), std::nullopt);
  EXPECT_EQ(ledger.credit(Credit{1, 2}), std::nullopt);  // never active
  EXPECT_EQ(ledger.next(), std::nullopt);
  EXPECT_TRUE(ledger.all_done());
  EXPECT_EQ(ledger.bytes_sent(), 4096U);
  EXPECT_EQ(ledger.credit(Credit{0, 3}), CreditError::AlreadyHeld);
}

TEST(SendLedger, EmptyFileIsDoneAtOnce) {
  SendLedger ledger(0, accept(4096, 1), 4);
  EXPECT_EQ(ledger.active_slots(), 0U);
  EXPECT_TRUE(ledger.all_done());
  EXPECT_EQ(ledger.next(), std::nullopt);
  EXPECT_EQ(ledger.credit(Credit{0, 1}), std::nullopt);  // recorded all the same
  EXPECT_EQ(ledger.next(), std::nullopt);
  EXPECT_TRUE(ledger.all_done());
  EXPECT_EQ(ledger.bytes_sent(), 0U);
}

TEST(SendLedger, OneByteFile) {
  SendLedger ledger(1, accept(4096, 4), 4);
  EXPECT_EQ(ledger.active_slots(), 1U);
  for (std::uint32_t s = 0; s < 4; ++s) ASSERT_EQ(ledger.credit(Credit{s, 9}), std::nullopt);
  EXPECT_EQ(ledger.next(), (Planned{0, 0, 1, kRegion, 9}));
  EXPECT_EQ(ledger.next(), std::nullopt);
  EXPECT_FALSE(ledger.all_done());
  EXPECT_EQ(ledger.completed(0), 1U);
  EXPECT_TRUE(ledger.all_done());
  EXPECT_EQ(ledger.bytes_completed(), 1U);
}

TEST(SendLedger, ExactMultipleOfTheSlotSize) {
  SendLedger ledger(3 * 4096, accept(4096, 1), 1);
  for (std::uint32_t i = 0; i < 3; ++i) {
    ASSERT_EQ(ledger.credit(Credit{0, 100 + i}), std::nullopt);
    EXPECT_EQ(ledger.next(), (Planned{0, i * 4096ULL, 4096, kRegion, 100 + i}));
    EXPECT_EQ(ledger.completed(0), 4096U);
  }
  EXPECT_TRUE(ledger.all_done());
  EXPECT_EQ(ledger.bytes_sent(), 3U * 4096);
  ASSERT_EQ(ledger.credit(Credit{0, 1}), std::nullopt);
  EXPECT_EQ(ledger.next(), std::nullopt);  // no fourth, empty chunk
}

// Near 2^64 neither the chunk plan nor the slot addresses may wrap.
TEST(SendLedger, HugeFileSizesAndAddresses) {
  // The highest region whose last byte, of the last of 64 maximal slots, is the last byte of
  // the address space.
  const std::uint64_t region = UINT64_MAX - 64ULL * kU32Max + 1;
  SendLedger ledger(UINT64_MAX, accept(kU32Max, 64, region), 64);
  ASSERT_EQ(ledger.active_slots(), 64U);
  for (std::uint32_t s = 0; s < 64; ++s) ASSERT_EQ(ledger.credit(Credit{s, s}), std::nullopt);
  for (std::uint32_t s = 0; s < 64; ++s) {
    const auto p = ledger.next();
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(*p, (Planned{s, std::uint64_t{s} * kU32Max, kU32Max,
                           region + std::uint64_t{s} * kU32Max, s}));
  }
  EXPECT_EQ(ledger.bytes_sent(), 64ULL * kU32Max);
  EXPECT_EQ(ledger.completed(63), kU32Max);
  EXPECT_EQ(ledger.bytes_completed(), std::uint64_t{kU32Max});
  EXPECT_FALSE(ledger.all_done());

  // The end of a file near 2^64 is 2^32 chunks away, too many to walk; the end of one with
  // 2 GiB slots, past 2^32 bytes, is not.
  const std::uint32_t big = 1U << 31;
  SendLedger tail(3ULL * big + 5, accept(big, 2), 2);
  std::uint64_t offset = 0;
  for (std::uint32_t i = 0; i < 4; ++i) {
    ASSERT_EQ(tail.credit(Credit{i % 2, i}), std::nullopt);
    const auto p = tail.next();
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->offset, offset);
    EXPECT_EQ(p->length, i < 3 ? big : 5U);
    EXPECT_EQ(p->remote_addr, kRegion + std::uint64_t{i % 2} * big);
    offset += p->length;
    EXPECT_EQ(tail.completed(i % 2), p->length);
  }
  EXPECT_TRUE(tail.all_done());
  EXPECT_EQ(tail.bytes_completed(), 3ULL * big + 5);
}

}  // namespace
