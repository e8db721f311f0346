// The digest at the end (docs/PROTOCOL.md 7.9): the worked examples byte for byte, round
// trips, the static rules of Holds, Continue, FileAbort, the 44-byte FileDone and Offer.flags,
// and that version 1 carries none of them.

#include <gtest/gtest.h>

#include "protocol/wire.hpp"
#include "wire_test_helpers.hpp"

namespace {

using namespace rdmax::proto;
using rdmax::test::wire::Bytes;
using rdmax::test::wire::decode_error;
using rdmax::test::wire::round_trip;

Digest a0_to_bf() {
  Digest d{};
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<std::uint8_t>(0xa0 + i);
  return d;
}

Bytes header(std::uint8_t type, std::uint8_t payload) {
  return {0x52,    0x4d, 0x41, 0x58, 0x02, 0x00, type, 0x00,
          payload, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(WireDigestAtEnd, HoldsLayoutMatchesTheDocument) {
  Bytes expected =
      concat(header(0x19, 44), {0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0, 0, 0, 0});
  const Digest d = a0_to_bf();
  expected.insert(expected.end(), d.begin(), d.end());
  const Holds holds{7, 3 << 20, d};
  EXPECT_EQ(encode(holds, kVersion2), expected);
  EXPECT_EQ(round_trip(holds), Message{holds});
}

TEST(WireDigestAtEnd, ContinueLayoutMatchesTheDocument) {
  const Bytes expected =
      concat(header(0x1b, 12), {0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0, 0, 0, 0});
  const Continue next{7, 3 << 20};
  EXPECT_EQ(encode(next, kVersion2), expected);
  EXPECT_EQ(round_trip(next), Message{next});
}

// The forms of 0x0006 (the example of PROTOCOL.md 7.9): how much is held, then the sender's
// digest of as much of its own file; every other payload length is a LengthMismatch.
TEST(WireDigestAtEnd, TheHoldsWithoutADigestAndTheProvingContinueMatchTheDocument) {
  const Bytes three_mib = {0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0, 0, 0, 0};
  const Holds holds{7, 3 << 20, std::nullopt};
  EXPECT_EQ(encode(holds, kVersion2), concat(header(0x19, 12), three_mib));
  EXPECT_EQ(round_trip(holds), Message{holds});
  const Digest d = a0_to_bf();
  Bytes expected = concat(header(0x1b, 44), three_mib);
  expected.insert(expected.end(), d.begin(), d.end());
  const Continue proving{7, 3 << 20, d};
  EXPECT_EQ(encode(proving, kVersion2), expected);
  EXPECT_EQ(round_trip(proving), Message{proving});
  for (const std::uint8_t type : {std::uint8_t{0x19}, std::uint8_t{0x1b}})
    for (const int length : {0, 11, 13, 43, 45}) {
      Bytes b = header(type, static_cast<std::uint8_t>(length));
      b.resize(b.size() + static_cast<std::size_t>(length), 0);
      EXPECT_EQ(decode_error(b), DecodeError::LengthMismatch) << int{type} << " " << length;
    }
}

TEST(WireDigestAtEnd, TheProveHeldExtensionIsEmpty) {
  Open open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0, {{kExtensionProveHeld, ""}}};
  const Bytes bytes = encode(open, kVersion2);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(Bytes(bytes.end() - 4, bytes.end()), (Bytes{0x06, 0x00, 0x00, 0x00}));
  EXPECT_EQ(round_trip(open), Message{open});
  Open with_value = open;
  with_value.extensions[0].value = "x";
  EXPECT_TRUE(encode(with_value, kVersion2).empty());
}

TEST(WireDigestAtEnd, FileAbortLayoutMatchesTheDocument) {
  const Bytes expected = concat(header(0x1a, 8), {0x07, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00});
  EXPECT_EQ(encode(FileAbort{7, AbortReason::Changed}, kVersion2), expected);
  const FileAbort unreadable{7, AbortReason::Unreadable};
  EXPECT_EQ(round_trip(unreadable), Message{unreadable});
}

TEST(WireDigestAtEnd, AFileDoneWithItsDigestIs44Bytes) {
  Bytes expected =
      concat(header(0x13, 44), {0x07, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0, 0, 0, 0});
  const Digest d = a0_to_bf();
  expected.insert(expected.end(), d.begin(), d.end());
  const FileDone done{7, 4096, d};
  EXPECT_EQ(encode(done, kVersion2), expected);
  EXPECT_EQ(round_trip(done), Message{done});
  // Without the digest it stays the 12 bytes of 7.5.
  EXPECT_EQ(encode(FileDone{7, 4096}, kVersion2).size(), 16u + 12u);
  const FileDone plain{7, 4096};
  EXPECT_EQ(round_trip(plain), Message{plain});
}

TEST(WireDigestAtEnd, AFileDoneOfAnyOtherLengthIsALengthMismatch) {
  Bytes done = encode(FileDone{7, 4096, a0_to_bf()}, kVersion2);
  for (const std::size_t payload : {0u, 11u, 13u, 43u, 45u}) {
    Bytes b = done;
    b.resize(16 + payload);
    b[8] = static_cast<std::uint8_t>(payload);
    EXPECT_EQ(decode_error(b), DecodeError::LengthMismatch) << payload;
  }
}

TEST(WireDigestAtEnd, TheOfferFlagIsByteFiveAndWantsAZeroDigest) {
  Offer o{7, EntryKind::File, 0640, 4096, 1700000000, 123456789, Digest{}, "d/a.bin", true};
  const Bytes bytes = encode(o, kVersion2);
  ASSERT_EQ(bytes.size(), 85u);
  EXPECT_EQ(bytes[16 + 5], 0x01);
  for (std::size_t i = 16 + 28; i < 16 + 60; ++i) EXPECT_EQ(bytes[i], 0) << i;
  EXPECT_EQ(round_trip(o), Message{o});

  Offer with_digest = o;
  with_digest.digest = a0_to_bf();
  EXPECT_TRUE(encode(with_digest, kVersion2).empty()) << "the encoder refuses what decode refuses";
  Offer directory{7, EntryKind::Directory, 0755, 0, 0, 0, Digest{}, "d", true};
  EXPECT_TRUE(encode(directory, kVersion2).empty());
  Bytes b = encode(Offer{o.entry, o.kind, o.mode, o.size, 0, 0, Digest{}, "d", false}, kVersion2);
  b[16 + 4] = 2;  // a directory
  b[16 + 8] = 0;  // of size 0
  b[16 + 9] = 0;
  b[16 + 5] = 1;  // with the flag
  EXPECT_EQ(decode_error(b), DecodeError::BadField);
}

TEST(WireDigestAtEnd, FileAbortRules) {
  Bytes reserved = encode(FileAbort{7, AbortReason::Changed}, kVersion2);
  reserved[16 + 7] = 1;
  EXPECT_EQ(decode_error(reserved), DecodeError::BadReserved);
  for (int reason = 0; reason <= 3; ++reason) {
    Bytes b = encode(FileAbort{7, AbortReason::Changed}, kVersion2);
    b[16 + 4] = static_cast<std::uint8_t>(reason);
    const bool known = reason == 1 || reason == 2;
    EXPECT_EQ(decode_error(b), known ? std::nullopt : std::optional{DecodeError::BadField})
        << reason;
  }
  Bytes shorter = encode(FileAbort{7, AbortReason::Changed}, kVersion2);
  shorter.pop_back();
  shorter[8] = 7;
  EXPECT_EQ(decode_error(shorter), DecodeError::LengthMismatch);
  Bytes holds = encode(Holds{7, 4096, {}}, kVersion2);
  holds.pop_back();
  holds[8] = 43;
  EXPECT_EQ(decode_error(holds), DecodeError::LengthMismatch);
  Bytes next = encode(Continue{7, 0}, kVersion2);
  next.push_back(0);
  next[8] = 13;
  EXPECT_EQ(decode_error(next), DecodeError::LengthMismatch);
}

TEST(WireDigestAtEnd, TheExtensionIsEmptyAndMustBeUnderstood) {
  EXPECT_EQ(kExtensionDigestAtEnd & kExtensionMustUnderstand, kExtensionMustUnderstand);
  Open open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0, {{kExtensionDigestAtEnd, ""}}};
  const Bytes bytes = encode(open, kVersion2);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(Bytes(bytes.end() - 4, bytes.end()), (Bytes{0x03, 0x80, 0x00, 0x00}));
  EXPECT_EQ(round_trip(open), Message{open});
  Open with_value = open;
  with_value.extensions[0].value = "x";
  EXPECT_TRUE(encode(with_value, kVersion2).empty());
}

TEST(WireDigestAtEnd, VersionOneCarriesNoneOfIt) {
  EXPECT_TRUE(encode(Holds{7, 1, {}}, kVersion1).empty());
  EXPECT_TRUE(encode(FileAbort{7, AbortReason::Changed}, kVersion1).empty());
  EXPECT_TRUE(encode(Continue{7, 0}, kVersion1).empty());
  for (const std::uint8_t type : {std::uint8_t{0x19}, std::uint8_t{0x1a}, std::uint8_t{0x1b}}) {
    Bytes b = encode(Continue{7, 0}, kVersion2);
    b[4] = 1;  // version 1
    b[6] = type;
    EXPECT_EQ(decode_error(b), DecodeError::BadType) << int{type};
  }
  // Abandoned is a FileVerdict's code only: a Verdict (type 6) keeps its four.
  Bytes verdict = encode(Verdict{}, kVersion2);
  verdict[16] = static_cast<std::uint8_t>(VerdictCode::Abandoned);
  EXPECT_EQ(decode_error(verdict), DecodeError::BadField);
}

}  // namespace
