// The session messages of version 2 (docs/PROTOCOL.md 7.5): layouts byte for byte, round
// trips, static rules, and that version 1 cannot carry them.

#include <gtest/gtest.h>

#include "protocol/wire.hpp"
#include "wire_test_helpers.hpp"

namespace {

using namespace rdmax::proto;
using rdmax::test::wire::Bytes;
using rdmax::test::wire::decode_error;
using rdmax::test::wire::round_trip;

Offer example_offer() {
  Offer o;
  o.entry = 7;
  o.kind = EntryKind::File;
  o.mode = 0640;
  o.size = 4096;
  o.mtime_sec = 1700000000;
  o.mtime_nsec = 123456789;
  for (std::size_t i = 0; i < o.digest.size(); ++i)
    o.digest[i] = static_cast<std::uint8_t>(0xa0 + i);
  o.path = "d/a.bin";
  return o;
}

// The worked examples of docs/PROTOCOL.md 7.5.
TEST(WireSession, OpenLayoutMatchesTheDocument) {
  const Open open{DigestAlgorithm::FsVeritySha256, 10000, 0, 3, 0x100000};
  const Bytes expected = {
      0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x0e, 0x00,  // RMAX, version 2, type 14
      0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // payload 24
      0x02, 0x00, 0x00, 0x00,                          // digest_algorithm 2, reserved
      0x10, 0x27, 0x00, 0x00,                          // keepalive_ms 10000
      0x00, 0x00, 0x00, 0x00,                          // chunk_size_hint 0
      0x03, 0x00, 0x00, 0x00,                          // entry_count 3
      0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,  // total_bytes 1 MiB
  };
  EXPECT_EQ(encode(open, kVersion2), expected);
  EXPECT_EQ(round_trip(open), Message{open});
}

TEST(WireSession, OfferLayoutMatchesTheDocument) {
  Bytes expected = {
      0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x0f, 0x00,  // type 15
      0x45, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // payload 62 + 7 = 69
      0x07, 0x00, 0x00, 0x00,                          // entry 7
      0x01, 0x00,                                      // kind 1 (file), reserved
      0xa0, 0x01,                                      // mode 0640
      0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // size 4096
      0x00, 0xf1, 0x53, 0x65, 0x00, 0x00, 0x00, 0x00,  // mtime_sec 1700000000
      0x15, 0xcd, 0x5b, 0x07,                          // mtime_nsec 123456789
  };
  for (int i = 0; i < 32; ++i) expected.push_back(static_cast<std::uint8_t>(0xa0 + i));
  const Bytes tail = {0x07, 0x00, 'd', '/', 'a', '.', 'b', 'i', 'n'};
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(encode(example_offer(), kVersion2), expected);
  EXPECT_EQ(round_trip(example_offer()), Message{example_offer()});
}

TEST(WireSession, TheOtherSessionMessagesRoundTrip) {
  Digest digest{};
  digest[0] = 0x55;
  const std::vector<Message> all = {
      Take{3},
      Refuse{4, RejectReason::Exists, "exists"},
      FileChunk{5, 2, 1 << 20, 4096},
      FileDone{6, 123},
      FileVerdict{7, VerdictCode::HashMismatch, digest},
  };
  const std::vector<std::size_t> sizes = {4, 4 + 4 + 6, 20, 12, 37};
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(encode(all[i], kVersion2).size(), kHeaderSize + sizes[i]) << i;
    EXPECT_EQ(round_trip(all[i]), all[i]) << i;
  }
  // A negative time (before 1970) survives as two's complement.
  Offer old = example_offer();
  old.mtime_sec = -86400;
  EXPECT_EQ(round_trip(old), Message{old});
}

TEST(WireSession, Version1HasNoSessions) {
  EXPECT_TRUE(encode(Open{DigestAlgorithm::WholeFileSha256, 0, 0, 1, 0}, kVersion1).empty());
  EXPECT_TRUE(encode(example_offer(), kVersion1).empty());
  EXPECT_TRUE(encode(Take{1}, kVersion1).empty());
  EXPECT_TRUE(encode(FileVerdict{}, kVersion1).empty());
  // Type 14 in a version-1 header is an unknown type.
  Bytes b = encode(Take{1}, kVersion2);
  b[4] = 1;
  EXPECT_EQ(decode_error(b), DecodeError::BadType);
}

TEST(WireSession, StaticRules) {
  // Open: no entries, unknown algorithm, reserved bytes, keepalive out of range.
  EXPECT_TRUE(encode(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 0, 0}, kVersion2).empty());
  const Bytes open = encode(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0}, kVersion2);
  Bytes algorithm = open;
  algorithm[16] = 3;
  EXPECT_EQ(decode_error(algorithm), DecodeError::BadField);
  Bytes reserved = open;
  reserved[17] = 1;
  EXPECT_EQ(decode_error(reserved), DecodeError::BadReserved);
  Bytes keepalive = open;
  keepalive[20] = 10;  // 10 ms
  EXPECT_EQ(decode_error(keepalive), DecodeError::BadField);
  Bytes count = open;
  count[28] = 0;
  EXPECT_EQ(decode_error(count), DecodeError::BadField) << "entry_count 1 -> 0";

  // Offer: each field rule.
  const Bytes offer = encode(example_offer(), kVersion2);
  Bytes kind = offer;
  kind[16 + 4] = 3;
  EXPECT_EQ(decode_error(kind), DecodeError::BadField);
  Bytes offer_reserved = offer;
  // flags: bit 0 is digest_at_end (7.9), bit 1 striped (7.12), the rest reserved
  offer_reserved[16 + 5] = 4;
  EXPECT_EQ(decode_error(offer_reserved), DecodeError::BadReserved);
  Bytes offer_flagged = offer;  // digest_at_end with the example's digest set
  offer_flagged[16 + 5] = 1;
  EXPECT_EQ(decode_error(offer_flagged), DecodeError::BadField);
  Bytes mode = offer;
  mode[16 + 7] = 0x10;  // 0x10a0 > 07777
  EXPECT_EQ(decode_error(mode), DecodeError::BadField);
  Bytes nsec = offer;
  nsec[16 + 27] = 0x40;  // > 10^9
  EXPECT_EQ(decode_error(nsec), DecodeError::BadField);
  Offer directory = example_offer();
  directory.kind = EntryKind::Directory;
  EXPECT_TRUE(encode(directory, kVersion2).empty()) << "a directory with a size and digest";
  directory.size = 0;
  directory.digest = {};
  EXPECT_EQ(round_trip(directory), Message{directory});
  Offer no_path = example_offer();
  no_path.path.clear();
  EXPECT_TRUE(encode(no_path, kVersion2).empty());
  Offer long_path = example_offer();
  long_path.path.assign(kMaxPathBytes, 'a');
  EXPECT_FALSE(encode(long_path, kVersion2).empty());
  long_path.path.push_back('a');
  EXPECT_TRUE(encode(long_path, kVersion2).empty());
  Bytes path_len = offer;
  path_len[16 + 60] = 8;  // one more than follows
  EXPECT_EQ(decode_error(path_len), DecodeError::LengthMismatch);

  // Refuse and FileVerdict: known codes only.
  Bytes refuse = encode(Refuse{1, RejectReason::Exists, ""}, kVersion2);
  refuse[16 + 4] = 99;
  EXPECT_EQ(decode_error(refuse), DecodeError::BadField);
  Bytes verdict = encode(FileVerdict{}, kVersion2);
  verdict[16 + 4] = 9;
  EXPECT_EQ(decode_error(verdict), DecodeError::BadField);
  // Fixed sizes are exact.
  Bytes take = encode(Take{1}, kVersion2);
  take.push_back(0);
  take[8] = 5;
  EXPECT_EQ(decode_error(take), DecodeError::LengthMismatch);
}

// PROTOCOL.md 7.5: Refuse.reason is a RejectReason of 1..10 and FileVerdict.code any
// VerdictCode (0..3, and 4 Abandoned of 7.9), the ones a receiver never sends included; any
// other value is BadField. 11, SealRequired, judges a connection at its Open (7.11), never an
// entry: it never appears in a Refuse, and the encoder will not write it there.
TEST(WireSession, RefuseAndFileVerdictTakeEveryKnownCodeAndNoOther) {
  EXPECT_TRUE(encode(Refuse{1, RejectReason::SealRequired, ""}, kVersion2).empty());
  EXPECT_FALSE(encode(Reject{RejectReason::SealRequired, ""}, kVersion2).empty());
  for (int reason = 0; reason <= 12; ++reason) {
    Bytes refuse = encode(Refuse{1, RejectReason::Exists, ""}, kVersion2);
    refuse[16 + 4] = static_cast<std::uint8_t>(reason);
    const bool known = reason >= 1 && reason <= 10;
    EXPECT_EQ(decode_error(refuse), known ? std::nullopt : std::optional{DecodeError::BadField})
        << reason;
  }
  for (int code = 0; code <= 6; ++code) {
    Bytes verdict = encode(FileVerdict{}, kVersion2);
    verdict[16 + 4] = static_cast<std::uint8_t>(code);
    EXPECT_EQ(decode_error(verdict),
              code <= 5 ? std::nullopt : std::optional{DecodeError::BadField})
        << code;
  }
}

// Section 2: every length is checked (step 8) before any reserved field (step 9), in an
// Offer, an Open and a version-2 Hello alike.
TEST(WireSession, LengthsAreCheckedBeforeReservedFields) {
  Bytes offer = encode(example_offer(), kVersion2);
  offer[16 + 5] = 1;   // reserved
  offer[16 + 60] = 8;  // path_len one more than follows
  EXPECT_EQ(decode_error(offer), DecodeError::LengthMismatch);
  Bytes open = encode(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0}, kVersion2);
  open[17] = 1;                                       // reserved
  open.insert(open.end(), {0x01, 0x00, 0x05, 0x00});  // an extension claiming 5 bytes, 0 follow
  open[8] = static_cast<std::uint8_t>(open.size() - 16);
  EXPECT_EQ(decode_error(open), DecodeError::LengthMismatch);
  Bytes hello = encode(Hello{1, {}, 0, "a"}, kVersion2);
  hello[16 + 10] = 1;                       // reserved
  hello.insert(hello.end(), {0x01, 0x00});  // half an extension header
  hello[8] = static_cast<std::uint8_t>(hello.size() - 16);
  EXPECT_EQ(decode_error(hello), DecodeError::LengthMismatch);
}

}  // namespace
