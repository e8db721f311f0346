#include "one_file_receive_ledger.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

// The receiver's data-phase rules for one file (docs/PROTOCOL.md 5.3-5.4): each rule and each
// error on its own, as the receiver's session ledger applies them to a Hello's one entry
// (one_file_receive_ledger.hpp). ledger_simulation_test.cpp runs them against the sender's.

namespace {

using namespace rdmax::proto;
using rdmax::test::ChunkError;
using ReceiveLedger = rdmax::test::OneFileReceiveLedger;
using State = ReceiveLedger::SlotState;

constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();

// A ledger for a file of `file_size` bytes whose every slot has been granted once.
ReceiveLedger granted(std::uint64_t file_size, std::uint32_t slot_size, std::uint32_t slots) {
  ReceiveLedger ledger(file_size, slot_size, slots);
  for (std::uint32_t s = 0; s < slots; ++s) EXPECT_TRUE(ledger.grant(s)) << "slot " << s;
  return ledger;
}

// Everything observable, to check that a refused call changed nothing.
std::string snapshot(const ReceiveLedger& ledger) {
  std::string s = std::to_string(ledger.received()) + "/" + std::to_string(ledger.storing()) + ":";
  for (std::uint32_t i = 0; i < ledger.slot_count(); ++i)
    s += std::to_string(static_cast<int>(ledger.state(i)));
  return s;
}

TEST(ReceiveLedger, StartsWithEverySlotIdle) {
  const ReceiveLedger ledger(10000, 4096, 3);
  EXPECT_EQ(ledger.slot_count(), 3U);
  for (std::uint32_t s = 0; s < 3; ++s) EXPECT_EQ(ledger.state(s), State::Idle);
  EXPECT_EQ(ledger.received(), 0U);
  EXPECT_EQ(ledger.storing(), 0U);
  EXPECT_FALSE(ledger.complete());
  EXPECT_EQ(ledger.plan().file_size, 10000U);
  EXPECT_EQ(ledger.plan().chunk_size, 4096U);
  EXPECT_EQ(ledger.plan().chunk_count(), 3U);
  // Out of range reads as Idle rather than out of bounds.
  EXPECT_EQ(ledger.state(3), State::Idle);
  EXPECT_EQ(ledger.state(kU32Max), State::Idle);
}

TEST(ReceiveLedger, GrantOnlyFromIdle) {
  ReceiveLedger ledger(10000, 4096, 2);
  EXPECT_TRUE(ledger.grant(1));
  EXPECT_EQ(ledger.state(1), State::Credited);
  EXPECT_EQ(ledger.state(0), State::Idle);
  EXPECT_FALSE(ledger.grant(1));  // Credited already
  EXPECT_EQ(ledger.state(1), State::Credited);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 4096, 1}), std::nullopt);
  EXPECT_FALSE(ledger.grant(1));  // Storing
  EXPECT_EQ(ledger.state(1), State::Storing);
  EXPECT_EQ(ledger.storing(), 1U);
}

TEST(ReceiveLedger, GrantRefusesSlotsOutOfRange) {
  ReceiveLedger ledger(10000, 4096, 2);
  const std::string before = snapshot(ledger);
  EXPECT_FALSE(ledger.grant(2));
  EXPECT_FALSE(ledger.grant(kU32Max));
  EXPECT_EQ(snapshot(ledger), before);
}

TEST(ReceiveLedger, AcceptsTheChunksInOrder) {
  ReceiveLedger ledger = granted(10000, 4096, 2);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 4096, 0}), std::nullopt);
  EXPECT_EQ(ledger.state(0), State::Storing);
  EXPECT_EQ(ledger.received(), 4096U);
  EXPECT_EQ(ledger.storing(), 1U);
  ASSERT_EQ(ledger.accept_chunk(Chunk{4096, 4096, 1}), std::nullopt);
  EXPECT_EQ(ledger.received(), 8192U);
  EXPECT_EQ(ledger.storing(), 2U);
  EXPECT_TRUE(ledger.stored(0));  // bytes 8192.. have not arrived: credit it back
  EXPECT_EQ(ledger.state(0), State::Idle);
  EXPECT_EQ(ledger.storing(), 1U);
  ASSERT_TRUE(ledger.grant(0));
  ASSERT_EQ(ledger.accept_chunk(Chunk{8192, 10000 - 8192, 0}), std::nullopt);
  EXPECT_TRUE(ledger.complete());
  EXPECT_EQ(ledger.received(), 10000U);
  EXPECT_EQ(ledger.storing(), 2U);
  EXPECT_FALSE(ledger.stored(1));  // every byte is in: no credit back
  EXPECT_FALSE(ledger.stored(0));
  EXPECT_EQ(ledger.storing(), 0U);
  EXPECT_EQ(ledger.state(0), State::Idle);
  EXPECT_EQ(ledger.state(1), State::Idle);
}

TEST(ReceiveLedger, SlotOutOfRange) {
  ReceiveLedger ledger = granted(10000, 4096, 2);
  const std::string before = snapshot(ledger);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4096, 2}), ChunkError::SlotOutOfRange);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4096, kU32Max}), ChunkError::SlotOutOfRange);
  EXPECT_EQ(snapshot(ledger), before);
}

TEST(ReceiveLedger, SlotNeverCredited) {
  ReceiveLedger ledger(10000, 4096, 2);
  ASSERT_TRUE(ledger.grant(0));
  const std::string before = snapshot(ledger);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4096, 1}), ChunkError::SlotNotCredited);
  EXPECT_EQ(snapshot(ledger), before);
}

TEST(ReceiveLedger, ChunkReusingASlotBeforeItIsGrantedAgain) {
  ReceiveLedger ledger = granted(5 * 4096, 4096, 2);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 4096, 0}), std::nullopt);
  // While the first chunk is being stored.
  EXPECT_EQ(ledger.accept_chunk(Chunk{4096, 4096, 0}), ChunkError::SlotNotCredited);
  // Stored, but not credited back yet.
  EXPECT_TRUE(ledger.stored(0));
  EXPECT_EQ(ledger.accept_chunk(Chunk{4096, 4096, 0}), ChunkError::SlotNotCredited);
  EXPECT_EQ(ledger.received(), 4096U);
  // The other slot still holds its credit.
  EXPECT_EQ(ledger.accept_chunk(Chunk{4096, 4096, 1}), std::nullopt);
  // And once granted again, the first one works.
  ASSERT_TRUE(ledger.grant(0));
  EXPECT_EQ(ledger.accept_chunk(Chunk{8192, 4096, 0}), std::nullopt);
  EXPECT_EQ(ledger.received(), 3U * 4096);
}

TEST(ReceiveLedger, WrongOffset) {
  ReceiveLedger ledger = granted(10000, 4096, 2);
  const std::string before = snapshot(ledger);
  EXPECT_EQ(ledger.accept_chunk(Chunk{4096, 4096, 0}), ChunkError::WrongOffset);  // skips one
  EXPECT_EQ(ledger.accept_chunk(Chunk{1, 4096, 0}), ChunkError::WrongOffset);
  EXPECT_EQ(ledger.accept_chunk(Chunk{UINT64_MAX, 4096, 0}), ChunkError::WrongOffset);
  EXPECT_EQ(snapshot(ledger), before);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 4096, 0}), std::nullopt);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4096, 1}), ChunkError::WrongOffset);  // a repeat
  EXPECT_EQ(ledger.accept_chunk(Chunk{4095, 4096, 1}), ChunkError::WrongOffset);
  EXPECT_EQ(ledger.accept_chunk(Chunk{4097, 4096, 1}), ChunkError::WrongOffset);
  EXPECT_EQ(ledger.received(), 4096U);
  EXPECT_EQ(ledger.state(1), State::Credited);
}

TEST(ReceiveLedger, WrongLength) {
  ReceiveLedger ledger = granted(10000, 4096, 2);
  const std::string before = snapshot(ledger);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 0, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4095, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4097, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, kU32Max, 0}), ChunkError::WrongLength);
  EXPECT_EQ(snapshot(ledger), before);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 4096, 0}), std::nullopt);
  ASSERT_EQ(ledger.accept_chunk(Chunk{4096, 4096, 1}), std::nullopt);
  EXPECT_TRUE(ledger.stored(0));
  ASSERT_TRUE(ledger.grant(0));
  // The last chunk is short: a full one would run past the end, a shorter one leaves a gap.
  EXPECT_EQ(ledger.accept_chunk(Chunk{8192, 4096, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.accept_chunk(Chunk{8192, 1807, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.accept_chunk(Chunk{8192, 1809, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.accept_chunk(Chunk{8192, 0, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.received(), 8192U);
  EXPECT_EQ(ledger.accept_chunk(Chunk{8192, 1808, 0}), std::nullopt);
  EXPECT_TRUE(ledger.complete());
}

TEST(ReceiveLedger, ChunkAfterTheLast) {
  ReceiveLedger ledger = granted(4096 + 1, 4096, 3);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 4096, 0}), std::nullopt);
  ASSERT_EQ(ledger.accept_chunk(Chunk{4096, 1, 1}), std::nullopt);
  ASSERT_TRUE(ledger.complete());
  const std::string before = snapshot(ledger);
  // Slot 2 still holds a credit; nothing may arrive in it now, however it is dressed.
  EXPECT_EQ(ledger.accept_chunk(Chunk{4097, 0, 2}), ChunkError::PastEnd);
  EXPECT_EQ(ledger.accept_chunk(Chunk{4097, 1, 2}), ChunkError::PastEnd);
  EXPECT_EQ(ledger.accept_chunk(Chunk{4096, 1, 2}), ChunkError::PastEnd);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4096, 2}), ChunkError::PastEnd);
  EXPECT_EQ(snapshot(ledger), before);
  EXPECT_EQ(ledger.received(), 4097U);
}

// The checks run in the documented order: the first rule broken is the one reported.
TEST(ReceiveLedger, ErrorPrecedence) {
  {
    ReceiveLedger ledger(0, 4096, 1);  // complete from the start
    EXPECT_EQ(ledger.accept_chunk(Chunk{5, 0, 1}), ChunkError::SlotOutOfRange);
    EXPECT_EQ(ledger.accept_chunk(Chunk{5, 0, 0}), ChunkError::PastEnd);  // not SlotNotCredited
  }
  ReceiveLedger ledger(10000, 4096, 2);
  ASSERT_TRUE(ledger.grant(0));
  // Slot 1 not credited, offset and length wrong too.
  EXPECT_EQ(ledger.accept_chunk(Chunk{7, 3, 1}), ChunkError::SlotNotCredited);
  // Offset and length wrong.
  EXPECT_EQ(ledger.accept_chunk(Chunk{7, 3, 0}), ChunkError::WrongOffset);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 3, 0}), ChunkError::WrongLength);
}

TEST(ReceiveLedger, StoredOnlyFromStoring) {
  ReceiveLedger ledger(10000, 4096, 3);
  ASSERT_TRUE(ledger.grant(1));
  EXPECT_FALSE(ledger.stored(0));  // Idle
  EXPECT_FALSE(ledger.stored(1));  // Credited
  EXPECT_EQ(ledger.state(1), State::Credited);
  EXPECT_FALSE(ledger.stored(3));
  EXPECT_FALSE(ledger.stored(kU32Max));
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 4096, 1}), std::nullopt);
  EXPECT_TRUE(ledger.stored(1));
  EXPECT_FALSE(ledger.stored(1));  // twice
  EXPECT_EQ(ledger.storing(), 0U);
  EXPECT_EQ(ledger.state(1), State::Idle);
}

TEST(ReceiveLedger, CloseRevokesCreditsButLetsStoringFinish) {
  ReceiveLedger ledger = granted(10 * 4096, 4096, 3);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 4096, 0}), std::nullopt);
  ASSERT_EQ(ledger.accept_chunk(Chunk{4096, 4096, 1}), std::nullopt);
  ASSERT_TRUE(ledger.stored(1));  // Idle, about to be granted when close() comes
  ledger.close();
  EXPECT_EQ(ledger.state(0), State::Storing);
  EXPECT_EQ(ledger.state(1), State::Idle);
  EXPECT_EQ(ledger.state(2), State::Idle);  // was Credited
  EXPECT_EQ(ledger.storing(), 1U);
  EXPECT_FALSE(ledger.grant(1));
  EXPECT_FALSE(ledger.grant(2));
  EXPECT_EQ(ledger.accept_chunk(Chunk{8192, 4096, 2}), ChunkError::SlotNotCredited);
  // Bytes are still missing, but after close nothing is credited back.
  EXPECT_FALSE(ledger.stored(0));
  EXPECT_EQ(ledger.state(0), State::Idle);
  EXPECT_EQ(ledger.storing(), 0U);
  EXPECT_EQ(ledger.received(), 8192U);
  EXPECT_FALSE(ledger.grant(0));
  ledger.close();  // twice: harmless
  EXPECT_EQ(ledger.received(), 8192U);
  for (std::uint32_t s = 0; s < 3; ++s) EXPECT_EQ(ledger.state(s), State::Idle);
}

TEST(ReceiveLedger, EmptyFile) {
  ReceiveLedger ledger(0, 4096, 1);
  EXPECT_TRUE(ledger.complete());
  EXPECT_EQ(ledger.plan().chunk_count(), 0U);
  EXPECT_FALSE(ledger.grant(0));  // no Credit for an empty file (docs/PROTOCOL.md 5.3)
  EXPECT_EQ(ledger.state(0), State::Idle);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 0, 0}), ChunkError::PastEnd);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4096, 0}), ChunkError::PastEnd);
  EXPECT_EQ(ledger.received(), 0U);
}

TEST(ReceiveLedger, OneByteFile) {
  ReceiveLedger ledger = granted(1, 4096, 1);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 4096, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.accept_chunk(Chunk{1, 1, 0}), ChunkError::WrongOffset);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, 1, 0}), std::nullopt);
  EXPECT_TRUE(ledger.complete());
  EXPECT_EQ(ledger.received(), 1U);
  EXPECT_FALSE(ledger.stored(0));
  EXPECT_FALSE(ledger.grant(0));
}

TEST(ReceiveLedger, ExactMultipleOfTheSlotSize) {
  ReceiveLedger ledger = granted(3 * 4096, 4096, 1);
  for (std::uint64_t i = 0; i < 3; ++i) {
    ASSERT_EQ(ledger.accept_chunk(Chunk{i * 4096, 4096, 0}), std::nullopt) << "chunk " << i;
    EXPECT_EQ(ledger.received(), (i + 1) * 4096);
    EXPECT_EQ(ledger.stored(0), i < 2);
    if (i < 2) {
      ASSERT_TRUE(ledger.grant(0));
    }
  }
  EXPECT_TRUE(ledger.complete());
  EXPECT_FALSE(ledger.grant(0));
  EXPECT_EQ(ledger.accept_chunk(Chunk{3 * 4096, 4096, 0}), ChunkError::PastEnd);
}

TEST(ReceiveLedger, SlotSizeOfOneByte) {
  ReceiveLedger ledger = granted(3, 1, 1);
  for (std::uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ledger.accept_chunk(Chunk{i, 2, 0}), ChunkError::WrongLength);
    ASSERT_EQ(ledger.accept_chunk(Chunk{i, 1, 0}), std::nullopt);
    if (ledger.stored(0)) {
      ASSERT_TRUE(ledger.grant(0));
    }
  }
  EXPECT_TRUE(ledger.complete());
}

// slot_size 0 breaks the constructor's precondition (Accept.slot_size >= 4096 on the wire);
// it must still not divide by zero or accept an empty chunk that would never advance.
TEST(ReceiveLedger, SlotSizeZeroAcceptsNothing) {
  ReceiveLedger ledger = granted(10, 0, 1);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 0, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, 10, 0}), ChunkError::WrongLength);
  EXPECT_EQ(ledger.received(), 0U);
  EXPECT_EQ(ledger.state(0), State::Credited);
}

// Near 2^64 nothing may wrap: neither offset + length nor the expected length.
TEST(ReceiveLedger, HugeFileSizes) {
  ReceiveLedger ledger = granted(UINT64_MAX, kU32Max, 2);
  EXPECT_FALSE(ledger.complete());
  EXPECT_EQ(ledger.plan().chunk_count(), UINT64_MAX / kU32Max);  // 2^32 + 1, exactly
  // offset + length would wrap to a small number.
  EXPECT_EQ(ledger.accept_chunk(Chunk{UINT64_MAX - 1, 2, 0}), ChunkError::WrongOffset);
  EXPECT_EQ(ledger.accept_chunk(Chunk{0, kU32Max - 1, 0}), ChunkError::WrongLength);
  ASSERT_EQ(ledger.accept_chunk(Chunk{0, kU32Max, 0}), std::nullopt);
  ASSERT_EQ(ledger.accept_chunk(Chunk{kU32Max, kU32Max, 1}), std::nullopt);
  EXPECT_EQ(ledger.received(), 2ULL * kU32Max);
  EXPECT_TRUE(ledger.stored(0));
  EXPECT_TRUE(ledger.stored(1));

  // A file one chunk short of 2^64, whose last chunk is a single byte.
  ReceiveLedger big = granted(UINT64_MAX - (UINT64_MAX % 4096) + 1 - 4096, 4096, 1);
  EXPECT_EQ(big.plan().length(big.plan().chunk_count() - 1), 1U);
  EXPECT_EQ(big.accept_chunk(Chunk{big.plan().file_size - 1, 1, 0}), ChunkError::WrongOffset);
  ASSERT_EQ(big.accept_chunk(Chunk{0, 4096, 0}), std::nullopt);
  EXPECT_EQ(big.received(), 4096U);
}

}  // namespace
