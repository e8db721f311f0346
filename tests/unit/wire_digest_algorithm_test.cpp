// The digest-algorithm extension (docs/PROTOCOL.md 7.10): a session digested with BLAKE3
// says so in an extension that a receiver without it refuses, never in the fixed field an
// older receiver would find unknown. The layout byte for byte, and each rule.

#include <gtest/gtest.h>

#include "protocol/wire.hpp"
#include "wire_test_helpers.hpp"

namespace {

using namespace rdmax::proto;
using rdmax::test::wire::Bytes;
using rdmax::test::wire::decode_error;
using rdmax::test::wire::round_trip;

// The example of docs/PROTOCOL.md 7.10: the Open of 7.5 with BLAKE3 and the digest at the end.
TEST(WireDigestAlgorithm, Blake3OpenMatchesTheDocument) {
  Open open{DigestAlgorithm::Blake3, 10000, 0, 3, 0x100000};
  open.extensions.push_back({kExtensionDigestAtEnd, {}});
  const Bytes expected = {
      0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x0e, 0x00,  // RMAX, version 2, type 14
      0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // payload 24 + 4 + 5 = 33
      0x02, 0x00, 0x00, 0x00,                          // digest_algorithm 2, reserved
      0x10, 0x27, 0x00, 0x00,                          // keepalive_ms 10000
      0x00, 0x00, 0x00, 0x00,                          // chunk_size_hint 0
      0x03, 0x00, 0x00, 0x00,                          // entry_count 3
      0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,  // total_bytes 1 MiB
      0x03, 0x80, 0x00, 0x00,                          // extension 0x8003, empty
      0x04, 0x80, 0x01, 0x00, 0x03,                    // extension 0x8004: algorithm 3
  };
  EXPECT_EQ(encode(open, kVersion2), expected);
  EXPECT_EQ(round_trip(open), Message{open}) << "decoded, the extension is the algorithm again";
}

// Every way the extension can be malformed is a BadField, so no receiver digests a session
// by an algorithm the sender did not mean.
TEST(WireDigestAlgorithm, OnlyOneByteNamingBlake3BesideFsVerity) {
  const Bytes base = encode(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0}, kVersion2);
  auto with = [&](std::uint8_t fixed, std::initializer_list<Bytes> extensions) {
    Bytes b = base;
    b[16] = fixed;
    for (const Bytes& e : extensions) b.insert(b.end(), e.begin(), e.end());
    b[8] = static_cast<std::uint8_t>(b.size() - 16);
    return b;
  };
  const Bytes blake3 = {0x04, 0x80, 0x01, 0x00, 0x03};
  ASSERT_FALSE(decode_error(with(2, {blake3})).has_value());
  const auto decoded = decode(with(2, {blake3}));
  ASSERT_TRUE(std::holds_alternative<Message>(decoded));
  const Open& open = std::get<Open>(std::get<Message>(decoded));
  EXPECT_EQ(open.digest_algorithm, DigestAlgorithm::Blake3);
  EXPECT_TRUE(open.extensions.empty());

  EXPECT_EQ(decode_error(with(1, {blake3})), DecodeError::BadField) << "beside SHA-256";
  EXPECT_EQ(decode_error(with(2, {blake3, blake3})), DecodeError::BadField) << "twice";
  EXPECT_EQ(decode_error(with(2, {{0x04, 0x80, 0x01, 0x00, 0x02}})), DecodeError::BadField)
      << "naming fs-verity";
  EXPECT_EQ(decode_error(with(2, {{0x04, 0x80, 0x01, 0x00, 0x09}})), DecodeError::BadField)
      << "naming an unknown algorithm";
  EXPECT_EQ(decode_error(with(2, {{0x04, 0x80, 0x00, 0x00}})), DecodeError::BadField) << "empty";
  EXPECT_EQ(decode_error(with(2, {{0x04, 0x80, 0x02, 0x00, 0x03, 0x00}})), DecodeError::BadField)
      << "two bytes";
  EXPECT_EQ(decode_error(with(3, {})), DecodeError::BadField) << "3 in the fixed field";
  // Not last (found by fuzz_decode): the Open would encode again to other bytes than came,
  // and a key's proofs over them would not match.
  const Bytes other = {0x63, 0x00, 0x00, 0x00};
  EXPECT_EQ(decode_error(with(2, {blake3, other})), DecodeError::BadField) << "not last";
  EXPECT_FALSE(decode_error(with(2, {other, blake3})).has_value()) << "last, after another";
}

// What the decoder refuses, the encoder refuses: BLAKE3 in a Hello (a version-2 Hello is
// the single file of a receiver that speaks no sessions' extensions), and a raw extension.
TEST(WireDigestAlgorithm, TheEncoderRefusesWhatTheDecoderWould) {
  Hello hello{1, {}, 0, "a"};
  hello.digest_algorithm = DigestAlgorithm::Blake3;
  EXPECT_TRUE(encode(hello, kVersion2).empty());
  Open raw{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0};
  raw.extensions.push_back({kExtensionDigestAlgorithm, std::string(1, '\x03')});
  EXPECT_TRUE(encode(raw, kVersion2).empty());
  EXPECT_TRUE(encode(Open{DigestAlgorithm::Blake3, 0, 0, 1, 0}, kVersion1).empty());
}

// In a version-2 Hello a well-formed one decodes and stays an extension, which the receiver
// refuses as a must-understand extension it does not apply there (receiver_rules_test).
TEST(WireDigestAlgorithm, InAHelloItIsCheckedAndKept) {
  Hello hello{1, {}, 0, "a"};
  hello.digest_algorithm = DigestAlgorithm::FsVeritySha256;
  hello.extensions.push_back({kExtensionDigestAlgorithm, std::string(1, '\x03')});
  EXPECT_EQ(round_trip(hello), Message{hello});
  hello.extensions.back().value = std::string(1, '\x02');
  EXPECT_TRUE(encode(hello, kVersion2).empty());
}

}  // namespace
