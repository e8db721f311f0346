// The sender's ledger with one file over two connections (docs/PROTOCOL.md 7.12): the lead's
// striped entry and a member's joined entry draw chunks from one StripePlan, each on its own
// connection's credits; the member's FileDone goes once the plan is handed out and its own
// chunks completed, the lead's only once the member's entry is settled too, and neither once
// the plan is interrupted.

#include <gtest/gtest.h>

#include <memory>

#include "protocol/send_ledger.hpp"

namespace send_ledger_stripes_test {

using namespace rdmax::proto;

constexpr std::uint32_t kSlot = 4096;

Accept accept_of(std::uint32_t slots) {
  return Accept{0x10000, 1, kSlot, slots};
}

struct Pair {
  std::uint64_t size = 5 * kSlot + 7;  // 6 chunks
  SendLedger lead{{{EntryKind::File, size}}, accept_of(2), 2};
  SendLedger member{{}, accept_of(2), 2};
  std::shared_ptr<StripePlan> plan;
  std::uint32_t joined = 0;

  void start() {
    ASSERT_EQ(lead.next_offer(), 0u);
    ASSERT_EQ(lead.taken(0), std::nullopt);
    plan = std::make_shared<StripePlan>(size, kSlot, 0, 2);
    ASSERT_TRUE(lead.stripe(0, plan));
    joined = member.join(size, plan, 1);
    ASSERT_EQ(joined, 0u) << "a member with no Offers numbers its Joins from 0";
    lead.entry(0)->members_pending = 1;
    ASSERT_EQ(member.taken(joined), std::nullopt);
    for (std::uint32_t slot : {0U, 1U}) {
      ASSERT_EQ(lead.credit({slot, 10 + slot}), std::nullopt);
      ASSERT_EQ(member.credit({slot, 20 + slot}), std::nullopt);
    }
  }
  // A chunk's WRITE completed and the receiver stored it (its Credit came back).
  static void complete(SendLedger& ledger, const SendLedger::Planned& c) {
    ASSERT_EQ(ledger.completed(c.slot), c.length);
    ASSERT_EQ(ledger.credit({c.slot, 99}), std::nullopt);
  }
};

TEST(SendLedgerStripes, BothConnectionsDrawTheFilesChunksInFileOrder) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.start());
  EXPECT_EQ(p.lead.offer_count(), 1u);
  EXPECT_EQ(p.lead.next_offer(), std::nullopt);
  const auto a = p.lead.next_chunk();
  const auto b = p.member.next_chunk();
  const auto c = p.member.next_chunk();
  const auto d = p.lead.next_chunk();
  ASSERT_TRUE(a && b && c && d);
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(b->offset, kSlot);
  EXPECT_EQ(c->offset, 2u * kSlot);
  EXPECT_EQ(d->offset, 3u * kSlot);
  EXPECT_EQ(b->entry, p.joined);
  EXPECT_EQ(b->rkey, 20u) << "each connection writes into its own window";
  EXPECT_EQ(p.lead.next_chunk(), std::nullopt) << "no slot left";
  EXPECT_EQ(p.lead.next_chunk_length(), std::nullopt);
  Pair::complete(p.member, *b);
  Pair::complete(p.member, *c);
  const auto e = p.member.next_chunk();
  const auto f = p.member.next_chunk();
  ASSERT_TRUE(e && f);
  EXPECT_EQ(e->offset, 4u * kSlot);
  EXPECT_EQ(f->offset, 5u * kSlot);
  EXPECT_EQ(f->length, 7u);
  EXPECT_EQ(p.member.next_chunk_length(), std::nullopt) << "every chunk is handed out";
  EXPECT_EQ(p.member.next_chunk(), std::nullopt);
  EXPECT_EQ(p.member.next_file_done(), std::nullopt) << "its own chunks are not completed";
  Pair::complete(p.member, *e);
  Pair::complete(p.member, *f);
  EXPECT_EQ(p.member.next_file_done(), p.joined);
  EXPECT_EQ(p.plan->handed(1), 3u * kSlot + 7) << "the member's FileDone total";
  Pair::complete(p.lead, *a);
  Pair::complete(p.lead, *d);
  EXPECT_EQ(p.lead.next_file_done(), std::nullopt) << "the member's entry is not settled";
  EXPECT_EQ(p.member.settled(p.joined, true), std::nullopt);
  p.lead.entry(0)->members_pending = 0;
  EXPECT_EQ(p.lead.next_file_done(), 0u);
  EXPECT_TRUE(p.plan->all_stored());
  EXPECT_EQ(p.lead.settled(0, true), std::nullopt);
  EXPECT_TRUE(p.lead.all_settled());
  EXPECT_TRUE(p.member.all_settled());
}

TEST(SendLedgerStripes, NoFileDoneOnceThePlanIsInterrupted) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.start());
  const auto a = p.lead.next_chunk();
  const auto b = p.member.next_chunk();
  ASSERT_TRUE(a && b);
  p.plan->lose(1);  // the member's connection ended
  EXPECT_EQ(p.lead.next_chunk(), std::nullopt);
  Pair::complete(p.lead, *a);
  p.lead.entry(0)->members_pending = 0;
  EXPECT_EQ(p.lead.next_file_done(), std::nullopt) << "the receiver settles it Interrupted";
  EXPECT_EQ(p.lead.verdict(0, VerdictCode::Interrupted), std::nullopt);
  EXPECT_TRUE(p.lead.all_settled());
}

// A Join is answered Take, Refuse or FileVerdict, nothing else (PROTOCOL.md 7.12).
TEST(SendLedgerStripes, AJoinIsAnsweredTakeRefuseOrVerdict) {
  SendLedger member{{}, accept_of(2), 2};
  auto plan = std::make_shared<StripePlan>(4 * kSlot, kSlot, 0, 2);
  const std::uint32_t joined = member.join(4 * kSlot, plan, 1);
  EXPECT_EQ(member.had(joined), ReplyRule::NotForJoin);
  EXPECT_EQ(member.held(joined), ReplyRule::NotForJoin);
  EXPECT_EQ(member.resumed(joined, kSlot), ReplyRule::NotForJoin);
  EXPECT_EQ(member.resumed(joined, 0), ReplyRule::NotForJoin) << "a Resume is never a Take";
  ASSERT_EQ(member.taken(joined), std::nullopt);
  EXPECT_EQ(member.verdict(joined, VerdictCode::Interrupted), std::nullopt);
}

TEST(SendLedgerStripes, AnUnreadableChunkOfAStripedFileInterruptsItsPlan) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.start());
  const auto b = p.member.next_chunk();
  ASSERT_TRUE(b);
  p.member.unplan(*b);
  EXPECT_TRUE(p.plan->interrupted());
  EXPECT_EQ(p.lead.next_chunk(), std::nullopt);
  EXPECT_EQ(p.member.next_file_done(), std::nullopt);
}

TEST(SendLedgerStripes, JoinsAreNumberedAfterTheOffersAndHeldBackOffersWait) {
  SendLedger ledger{{{EntryKind::File, 10}, {EntryKind::File, 1 << 20}}, accept_of(2), 2};
  ledger.hold_back([](std::uint32_t entry) { return entry == 1; });
  EXPECT_EQ(ledger.next_offer(), 0u);
  EXPECT_EQ(ledger.next_offer(), std::nullopt) << "entry 1 is held back";
  auto plan = std::make_shared<StripePlan>(1 << 20, kSlot, 0, 2);
  EXPECT_EQ(ledger.join(1 << 20, plan, 1), 2u);
  EXPECT_EQ(ledger.state(2), EntryState::Offered);
  ledger.hold_back(nullptr);
  EXPECT_EQ(ledger.next_offer(), 1u);
  EXPECT_EQ(ledger.next_offer(), std::nullopt) << "a Join is never offered";
}

}  // namespace send_ledger_stripes_test
