// What a sender holds the receiver's Accept and Resume to (protocol/transfer_rules.hpp):
// the one copy of the rules the sender's driver applies.

#include "protocol/transfer_rules.hpp"

#include <gtest/gtest.h>

#include <functional>

namespace rdmax::proto {
namespace {

constexpr auto kTree = DigestAlgorithm::FsVeritySha256;
constexpr auto kWhole = DigestAlgorithm::WholeFileSha256;

Accept accept_of(std::uint32_t slot_size) {
  Accept a{};
  a.slot_size = slot_size;
  a.slot_count = 8;
  return a;
}

TEST(CheckAccept, TheSlotSizeCapAndTheBlockGrid) {
  EXPECT_EQ(check_accept(accept_of(1u << 20), kTree, 0), std::nullopt);
  EXPECT_EQ(check_accept(accept_of(kSenderMaxSlotSize), kTree, 0), std::nullopt);
  EXPECT_EQ(check_accept(accept_of(kSenderMaxSlotSize + 4096), kTree, 0),
            AcceptProblem::SlotTooLarge);
  EXPECT_EQ(check_accept(accept_of(4096 + 512), kTree, 0), AcceptProblem::SlotNotBlockMultiple);
  // The whole-file SHA-256 hashes a stream: any slot size will do.
  EXPECT_EQ(check_accept(accept_of(4096 + 512), kWhole, 0), std::nullopt);
}

TEST(CheckAccept, AResumeBeforeItMustStartAChunk) {
  EXPECT_EQ(check_accept(accept_of(1u << 20), kTree, 3u << 20), std::nullopt);
  EXPECT_EQ(check_accept(accept_of(1u << 20), kTree, (3u << 20) + 4096),
            AcceptProblem::ResumeNotAligned);
  const std::string why = describe(AcceptProblem::ResumeNotAligned, accept_of(1u << 20), 4096);
  EXPECT_NE(why.find("4096"), std::string::npos) << why;
  EXPECT_NE(why.find("1048576-byte slots"), std::string::npos) << why;
}

TEST(CheckResume, EachRule) {
  ResumeFacts f{kTree, 1u << 20, 5u << 20, 1u << 20, false};
  EXPECT_EQ(check_resume(f), std::nullopt);
  f.slot_size = 0;  // a single file's Resume: the Accept checks the alignment later
  f.offset = 4096;
  EXPECT_EQ(check_resume(f), std::nullopt);
  f.slot_size = 1u << 20;
  EXPECT_EQ(check_resume(f), ResumeProblem::NotChunkAligned);
  f.offset = 0;
  EXPECT_EQ(check_resume(f), ResumeProblem::AtZero);
  f.offset = 5u << 20;  // the whole file: nothing left to send
  EXPECT_EQ(check_resume(f), ResumeProblem::NotBeforeTheEnd);
  f.offset = 1u << 20;
  f.algorithm = kWhole;
  EXPECT_EQ(check_resume(f), ResumeProblem::NotATree);
  f.algorithm = DigestAlgorithm::Blake3;
  EXPECT_EQ(check_resume(f), std::nullopt);
  f.algorithm = kTree;
  f.resumed_already = true;
  EXPECT_EQ(check_resume(f), ResumeProblem::Repeated);
  for (auto p : {ResumeProblem::NotATree, ResumeProblem::AtZero, ResumeProblem::NotBeforeTheEnd,
                 ResumeProblem::NotChunkAligned, ResumeProblem::Repeated})
    EXPECT_NE(describe(p, f).find("Resume at 1048576"), std::string::npos);
}

// PROTOCOL.md 7.1: on a version-2 connection only an Error answering the first message, or
// a Reject, may come in version 1.
TEST(SenderAcceptsVersion, OnlyAnEarlyErrorOrRejectMayComeInVersionOne) {
  const Message error = Error{ErrorCode::Timeout, "timeout"};
  const Message reject = Reject{RejectReason::UnsupportedVersion, ""};
  const Message accept = Accept{};
  EXPECT_TRUE(sender_accepts_version(kVersion2, kVersion2, &accept, false));
  EXPECT_TRUE(sender_accepts_version(kVersion1, kVersion1, &accept, true));
  EXPECT_TRUE(sender_accepts_version(kVersion2, kVersion1, &error, true));
  EXPECT_TRUE(sender_accepts_version(kVersion2, kVersion1, &reject, true));
  EXPECT_TRUE(sender_accepts_version(kVersion2, kVersion1, &reject, false));  // machine judges
  EXPECT_FALSE(sender_accepts_version(kVersion2, kVersion1, &error, false));  // later: no
  EXPECT_FALSE(sender_accepts_version(kVersion2, kVersion1, &accept, true));  // not an Accept
  EXPECT_FALSE(sender_accepts_version(kVersion2, kVersion1, nullptr, true));  // undecodable
  EXPECT_FALSE(sender_accepts_version(kVersion1, kVersion2, &error, true));   // never upwards
}

TEST(RejectsOurVersion, OnlyUnsupportedVersionInAnOlderVersion) {
  const Reject version_refusal{RejectReason::UnsupportedVersion, ""};
  EXPECT_TRUE(rejects_our_version(version_refusal, kVersion1, kVersion2));
  // In our own version it refuses something else of the first message: final.
  EXPECT_FALSE(rejects_our_version(version_refusal, kVersion2, kVersion2));
  EXPECT_FALSE(rejects_our_version(Reject{RejectReason::Exists, ""}, kVersion1, kVersion2));
}

// The one ladder of fall-backs (PROTOCOL.md 7.1, 7.9, 7.10): from what rdma-send asks by
// default, every path down it, and where it stops.
TEST(FallBack, EachRefusalDropsItsTermTheNewestFirst) {
  const SessionTerms all{};  // version 2, BLAKE3, the digest at the end
  const auto no_blake3 = fall_back(all, TermRefused::Algorithm, false, false);
  ASSERT_TRUE(no_blake3);
  EXPECT_EQ(*no_blake3, (SessionTerms{kVersion2, kTree, true}));
  const auto digests_first = fall_back(*no_blake3, TermRefused::DigestAtEnd, false, false);
  ASSERT_TRUE(digests_first);
  EXPECT_EQ(*digests_first, (SessionTerms{kVersion2, kTree, false}));
  // A receiver that knows the digest at the end but not BLAKE3, refused in the other order.
  EXPECT_EQ(fall_back(all, TermRefused::DigestAtEnd, false, false),
            (SessionTerms{kVersion2, DigestAlgorithm::Blake3, false}));
  // Nothing is dropped twice: a refusal of a term not asked for ends the ladder.
  EXPECT_EQ(fall_back(*no_blake3, TermRefused::Algorithm, false, false), std::nullopt);
  EXPECT_EQ(fall_back(*digests_first, TermRefused::DigestAtEnd, false, false), std::nullopt);
}

// PROTOCOL.md 7.10, "Falling back" (finding 8 of issue 50): a Reject names no extension, so
// the newest term asked is the one taken as refused. A receiver that knows BLAKE3 but not the
// digest at the end refuses every Open that asks for 0x8003: it is asked three times, and
// serves the fs-verity digest without the digest at the end. The last release (0x8003
// without BLAKE3) is asked twice and keeps the digest at the end.
TEST(FallBack, AReceiverWithBlake3ButNotTheDigestAtTheEndEndsOnFsVerity) {
  const auto ladder = [](const std::function<bool(const SessionTerms&)>& refuses) {
    SessionTerms terms{};
    int connections = 1;
    while (refuses(terms)) {
      const auto term = term_refused(terms);
      if (!term) return std::pair{std::optional<SessionTerms>(), connections};
      const auto next = fall_back(terms, *term, false, false);
      if (!next) return std::pair{std::optional<SessionTerms>(), connections};
      terms = *next;
      ++connections;
    }
    return std::pair{std::optional(terms), connections};
  };
  const auto blake3_only = ladder([](const SessionTerms& t) { return t.digest_at_end; });
  EXPECT_EQ(blake3_only.first, (SessionTerms{kVersion2, kTree, false}));
  EXPECT_EQ(blake3_only.second, 3);
  const auto release =
      ladder([](const SessionTerms& t) { return t.algorithm == DigestAlgorithm::Blake3; });
  EXPECT_EQ(release.first, (SessionTerms{kVersion2, kTree, true}));
  EXPECT_EQ(release.second, 2);
  const auto neither = ladder([](const SessionTerms& t) {
    return t.digest_at_end || t.algorithm == DigestAlgorithm::Blake3;
  });
  EXPECT_EQ(neither.first, (SessionTerms{kVersion2, kTree, false}));
  EXPECT_EQ(neither.second, 3);
  // A version-2 refusal of an Open that asked for neither refuses version 2 itself: no term.
  EXPECT_EQ(term_refused(SessionTerms{kVersion2, kTree, false}), std::nullopt);
}

TEST(FallBack, VersionOneOnlyForOneFileWithoutAKey) {
  const SessionTerms all{};
  EXPECT_EQ(fall_back(all, TermRefused::Version, true, false),
            (SessionTerms{kVersion1, kWhole, false}));
  EXPECT_EQ(fall_back(all, TermRefused::Version, false, false), std::nullopt);  // a tree
  EXPECT_EQ(fall_back(all, TermRefused::Version, true, true), std::nullopt);    // a key
  const SessionTerms version1{kVersion1, kWhole, false};
  EXPECT_EQ(fall_back(version1, TermRefused::Version, true, false), std::nullopt);
}

}  // namespace
}  // namespace rdmax::proto
