// What a receiver holds a Hello, an Open and an Offer to (protocol/receiver_rules.hpp):
// written once for the one-file flow and sessions, so one test judges both.

#include "protocol/receiver_rules.hpp"

#include <gtest/gtest.h>

namespace rdmax::proto {
namespace receiver_rules_test {

constexpr std::uint32_t kSlot = 1u << 20;

TEST(ReservedByReceiver, ThePartialAreaAndWhatIsUnderIt) {
  EXPECT_TRUE(reserved_by_receiver(".rdmax-partial"));
  EXPECT_TRUE(reserved_by_receiver(".rdmax-partial/abc.data"));
  // Only DIR/.rdmax-partial is the receiver's: the name deeper down is an ordinary path.
  EXPECT_FALSE(reserved_by_receiver("a/.rdmax-partial"));
  EXPECT_FALSE(reserved_by_receiver("x/.rdmax-partial/y"));
  EXPECT_FALSE(reserved_by_receiver(".rdmax-partial2"));
  EXPECT_FALSE(reserved_by_receiver("rdmax-partial"));
}

TEST(ReceiverRules, ExtensionsResumeIsKnownOthersIgnoredUnlessTheyMustBeUnderstood) {
  EXPECT_FALSE(read_extensions({}, "Hello").resume_understood);
  const auto known = read_extensions({{kExtensionResume, {}}, {0x0042, {1, 2}}}, "Open");
  EXPECT_TRUE(known.resume_understood);
  EXPECT_EQ(known.ignored, std::vector<std::uint16_t>{0x0042});
  EXPECT_FALSE(known.refusal);
  const std::uint16_t must = kExtensionMustUnderstand | 0x0007;
  const auto refused = read_extensions({{kExtensionResume, {}}, {must, {}}}, "Open");
  ASSERT_TRUE(refused.refusal);
  EXPECT_EQ(refused.refusal->reason, RejectReason::UnsupportedVersion);
  EXPECT_EQ(refused.refusal->text, "this receiver does not know Open extension 0x8007");
  // The digest at the end and BLAKE3 are a session's: in a Hello, refused the same way.
  for (std::uint16_t type : {kExtensionDigestAtEnd, kExtensionDigestAlgorithm}) {
    const auto in_hello = read_extensions({{type, {}}}, "Hello");
    ASSERT_TRUE(in_hello.refusal);
    EXPECT_EQ(in_hello.refusal->reason, RejectReason::UnsupportedVersion);
  }
  EXPECT_EQ(read_extensions({{kExtensionDigestAlgorithm, {}}}, "Hello").refusal->text,
            "Hello extension 0x8004 applies only in an Open (a session)");
  EXPECT_FALSE(read_extensions({{kExtensionDigestAtEnd, {}}}, "Open").refusal);
}

// One file (a Hello's, or a session of one entry): exactly its chunks, as a version-1
// receiver has always given a Hello.
Window one_file(std::uint64_t size, std::uint32_t max_slots) {
  Open open;
  open.entry_count = 1;
  open.total_bytes = size;
  return window_for_session(open, kSlot, max_slots);
}

TEST(ReceiverRules, AFilesWindowHasASlotPerChunkAndAnEmptyFileNone) {
  EXPECT_EQ(one_file(0, 8), (Window{1, 0}));
  EXPECT_EQ(one_file(1, 8), (Window{1, kSlot}));
  EXPECT_EQ(one_file(3 * kSlot, 8), (Window{3, 3ull * kSlot}));
  EXPECT_EQ(one_file(3 * kSlot + 1, 8), (Window{4, 4ull * kSlot}));
  EXPECT_EQ(one_file(100ull * kSlot, 8), (Window{8, 8ull * kSlot}));
}

TEST(ReceiverRules, ASessionsWindowHasASlotPerEntryInFlightBesidesItsChunks) {
  Open open;
  open.entry_count = 3;
  open.total_bytes = 0;  // only empty files and directories: nothing to write
  EXPECT_EQ(window_for_session(open, kSlot, 8).bytes, 0u);
  open.total_bytes = 10;  // three small files: one chunk each
  EXPECT_EQ(window_for_session(open, kSlot, 8), (Window{3, 3ull * kSlot}));
  open.total_bytes = 2 * kSlot;  // e.g. kSlot + 1, kSlot - 2 and 1 byte: 2 + 1 + 1 chunks
  EXPECT_EQ(window_for_session(open, kSlot, 8).slots, 4u);
  open.entry_count = 1000;  // many: at most 16 in flight, at most --slots
  open.total_bytes = 10;
  EXPECT_EQ(window_for_session(open, kSlot, 64).slots, 16u);
  EXPECT_EQ(window_for_session(open, kSlot, 8).slots, 8u);
}

TEST(ReceiverRules, TheMemoryCapCountsEveryConnectionsWindow) {
  const Window w{4, 4ull * kSlot};
  EXPECT_FALSE(check_memory(0, w, 4ull * kSlot));
  const auto refused = check_memory(1, w, 4ull * kSlot);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->reason, RejectReason::NoMemory);
  EXPECT_FALSE(check_memory(4ull * kSlot, Window{1, 0}, 4ull * kSlot));  // full; pins nothing
}

TEST(ReceiverRules, AHellosNameIsOnePlainFileNameOutsideTheReservedArea) {
  Offer hello;  // as the Hello's edge offers it (receiver/hello_edge.hpp)
  hello.size = 10;
  hello.path = "a.bin";
  EXPECT_FALSE(check_offer(hello, 100, OfferedName::FileName));
  for (const char* bad : {"a/b", "..", ".rdmax-partial"}) {
    hello.path = bad;
    const auto refused = check_offer(hello, 100, OfferedName::FileName);
    ASSERT_TRUE(refused) << bad;
    EXPECT_EQ(refused->reason, RejectReason::BadName) << bad;
  }
  hello.path = "big.bin";
  hello.size = 101;
  const auto large = check_offer(hello, 100, OfferedName::FileName);
  ASSERT_TRUE(large);
  EXPECT_EQ(large->reason, RejectReason::TooLarge);
}

TEST(ReceiverRules, AnOffersPathIsRelativeOutsideTheReservedAreaAndAFileWithinMaxSize) {
  Offer offer;
  offer.kind = EntryKind::File;
  offer.size = 10;
  offer.path = "d/a.bin";
  EXPECT_FALSE(check_offer(offer, 100));
  for (const char* bad : {"/etc/passwd", "a/../b", ".rdmax-partial/x", ""}) {
    offer.path = bad;
    const auto refused = check_offer(offer, 100);
    ASSERT_TRUE(refused) << bad;
    EXPECT_EQ(refused->reason, RejectReason::BadName) << bad;
  }
  offer.path = "d/big.bin";
  offer.size = 101;
  ASSERT_TRUE(check_offer(offer, 100));
  EXPECT_EQ(check_offer(offer, 100)->reason, RejectReason::TooLarge);
  offer.kind = EntryKind::Directory;  // a directory has no size to cap
  EXPECT_FALSE(check_offer(offer, 100));
}

}  // namespace receiver_rules_test
}  // namespace rdmax::proto
