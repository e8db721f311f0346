// The session ledgers (protocol/send_ledger.hpp, protocol/receive_ledger.hpp): every rule
// of docs/PROTOCOL.md 7.5 on its own, and the two halves run against each other over a whole
// session.

#include <gtest/gtest.h>

#include "protocol/receive_ledger.hpp"
#include "protocol/send_ledger.hpp"

namespace session_ledger_test {

using namespace rdmax::proto;
using RL = ReceiveLedger;

constexpr std::uint32_t kSlot = 4096;

Offer file_offer(std::uint32_t entry, std::uint64_t size) {
  Offer o;
  o.entry = entry;
  o.size = size;
  o.path = "f" + std::to_string(entry);
  return o;
}

TEST(ReceiveLedger, OffersAreNumberedInOrderAndCounted) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 2, 100}, kSlot, 2);
  EXPECT_EQ(ledger.offer(file_offer(1, 10)), ReceiveRule::EntryOutOfOrder);
  EXPECT_EQ(ledger.offer(file_offer(0, 101)), ReceiveRule::TooManyBytes);
  EXPECT_EQ(ledger.offer(file_offer(0, 60)), std::nullopt);
  EXPECT_EQ(ledger.offer(file_offer(1, 41)), ReceiveRule::TooManyBytes);
  EXPECT_EQ(ledger.offer(file_offer(1, 40)), std::nullopt);
  EXPECT_EQ(ledger.offer(file_offer(2, 0)), ReceiveRule::TooManyEntries);
  EXPECT_FALSE(ledger.all_settled());
  ledger.settle(0, EntryEvent::Bad);
  ledger.settle(1, EntryEvent::Have);
  EXPECT_TRUE(ledger.all_settled());
}

// Open.total_bytes is an upper bound on the offered sizes (PROTOCOL.md 7.5): a session may
// offer less, and once every entry is offered no slot is credited for bytes never offered.
TEST(ReceiveLedger, TotalBytesIsAnUpperBound) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 2, 10 * kSlot}, kSlot, 1);
  ASSERT_EQ(ledger.offer(file_offer(0, 5)), std::nullopt);
  ASSERT_TRUE(ledger.grant(0));
  ledger.take(0);
  ASSERT_EQ(ledger.accept_chunk({0, 0, 0, 5}), std::nullopt);
  EXPECT_TRUE(ledger.stored(0, 0)) << "entry 1 is still to be offered and may have bytes";
  ASSERT_TRUE(ledger.grant(0));
  ASSERT_EQ(ledger.offer(file_offer(1, 0)), std::nullopt);  // the last entry: 5 bytes in all
  EXPECT_FALSE(ledger.wants_data());
  ledger.take(1);
  ledger.settle(1, EntryEvent::Bad);
  ledger.settle(0, EntryEvent::Bad);
  EXPECT_TRUE(ledger.all_settled());
}

// An entry answered Have or Refuse is settled when the answer goes: it no longer counts
// against the 16 in flight (PROTOCOL.md 7.5, 7.6).
TEST(ReceiveLedger, AnEntrySettledWithoutDataFreesItsPlaceInFlight) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 100, 0}, kSlot, 1);
  for (std::uint32_t i = 0; i < kMaxEntriesInFlight; ++i)
    ASSERT_EQ(ledger.offer(file_offer(i, 0)), std::nullopt);
  ledger.settle(0, EntryEvent::Have);  // (or a Refuse): no Take, no FileVerdict
  EXPECT_EQ(ledger.offer(file_offer(kMaxEntriesInFlight, 0)), std::nullopt);
  EXPECT_EQ(ledger.offer(file_offer(kMaxEntriesInFlight + 1, 0)), ReceiveRule::TooManyInFlight);
}

// Taking is the receiver's own step: only an offered file is taken, and only once. Anything
// else is a bug of the driver's (a joined entry is Taken by joined() already), refused with
// nothing changed.
TEST(ReceiveLedger, OnlyAnOfferedFileIsTakenAndOnlyOnce) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 2, kSlot}, kSlot, 1);
  ASSERT_EQ(ledger.offer(file_offer(0, 5)), std::nullopt);
  Offer dir = file_offer(1, 0);
  dir.kind = EntryKind::Directory;
  ASSERT_EQ(ledger.offer(dir), std::nullopt);
  EXPECT_THROW(ledger.take(7), std::logic_error) << "not in flight";
  EXPECT_THROW(ledger.take(1), std::logic_error) << "a directory";
  EXPECT_EQ(ledger.entry(1)->state, EntryState::Offered);
  ledger.take(0, 3);
  EXPECT_THROW(ledger.take(0), std::logic_error) << "taken already";
  EXPECT_EQ(ledger.entry(0)->state, EntryState::Taken);
  EXPECT_EQ(ledger.entry(0)->received, 3u) << "the second Take changed nothing";
}

TEST(ReceiveLedger, ChunksFollowEachFilesRules) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 2, kSlot + 10}, kSlot, 2);
  ASSERT_EQ(ledger.offer(file_offer(0, kSlot + 5)), std::nullopt);
  ASSERT_EQ(ledger.offer(file_offer(1, 5)), std::nullopt);
  ASSERT_TRUE(ledger.grant(0));
  ASSERT_TRUE(ledger.grant(1));
  // Not taken yet.
  EXPECT_EQ(ledger.accept_chunk({0, 0, 0, kSlot}), EntryFault::NotTaken);
  ledger.take(0);
  ledger.take(1);
  EXPECT_EQ(ledger.accept_chunk({7, 0, 0, kSlot}), ReceiveRule::UnknownEntry);
  EXPECT_EQ(ledger.accept_chunk({0, 2, 0, kSlot}), ReceiveRule::SlotOutOfRange);
  EXPECT_EQ(ledger.accept_chunk({0, 0, 1, kSlot}), ReceiveRule::WrongOffset);
  EXPECT_EQ(ledger.accept_chunk({0, 0, 0, 5}), ReceiveRule::WrongLength);
  EXPECT_EQ(ledger.accept_chunk({0, 0, 0, kSlot}), std::nullopt);
  EXPECT_EQ(ledger.accept_chunk({0, 0, kSlot, 5}), ReceiveRule::SlotNotCredited);
  EXPECT_EQ(ledger.accept_chunk({1, 1, 0, 5}), std::nullopt);  // files interleave
  EXPECT_EQ(ledger.slot_state(1), RL::SlotState::Storing);
  // A slot freed while bytes are still due is credited back; it held entry 1's chunk.
  EXPECT_FALSE(ledger.stored(1, 0)) << "the slot held entry 1's chunk, not entry 0's";
  EXPECT_TRUE(ledger.stored(1, 1));
  ASSERT_TRUE(ledger.grant(1));
  EXPECT_EQ(ledger.accept_chunk({0, 1, kSlot, 5}), std::nullopt);
  EXPECT_EQ(ledger.accept_chunk({0, 1, kSlot + 5, 1}), ReceiveRule::PastEnd);
  // Every byte is here: no more credits.
  EXPECT_FALSE(ledger.stored(0, 0));
  EXPECT_FALSE(ledger.grant(0));
  EXPECT_FALSE(ledger.wants_data());
}

TEST(ReceiveLedger, FileDoneDrainsThenVerifies) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 10}, kSlot, 1);
  ASSERT_EQ(ledger.offer(file_offer(0, 10)), std::nullopt);
  EXPECT_EQ(ledger.file_done({0, 10}), EntryFault::NotTaken);
  ledger.take(0);
  ASSERT_TRUE(ledger.grant(0));
  ASSERT_EQ(ledger.accept_chunk({0, 0, 0, 10}), std::nullopt);
  EXPECT_EQ(ledger.file_done({0, 10}), std::nullopt);
  EXPECT_EQ(ledger.file_done({0, 10}), EntryFault::NotTaken) << "a second FileDone";
  EXPECT_FALSE(ledger.start_verifying(0)) << "its chunk is still being stored";
  ledger.stored(0, 0);
  EXPECT_TRUE(ledger.start_verifying(0));
  EXPECT_EQ(ledger.entry(0)->done_total, 10u);
  ledger.settle(0, EntryEvent::Good);
  EXPECT_TRUE(ledger.all_settled());
}

TEST(ReceiveLedger, AnAbandonedFilesLateChunksOnlyFreeTheirSlots) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 2, 3 * kSlot}, kSlot, 2);
  ASSERT_EQ(ledger.offer(file_offer(0, 2 * kSlot)), std::nullopt);
  ledger.take(0);
  ASSERT_TRUE(ledger.grant(0));
  ASSERT_TRUE(ledger.grant(1));
  ASSERT_EQ(ledger.accept_chunk({0, 0, 0, kSlot}), std::nullopt);
  // Its write failed: the verdict goes out while the sender still writes.
  ledger.settle(0, EntryEvent::Bad);
  EXPECT_TRUE(ledger.abandoned(0));
  EXPECT_EQ(ledger.release_slots_of(0), std::vector<std::uint32_t>{0});
  EXPECT_TRUE(ledger.discard_chunk({0, 1, kSlot, kSlot}));
  EXPECT_FALSE(ledger.discard_chunk({0, 1, kSlot, kSlot})) << "slot 1 is no longer credited";
  EXPECT_FALSE(ledger.discard_chunk({1, 0, 0, 1})) << "entry 1 was never abandoned";
  EXPECT_EQ(ledger.file_done({0, 2 * kSlot}), std::nullopt)
      << "sent before the sender saw the verdict: nothing changes";
  EXPECT_EQ(ledger.file_done({1, 2 * kSlot}), ReceiveRule::UnknownEntry);
  // The session goes on with the next entry.
  EXPECT_TRUE(ledger.wants_data());
  ASSERT_EQ(ledger.offer(file_offer(1, kSlot)), std::nullopt);
}

TEST(SendLedger, OffersAtMostSixteenAndDirectoriesAfterFiles) {
  std::vector<SendLedger::EntryPlan> plans(20, {EntryKind::File, 1});
  plans.push_back({EntryKind::Directory, 0});
  SendLedger ledger(plans, Accept{0x1000, 0, kSlot, 2}, 32);
  for (std::uint32_t i = 0; i < kMaxEntriesInFlight; ++i) EXPECT_EQ(ledger.next_offer(), i);
  EXPECT_EQ(ledger.next_offer(), std::nullopt);
  EXPECT_EQ(ledger.settled(0, false), std::nullopt);  // refused
  EXPECT_EQ(ledger.next_offer(), kMaxEntriesInFlight);
  for (std::uint32_t i = 1; i <= kMaxEntriesInFlight; ++i)
    ASSERT_EQ(ledger.settled(i, false), std::nullopt);
  for (std::uint32_t i = 17; i < 20; ++i) EXPECT_EQ(ledger.next_offer(), i);
  EXPECT_EQ(ledger.next_offer(), std::nullopt) << "the directory waits for the files";
  for (std::uint32_t i = 17; i < 20; ++i) ASSERT_EQ(ledger.settled(i, false), std::nullopt);
  ledger.allow_directories(false);
  EXPECT_EQ(ledger.next_offer(), std::nullopt) << "held for other connections";
  ledger.allow_directories(true);
  EXPECT_EQ(ledger.next_offer(), 20u);
  EXPECT_EQ(ledger.taken(20), EntryFault::NotAFile);
  EXPECT_EQ(ledger.settled(20, true), std::nullopt);
  EXPECT_TRUE(ledger.all_settled());
}

TEST(SendLedger, RepliesMustMatchTheEntrysState) {
  SendLedger ledger({{EntryKind::File, 10}, {EntryKind::File, 0}}, Accept{0, 0, kSlot, 1}, 1);
  EXPECT_EQ(ledger.taken(0), EntryFault::NotOffered);
  ASSERT_EQ(ledger.next_offer(), 0u);
  EXPECT_EQ(ledger.settled(0, true), EntryFault::TooEarly);
  EXPECT_EQ(ledger.taken(0), std::nullopt);
  EXPECT_EQ(ledger.taken(0), EntryFault::AlreadyTaken);
  EXPECT_EQ(ledger.taken(5), ReplyRule::UnknownEntry) << "no such entry";
  // An empty file's FileDone is due as soon as it is taken.
  ASSERT_EQ(ledger.next_offer(), 1u);
  EXPECT_EQ(ledger.taken(1), std::nullopt);
  EXPECT_EQ(ledger.next_file_done(), 1u);
  EXPECT_EQ(ledger.settled(1, true), std::nullopt);
  EXPECT_EQ(ledger.settled(1, true), EntryFault::Settled) << "settled twice";
}

// An offered entry is one object the ledger holds, made by the driver's maker, from its
// Offer until the driver drops it after its settlement; a chunk of it still in flight then
// completes and is credited back with nothing left to count it against.
TEST(SendLedger, HoldsEachOfferedEntryUntilTheDriverDropsIt) {
  struct Tagged : SendEntry {
    explicit Tagged(std::uint32_t n) : number(n) {}
    std::uint32_t number;
  };
  BasicSendLedger<Tagged> ledger({{EntryKind::File, 2 * kSlot}}, Accept{0, 0, kSlot, 1}, 1);
  EXPECT_EQ(ledger.entry(0), nullptr) << "not offered yet";
  EXPECT_EQ(ledger.state(0), EntryState::Waiting);
  ASSERT_EQ(ledger.next_offer([](std::uint32_t n) { return std::make_unique<Tagged>(n); }), 0u);
  ASSERT_NE(ledger.entry(0), nullptr);
  EXPECT_EQ(ledger.entry(0)->number, 0u) << "the maker's object, typed";
  ASSERT_EQ(ledger.taken(0), std::nullopt);
  ASSERT_EQ(ledger.credit({0, 7}), std::nullopt);
  const auto chunk = ledger.next_chunk();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(ledger.entry(0)->chunks_in_flight, 1u);
  ledger.drop(0);
  EXPECT_NE(ledger.entry(0), nullptr) << "an entry not settled is not dropped";
  ASSERT_EQ(ledger.settled(0, false), std::nullopt);  // a bad verdict mid-file
  EXPECT_NE(ledger.entry(0), nullptr) << "kept until the driver is done with it";
  ledger.drop(0);
  EXPECT_EQ(ledger.entry(0), nullptr);
  EXPECT_EQ(ledger.state(0), EntryState::Settled);
  EXPECT_EQ(ledger.completed(chunk->slot), chunk->length);
  EXPECT_EQ(ledger.credit({chunk->slot, 8}), std::nullopt);
  EXPECT_TRUE(ledger.all_settled());
}

// The chunks of several taken files interleave (the receiver stores them at once), each
// going to the file with the fewest chunks not yet credited back, each file's in order; a
// file taken beyond the first kInterleavedFiles waits for one of them to be planned out.
TEST(SendLedger, ChunksOfSeveralTakenFilesInterleaveByWhatTheReceiverHolds) {
  const std::uint32_t files = kInterleavedFiles + 1;
  std::vector<SendLedger::EntryPlan> plans(files, {EntryKind::File, 3 * kSlot});
  plans[0].size = 4 * kSlot;
  const std::uint32_t slots = 2 * files;
  SendLedger ledger(plans, Accept{0, 0, kSlot, slots}, 32);
  for (std::uint32_t i = 0; i < files; ++i) {
    ASSERT_EQ(ledger.next_offer(), i);
    ASSERT_EQ(ledger.taken(i), std::nullopt);
  }
  for (std::uint32_t s = 0; s < 2; ++s) ASSERT_EQ(ledger.credit({s, 1}), std::nullopt);
  // Two slots: the oldest file, then the next (it holds nothing at the receiver yet).
  auto a = ledger.next_chunk();
  auto b = ledger.next_chunk();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(std::pair(a->entry, a->offset), std::pair(0u, std::uint64_t{0}));
  EXPECT_EQ(std::pair(b->entry, b->offset), std::pair(1u, std::uint64_t{0}));
  // Its SEND completes but the slot is not credited back: file 0 still has a chunk out.
  EXPECT_EQ(ledger.completed(a->slot), kSlot);
  EXPECT_EQ(ledger.completed(b->slot), kSlot);
  ASSERT_EQ(ledger.credit({b->slot, 1}), std::nullopt);  // file 1's chunk is stored
  auto c = ledger.next_chunk();
  ASSERT_TRUE(c);
  EXPECT_EQ(std::pair(c->entry, c->offset), std::pair(1u, std::uint64_t{kSlot}))
      << "file 1 holds nothing now, file 0 one chunk";
  // The rest of the window: every file among the first kInterleavedFiles gets chunks, in
  // order, the last file none.
  for (std::uint32_t s = 2; s < slots; ++s) ASSERT_EQ(ledger.credit({s, 1}), std::nullopt);
  std::vector<std::uint64_t> next(files, 0);
  next[0] = kSlot;
  next[1] = 2 * kSlot;
  std::vector<int> planned(files, 0);
  while (auto chunk = ledger.next_chunk()) {
    EXPECT_EQ(chunk->offset, next[chunk->entry]) << "file " << chunk->entry << " out of order";
    next[chunk->entry] += chunk->length;
    ++planned[chunk->entry];
    if (next[chunk->entry] == plans[chunk->entry].size) break;  // a file planned out
  }
  EXPECT_EQ(planned[files - 1], 0) << "a ninth file waits while eight have bytes left";
  for (std::uint32_t i = 2; i < kInterleavedFiles; ++i) EXPECT_GE(planned[i], 1) << i;
  // One file is planned out: the ninth is among the eight now.
  auto later = ledger.next_chunk();
  ASSERT_TRUE(later);
  EXPECT_EQ(later->entry, files - 1);
  EXPECT_EQ(later->offset, 0u);
}

// Both halves over a whole session: small and large files, slots shared, every byte
// accounted for, every entry settled.
TEST(SessionLedgers, AWholeSessionAgainstEachOther) {
  const std::vector<std::uint64_t> sizes = {0, 1, kSlot, kSlot + 1, 5 * kSlot + 7, 3, 0, 2 * kSlot};
  std::uint64_t total = 0;
  std::vector<SendLedger::EntryPlan> plans;
  for (auto size : sizes) {
    plans.push_back({EntryKind::File, size});
    total += size;
  }
  plans.push_back({EntryKind::Directory, 0});
  const std::uint32_t slots = 3;
  const Accept accept{0x10000, 0, kSlot, slots};
  SendLedger sender(plans, accept, 32);
  RL receiver(
      Open{DigestAlgorithm::FsVeritySha256, 0, 0, static_cast<std::uint32_t>(plans.size()), total},
      kSlot, slots);
  for (std::uint32_t s = 0; s < slots; ++s) {
    ASSERT_TRUE(receiver.grant(s));
    ASSERT_EQ(sender.credit({s, 100 + s}), std::nullopt);
  }
  std::vector<std::uint64_t> received(plans.size(), 0);
  for (int round = 0; round < 1000 && !sender.all_settled(); ++round) {
    while (auto e = sender.next_offer()) {
      Offer o = file_offer(*e, plans[*e].size);
      o.kind = plans[*e].kind;
      ASSERT_EQ(receiver.offer(o), std::nullopt);
      if (o.kind == EntryKind::Directory) {
        receiver.settle(*e, EntryEvent::Good);
        ASSERT_EQ(sender.settled(*e, true), std::nullopt);
      } else {
        receiver.take(*e);
        ASSERT_EQ(sender.taken(*e), std::nullopt);
      }
    }
    std::vector<FileChunk> in_flight;
    // next_chunk_length() tells each chunk's length before next_chunk() plans it.
    for (auto length = sender.next_chunk_length(); length; length = sender.next_chunk_length()) {
      const auto c = sender.next_chunk();
      ASSERT_TRUE(c.has_value());
      EXPECT_EQ(c->length, *length);
      EXPECT_EQ(c->remote_addr, accept.region_addr + std::uint64_t{c->slot} * kSlot);
      EXPECT_EQ(c->rkey, 100 + c->slot);
      const FileChunk chunk{c->entry, c->slot, c->offset, c->length};
      ASSERT_EQ(receiver.accept_chunk(chunk), std::nullopt);
      received[c->entry] += c->length;
      in_flight.push_back(chunk);
    }
    EXPECT_EQ(sender.next_chunk(), std::nullopt);
    for (const auto& chunk : in_flight) {
      EXPECT_EQ(sender.completed(chunk.slot), chunk.length);
      if (receiver.stored(chunk.slot, chunk.entry)) {
        ASSERT_TRUE(receiver.grant(chunk.slot));
        ASSERT_EQ(sender.credit({chunk.slot, 100 + chunk.slot}), std::nullopt);
      }
    }
    while (auto e = sender.next_file_done()) {
      ASSERT_EQ(receiver.file_done({*e, plans[*e].size}), std::nullopt);
      ASSERT_TRUE(receiver.start_verifying(*e));
      receiver.settle(*e, EntryEvent::Good);
      ASSERT_EQ(sender.settled(*e, true), std::nullopt);
    }
  }
  EXPECT_TRUE(sender.all_settled());
  EXPECT_TRUE(receiver.all_settled());
  EXPECT_EQ(sender.bytes_completed(), total);
  for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(received[i], sizes[i]) << i;
}

}  // namespace session_ledger_test
