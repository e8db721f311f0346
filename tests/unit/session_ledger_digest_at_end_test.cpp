// The session ledgers' part of the digest at the end (docs/PROTOCOL.md 7.9): Holds and
// Continue, FileAbort and its Abandoned verdict, and the sender's slots held while their
// bytes are hashed (the digest in flight).

#include <gtest/gtest.h>

#include "protocol/receive_ledger.hpp"
#include "protocol/send_ledger.hpp"

namespace digest_at_end_ledger_test {

using namespace rdmax::proto;
using RL = ReceiveLedger;
using SL = SendLedger;

constexpr std::uint32_t kSlot = 4096;

Offer flagged(std::uint32_t entry, std::uint64_t size) {
  Offer o;
  o.entry = entry;
  o.size = size;
  o.path = "f" + std::to_string(entry);
  o.digest_at_end = true;
  return o;
}

TEST(SessionReceiveLedgerDigestAtEnd, HoldsThenContinueAnswersTheEntryAgain) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 3 * kSlot}, kSlot, 2);
  ASSERT_EQ(ledger.offer(flagged(0, 3 * kSlot)), std::nullopt);
  EXPECT_EQ(ledger.continued(Continue{0, 0}), EntryFault::NotHeld) << "no Holds before it";
  ledger.hold_for_continue(0);
  EXPECT_EQ(ledger.entry(0)->state, EntryState::Held);
  EXPECT_TRUE(ledger.wants_data()) << "a held file may still be sent";
  EXPECT_TRUE(ledger.grant(0));
  EXPECT_EQ(ledger.accept_chunk({0, 0, 0, kSlot}), EntryFault::NotTaken);
  EXPECT_EQ(ledger.continued(Continue{1, 0}), ReceiveRule::UnknownEntry);
  ASSERT_EQ(ledger.continued(Continue{0, 2 * kSlot}), std::nullopt);
  EXPECT_EQ(ledger.entry(0)->state, EntryState::Continued);
  EXPECT_EQ(ledger.continued(Continue{0, 0}), EntryFault::NotHeld) << "one Continue per Holds";
  ledger.take(0, 2 * kSlot);  // its answer: Resume from what was held
  EXPECT_EQ(ledger.accept_chunk({0, 0, 2 * kSlot, kSlot}), std::nullopt);
}

TEST(SessionReceiveLedgerDigestAtEnd, AnAbortedFileIsDiscardedOnceItsChunksAreStored) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 2, 4 * kSlot}, kSlot, 2);
  ASSERT_EQ(ledger.offer(flagged(0, 3 * kSlot)), std::nullopt);
  EXPECT_EQ(ledger.abort(FileAbort{0, AbortReason::Changed}), EntryFault::NotTaken)
      << "not before its answer";
  ledger.take(0);
  ASSERT_TRUE(ledger.grant(0));
  ASSERT_EQ(ledger.accept_chunk({0, 0, 0, kSlot}), std::nullopt);
  ASSERT_EQ(ledger.abort(FileAbort{0, AbortReason::Changed}), std::nullopt);
  EXPECT_EQ(ledger.entry(0)->state, EntryState::Abandoning);
  EXPECT_FALSE(ledger.start_discarding(0)) << "a chunk of it is still being stored";
  EXPECT_EQ(ledger.file_done({0, 3 * kSlot}), EntryFault::NotTaken);
  (void)ledger.stored(0, 0);
  EXPECT_TRUE(ledger.start_discarding(0));
  EXPECT_FALSE(ledger.start_discarding(0)) << "once";
  ledger.settle(0, EntryEvent::Bad);
  EXPECT_FALSE(ledger.abandoned(0)) << "nothing more of it is on its way";
  EXPECT_EQ(ledger.abort(FileAbort{0, AbortReason::Changed}), ReceiveRule::UnknownEntry);
}

TEST(SessionReceiveLedgerDigestAtEnd, OnlyAFileOfferedWithoutItsDigestIsAbandoned) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, kSlot}, kSlot, 1);
  Offer with_digest = flagged(0, kSlot);
  with_digest.digest_at_end = false;
  ASSERT_EQ(ledger.offer(with_digest), std::nullopt);
  ledger.take(0);
  EXPECT_EQ(ledger.abort(FileAbort{0, AbortReason::Changed}), ReceiveRule::OfferedWithDigest);
  EXPECT_EQ(ledger.entry(0)->state, EntryState::Taken);
}

TEST(SessionReceiveLedgerDigestAtEnd, AnAbortThatCrossesAStorageErrorIsDropped) {
  RL ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 3 * kSlot}, kSlot, 2);
  ASSERT_EQ(ledger.offer(flagged(0, 3 * kSlot)), std::nullopt);
  ledger.take(0);
  ledger.settle(0, EntryEvent::Bad);  // FileVerdict(StorageError) went while it was received
  EXPECT_EQ(ledger.abort(FileAbort{0, AbortReason::Changed}), std::nullopt)
      << "changes nothing: the sender has the verdict";
  EXPECT_EQ(ledger.entry(0), nullptr);
}

TEST(SessionSendLedgerDigestAtEnd, AHeldSlotIsNotWrittenAgainAndHoldsTheFileDone) {
  SL ledger({{EntryKind::File, 2 * kSlot}}, Accept{0x1000, 0, kSlot, 1}, 1);
  ASSERT_EQ(ledger.next_offer(), 0u);
  ASSERT_EQ(ledger.taken(0), std::nullopt);
  ASSERT_EQ(ledger.credit({0, 7}), std::nullopt);
  const auto first = ledger.next_chunk();
  ASSERT_TRUE(first.has_value());
  ledger.hold(first->slot);  // its bytes are being hashed
  EXPECT_EQ(ledger.completed(first->slot), kSlot);
  ASSERT_EQ(ledger.credit({0, 8}), std::nullopt);
  EXPECT_FALSE(ledger.next_chunk_length().has_value()) << "credited, but its bytes are in use";
  EXPECT_FALSE(ledger.next_chunk().has_value());
  ledger.release(first->slot);
  const auto second = ledger.next_chunk();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->offset, kSlot);
  ledger.hold(second->slot);
  EXPECT_EQ(ledger.completed(second->slot), kSlot);
  EXPECT_FALSE(ledger.next_file_done().has_value()) << "not before its last bytes are hashed";
  ledger.release(second->slot);
  EXPECT_EQ(ledger.next_file_done(), 0u);
}

TEST(SessionSendLedgerDigestAtEnd, HoldsContinueAndAbandon) {
  SL ledger({{EntryKind::File, 2 * kSlot, true}, {EntryKind::File, kSlot, true}},
            Accept{0x1000, 0, kSlot, 2}, 2);
  ASSERT_EQ(ledger.next_offer(), 0u);
  ASSERT_EQ(ledger.next_offer(), 1u);
  EXPECT_EQ(ledger.continued(0, kSlot), EntryFault::NotHeld) << "no Holds before it";
  ASSERT_EQ(ledger.held(0), std::nullopt);
  EXPECT_EQ(ledger.taken(0), EntryFault::Held) << "its Continue is awaited";
  ASSERT_EQ(ledger.continued(0, kSlot), std::nullopt);
  EXPECT_EQ(ledger.had(0), ReplyRule::NotContinued) << "continued from a prefix, not whole";
  EXPECT_EQ(ledger.resumed(0, 2 * kSlot), ReplyRule::NotContinued) << "past the prefix";
  EXPECT_EQ(ledger.resumed(0, 0), ReplyRule::BadOffset) << "a Resume is never a Take";
  ASSERT_EQ(ledger.resumed(0, kSlot), std::nullopt);  // from what was held
  ASSERT_EQ(ledger.held(1), std::nullopt);
  ASSERT_EQ(ledger.abandon(1), std::nullopt);  // its file could not be read for the check
  EXPECT_EQ(ledger.state(1), EntryState::Abandoning);
  EXPECT_EQ(ledger.settled(1, true), EntryFault::Abandoned) << "never Good";
  ASSERT_EQ(ledger.settled(1, false), std::nullopt);
  ASSERT_EQ(ledger.credit({0, 7}), std::nullopt);
  const auto chunk = ledger.next_chunk();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(chunk->entry, 0u);
  EXPECT_EQ(chunk->offset, kSlot);
  ASSERT_EQ(ledger.abandon(0), std::nullopt);  // it changed while it was read
  EXPECT_EQ(ledger.completed(chunk->slot), kSlot);
  EXPECT_FALSE(ledger.next_file_done().has_value()) << "an abandoned file has no FileDone";
  EXPECT_EQ(ledger.verdict(0, VerdictCode::Interrupted), ReplyRule::NotStriped);
  ASSERT_EQ(ledger.verdict(0, VerdictCode::Abandoned), std::nullopt);
  EXPECT_TRUE(ledger.all_settled());
}

// What the receiver may answer is what our Offer and our Continue asked: a Holds only for a
// file offered without its digest, a Have of it only once our Continue said it is the
// receiver's whole, a Resume only within the prefix it said is; Abandoned only what we
// abandoned.
TEST(SessionSendLedgerDigestAtEnd, AnswersFollowWhatOurOfferAndContinueSaid) {
  SL ledger({{EntryKind::File, 2 * kSlot},
             {EntryKind::File, 2 * kSlot, true},
             {EntryKind::File, 2 * kSlot, true}},
            Accept{0x1000, 0, kSlot, 2}, 2);
  for (std::uint32_t e = 0; e < 3; ++e) ASSERT_EQ(ledger.next_offer(), e);
  EXPECT_EQ(ledger.held(0), ReplyRule::NotAsked) << "offered with its digest";
  EXPECT_EQ(ledger.had(1), ReplyRule::NotContinued) << "no Continue yet";
  ASSERT_EQ(ledger.held(1), std::nullopt);
  ASSERT_EQ(ledger.continued(1, 0), std::nullopt);  // it differs
  EXPECT_EQ(ledger.resumed(1, kSlot), ReplyRule::NotContinued);
  EXPECT_EQ(ledger.had(1), ReplyRule::NotContinued);
  ASSERT_EQ(ledger.taken(1), std::nullopt);
  EXPECT_EQ(ledger.verdict(1, VerdictCode::Abandoned), ReplyRule::NotAbandoned);
  ASSERT_EQ(ledger.held(2), std::nullopt);
  ASSERT_EQ(ledger.continued(2, 2 * kSlot), std::nullopt);  // the receiver's whole
  ASSERT_EQ(ledger.had(2), std::nullopt);
  EXPECT_EQ(ledger.state(1), EntryState::Taken) << "a refused answer changes nothing";
}

TEST(SessionSendLedgerDigestAtEnd, AChunkThatCannotBeReadGivesItsSlotToTheNextFile) {
  SL ledger({{EntryKind::File, 2 * kSlot}, {EntryKind::File, kSlot}}, Accept{0x1000, 0, kSlot, 1},
            1);
  ASSERT_EQ(ledger.next_offer(), 0u);
  ASSERT_EQ(ledger.next_offer(), 1u);
  ASSERT_EQ(ledger.taken(0), std::nullopt);
  ASSERT_EQ(ledger.taken(1), std::nullopt);
  ASSERT_EQ(ledger.credit({0, 7}), std::nullopt);
  const auto chunk = ledger.next_chunk();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(chunk->entry, 0u);
  ledger.unplan(*chunk);  // its read failed: nothing was written
  ASSERT_EQ(ledger.abandon(0), std::nullopt);
  EXPECT_EQ(ledger.completed(chunk->slot), 0u) << "the slot is not busy";
  EXPECT_EQ(ledger.credit({0, 8}), CreditError::AlreadyHeld) << "its credit is ours again";
  const auto next = ledger.next_chunk();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->entry, 1u);
  EXPECT_EQ(next->rkey, 7u);
  EXPECT_EQ(ledger.completed(next->slot), kSlot);
  EXPECT_EQ(ledger.next_file_done(), 1u);
  EXPECT_FALSE(ledger.next_file_done().has_value()) << "none for the abandoned file";
}

// Whether a FileDone carries the digest is its entry's rule, judged by the ledger with the
// machine's: 44 bytes exactly for a file offered without its digest (PROTOCOL.md 7.9).
TEST(SessionReceiveLedgerDigestAtEnd, AFileDoneCarriesTheDigestExactlyWhenItsOfferDidNot) {
  for (const bool flagged_offer : {true, false}) {
    SCOPED_TRACE(flagged_offer);
    ReceiveLedger ledger(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, kSlot}, kSlot, 2);
    Offer offer = flagged(0, kSlot);
    if (!flagged_offer) {
      offer.digest_at_end = false;
      offer.digest[0] = 1;
    }
    ASSERT_EQ(ledger.offer(offer), std::nullopt);
    ledger.take(0);
    ASSERT_TRUE(ledger.grant(0));
    ASSERT_EQ(ledger.accept_chunk({0, 0, 0, kSlot}), std::nullopt);
    const FileDone wrong{0, kSlot, flagged_offer ? std::nullopt : std::optional{Digest{}}};
    EXPECT_EQ(ledger.file_done(wrong), ReceiveRule::DigestMisplaced);
    EXPECT_EQ(ledger.entry(0)->state, EntryState::Taken) << "a refused FileDone changes nothing";
    const FileDone right{0, kSlot, flagged_offer ? std::optional{Digest{}} : std::nullopt};
    EXPECT_EQ(ledger.file_done(right), std::nullopt);
    EXPECT_EQ(ledger.entry(0)->state, EntryState::Finished);
  }
}

}  // namespace digest_at_end_ledger_test
