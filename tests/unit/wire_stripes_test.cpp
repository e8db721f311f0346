// One file over several connections on the wire and in the receiver's rules
// (docs/PROTOCOL.md 7.12): the stripe-group extension, Stripes, Join, Offer.flags bit 1, the
// verdict Interrupted, byte for byte as the document shows them; and what the receive ledger
// holds a striped entry, and an entry joined to it, to.

#include <gtest/gtest.h>

#include <memory>

#include "protocol/receive_ledger.hpp"
#include "protocol/stripes.hpp"
#include "protocol/wire.hpp"
#include "wire_test_helpers.hpp"

namespace wire_stripes_test {

using namespace rdmax::proto;
using rdmax::test::wire::Bytes;
using rdmax::test::wire::decode_error;
using rdmax::test::wire::round_trip;

constexpr std::uint32_t kSlot = 4096;

StripeGroup sample_group(std::uint16_t member, std::uint16_t members) {
  StripeGroup g;
  for (std::size_t i = 0; i < g.token.size(); ++i) g.token[i] = static_cast<std::uint8_t>(0xa0 + i);
  g.member = member;
  g.members = members;
  return g;
}

TEST(WireStripes, TheOpensExtensionIsATokenAMemberAndTheMembers) {
  Open open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0};
  EXPECT_EQ(stripe_group_of(open), std::nullopt);
  open.extensions.push_back(stripe_group_extension(sample_group(1, 2)));
  const Bytes bytes = encode(open, kVersion2);
  const Bytes tail(bytes.end() - 24, bytes.end());
  EXPECT_EQ(tail, (Bytes{0x07, 0x00, 0x14, 0x00,  // type 0x0007, 20 bytes
                         0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                         0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,  // the token
                         0x01, 0x00, 0x02, 0x00}));                       // member 1 of 2
  EXPECT_EQ(round_trip(open), Message{open});
  EXPECT_EQ(stripe_group_of(open), sample_group(1, 2));
  // A member outside the group, fewer than two members or more than 64, or another length:
  // refused by both the encoder and the decoder.
  const std::pair<std::uint16_t, std::uint16_t> outside[] = {{2, 2}, {0, 1}, {0, 65}};
  for (const auto& [member, members] : outside) {
    Open bad{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0};
    bad.extensions.push_back(stripe_group_extension(sample_group(member, members)));
    EXPECT_TRUE(encode(bad, kVersion2).empty()) << member << " of " << members;
  }
  Bytes cut = bytes;
  cut.pop_back();
  cut[8] -= 1;                // the payload's length
  cut[cut.size() - 21] -= 1;  // the extension's
  EXPECT_EQ(decode_error(cut), DecodeError::BadField);
}

TEST(WireStripes, OnlyAMemberOfAGroupMayOpenWithNoEntries) {
  Open open{DigestAlgorithm::FsVeritySha256, 0, 0, 0, 0};
  EXPECT_TRUE(encode(open, kVersion2).empty());
  open.extensions.push_back(stripe_group_extension(sample_group(1, 2)));
  EXPECT_EQ(round_trip(open), Message{open});
  Bytes bytes = encode(open, kVersion2);
  bytes[bytes.size() - 24] = 0x08;  // another extension type: entry_count 0 is refused
  EXPECT_EQ(decode_error(bytes), DecodeError::BadField);
}

TEST(WireStripes, StripesAndJoinLayouts) {
  const Bytes stripes = {0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x1d, 0x00, 0x04,
                         0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // header: type 29, 4 bytes
                         0x40, 0x00, 0x00, 0x00};                   // max_members 64, reserved
  EXPECT_EQ(encode(Stripes{64}, kVersion2), stripes);
  EXPECT_EQ(round_trip(Stripes{2}), (Message{Stripes{2}}));
  EXPECT_TRUE(encode(Stripes{1}, kVersion2).empty());
  EXPECT_TRUE(encode(Stripes{65}, kVersion2).empty());
  Bytes reserved = stripes;
  reserved[18] = 1;
  EXPECT_EQ(decode_error(reserved), DecodeError::BadReserved);

  const Bytes join = {0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x1e, 0x00,
                      0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // header: type 30, 8 bytes
                      0x03, 0x00, 0x00, 0x00,                          // entry 3
                      0x00, 0x00, 0x00, 0x00};                         // lead_entry 0
  EXPECT_EQ(encode(Join{3, 0}, kVersion2), join);
  EXPECT_EQ(round_trip(Join{7, 9}), (Message{Join{7, 9}}));
  // Neither exists in version 1.
  EXPECT_TRUE(encode(Join{3, 0}, kVersion1).empty());
  Bytes v1 = join;
  v1[4] = 1;
  EXPECT_EQ(decode_error(v1), DecodeError::BadType);
}

TEST(WireStripes, OfferFlagsBitOneIsStripedForAFileOnly) {
  Offer offer;
  offer.entry = 0;
  offer.size = 1 << 20;
  offer.path = "big.bin";
  offer.striped = true;
  const Bytes bytes = encode(offer, kVersion2);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes[kHeaderSize + 5], 0x02);  // flags, after entry and kind
  EXPECT_EQ(round_trip(offer), Message{offer});
  offer.digest_at_end = true;
  EXPECT_EQ(encode(offer, kVersion2)[kHeaderSize + 5], 0x03);
  EXPECT_EQ(round_trip(offer), Message{offer});
  Bytes reserved = encode(offer, kVersion2);
  reserved[kHeaderSize + 5] = 0x04;
  EXPECT_EQ(decode_error(reserved), DecodeError::BadReserved);
  Offer directory;
  directory.kind = EntryKind::Directory;
  directory.size = 0;
  directory.path = "d";
  directory.striped = true;
  EXPECT_TRUE(encode(directory, kVersion2).empty());
}

TEST(WireStripes, InterruptedIsAVerdictOfAnEntryOnly) {
  const FileVerdict verdict{4, VerdictCode::Interrupted, {}};
  const Bytes bytes = encode(verdict, kVersion2);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes[kHeaderSize + 4], 5);
  EXPECT_EQ(round_trip(verdict), Message{verdict});
  EXPECT_TRUE(encode(Verdict{VerdictCode::Interrupted, {}}, kVersion2).empty());
}

TEST(StripeClaims, EachChunkOfTheGridOnceFromTheResumedPrefix) {
  StripeClaims claims(3 * kSlot + 100, kSlot, kSlot);
  EXPECT_FALSE(claims.claim(0, kSlot)) << "before the resumed prefix";
  EXPECT_FALSE(claims.claim(kSlot + 1, kSlot)) << "off the grid";
  EXPECT_FALSE(claims.claim(kSlot, kSlot - 1)) << "not the chunk's whole length";
  EXPECT_FALSE(claims.claim(3 * kSlot, kSlot)) << "the last chunk is 100 bytes";
  EXPECT_TRUE(claims.claim(3 * kSlot, 100));
  EXPECT_FALSE(claims.claim(3 * kSlot, 100)) << "claimed already";
  EXPECT_FALSE(claims.claim(4 * kSlot, kSlot)) << "past the end";
  EXPECT_TRUE(claims.claim(kSlot, kSlot));
  EXPECT_FALSE(claims.all_claimed());
  EXPECT_TRUE(claims.claim(2 * kSlot, kSlot));
  EXPECT_TRUE(claims.all_claimed());
}

Offer striped_offer(std::uint32_t entry, std::uint64_t size) {
  Offer o;
  o.entry = entry;
  o.size = size;
  o.path = "big" + std::to_string(entry);
  o.striped = true;
  o.digest_at_end = true;
  return o;
}

// The lead's ledger and a member's, as the receiver holds them for one group: the member's
// joined entry shares the lead entry's claims.
struct Group {
  ReceiveLedger lead{Open{DigestAlgorithm::Blake3, 0, 0, 1, 10 * kSlot}, kSlot, 2};
  ReceiveLedger member{Open{DigestAlgorithm::Blake3, 0, 0, 0, 0}, kSlot, 2};
  Group() {
    lead.set_stripe_role(ReceiveLedger::StripeRole::Lead);
    member.set_stripe_role(ReceiveLedger::StripeRole::Member);
  }
};

TEST(ReceiveLedgerStripes, AStripedOfferOnlyOnTheLeadAJoinOnlyOnAMember) {
  ReceiveLedger plain(Open{DigestAlgorithm::Blake3, 0, 0, 1, 10 * kSlot}, kSlot, 2);
  EXPECT_EQ(plain.offer(striped_offer(0, kSlot)), ReceiveRule::NotStriping);
  EXPECT_EQ(plain.join(Join{1, 0}), ReceiveRule::NotStriping);
  Group g;
  EXPECT_EQ(g.member.offer(striped_offer(0, kSlot)), ReceiveRule::TooManyEntries);
  EXPECT_EQ(g.lead.join(Join{1, 0}), ReceiveRule::NotStriping);
  EXPECT_EQ(g.lead.offer(striped_offer(0, kSlot)), std::nullopt);
}

TEST(ReceiveLedgerStripes, JoinsAreNumberedAfterTheOffersOncePerStripedEntry) {
  Group g;
  EXPECT_EQ(g.member.join(Join{1, 0}), ReceiveRule::JoinOutOfOrder);
  ASSERT_EQ(g.member.join(Join{0, 0}), std::nullopt);  // entry_count 0: joins from 0
  auto claims = std::make_shared<StripeClaims>(4 * kSlot, kSlot, 0);
  g.member.joined(Join{0, 0}, 4 * kSlot, claims);
  EXPECT_EQ(g.member.entry(0)->state, EntryState::Taken);
  EXPECT_EQ(g.member.join(Join{1, 0}), ReceiveRule::AlreadyJoined);
  EXPECT_EQ(g.member.join(Join{1, 5}), std::nullopt);  // another striped entry (refused later)
  EXPECT_EQ(g.member.join(Join{1, 6}), ReceiveRule::JoinOutOfOrder) << "numbers are not reused";
  EXPECT_FALSE(g.member.all_settled());
  g.member.settle(0, EntryEvent::Bad);
  EXPECT_TRUE(g.member.all_settled());
}

// Chunks of one striped file arrive on both connections in any order; each offset once in the
// group; the lead's FileDone comes once all are claimed; it is verified once none is being
// stored on any connection.
TEST(ReceiveLedgerStripes, ChunksInAnyOrderOnceInTheGroupThenTheLeadsFileDone) {
  Group g;
  const std::uint64_t size = 3 * kSlot + 10;
  ASSERT_EQ(g.lead.offer(striped_offer(0, size)), std::nullopt);
  g.lead.take(0);
  const auto claims = g.lead.entry(0)->claims;
  ASSERT_NE(claims, nullptr);
  ASSERT_EQ(g.member.join(Join{0, 0}), std::nullopt);
  g.member.joined(Join{0, 0}, size, claims);
  for (std::uint32_t slot : {0U, 1U}) {
    ASSERT_TRUE(g.lead.grant(slot));
    ASSERT_TRUE(g.member.grant(slot));
  }
  EXPECT_EQ(g.member.accept_chunk({0, 0, 3 * kSlot, 10}), std::nullopt) << "the last chunk first";
  EXPECT_EQ(g.lead.accept_chunk({0, 0, 3 * kSlot, 10}), ReceiveRule::ChunkClaimed);
  EXPECT_EQ(g.lead.accept_chunk({0, 0, kSlot + 8, kSlot}), ReceiveRule::WrongOffset);
  EXPECT_EQ(g.lead.accept_chunk({0, 0, kSlot, 10}), ReceiveRule::WrongLength);
  EXPECT_EQ(g.lead.accept_chunk({0, 0, kSlot, kSlot}), std::nullopt);
  EXPECT_TRUE(g.lead.wants_data()) << "chunks 0 and 2 are not claimed yet";
  EXPECT_EQ(g.lead.file_done({0, size, Digest{}}), ReceiveRule::StripeUnfinished);
  EXPECT_EQ(g.member.accept_chunk({0, 1, 0, kSlot}), std::nullopt);
  EXPECT_EQ(g.lead.accept_chunk({0, 1, 2 * kSlot, kSlot}), std::nullopt);
  EXPECT_FALSE(g.lead.wants_data()) << "every chunk is claimed";
  EXPECT_TRUE(g.member.wants_data()) << "the joined entry until its FileDone";
  // The member's part: no digest, whatever it sent.
  EXPECT_EQ(g.member.file_done({0, kSlot + 10, Digest{}}), ReceiveRule::DigestMisplaced);
  EXPECT_EQ(g.member.file_done({0, kSlot + 10}), std::nullopt);
  EXPECT_EQ(g.lead.file_done({0, size}), ReceiveRule::DigestMisplaced);
  EXPECT_EQ(g.lead.file_done({0, size, Digest{}}), std::nullopt);
  g.lead.stored(0, 0);
  g.lead.stored(1, 0);
  EXPECT_FALSE(g.lead.start_verifying(0)) << "the member's chunks are still being stored";
  g.member.stored(0, 0);
  EXPECT_FALSE(g.lead.start_verifying(0));
  g.member.release_slots_of(0);  // its last store cancelled (or done): none runs
  EXPECT_TRUE(g.lead.start_verifying(0));
}

TEST(ReceiveLedgerStripes, AResumedStripedFileClaimsFromItsPrefix) {
  Group g;
  ASSERT_EQ(g.lead.offer(striped_offer(0, 4 * kSlot)), std::nullopt);
  g.lead.take(0, 2 * kSlot);
  ASSERT_TRUE(g.lead.grant(0));
  EXPECT_EQ(g.lead.accept_chunk({0, 0, kSlot, kSlot}), ReceiveRule::ChunkClaimed);
  EXPECT_EQ(g.lead.accept_chunk({0, 0, 3 * kSlot, kSlot}), std::nullopt);
}

}  // namespace wire_stripes_test
