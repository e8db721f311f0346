// Sealing on the wire (docs/PROTOCOL.md 7.11): the sealed FileChunk's 44 bytes, Sealed's
// layout and rules, the Open's seal extension, and that version 1 carries none of it.

#include <gtest/gtest.h>

#include "protocol/receiver_rules.hpp"
#include "protocol/seal.hpp"
#include "protocol/wire.hpp"
#include "wire_test_helpers.hpp"

namespace {

using namespace rdmax::proto;
using rdmax::test::wire::Bytes;
using rdmax::test::wire::decode_error;
using rdmax::test::wire::round_trip;

TEST(WireSeal, ASealedFileChunkIs44Bytes) {
  FileChunk chunk{5, 2, 0x0102030405060708, 4096, ChunkSeal{9, {}}};
  for (std::size_t i = 0; i < kSealTagBytes; ++i)
    chunk.seal->tag[i] = static_cast<std::uint8_t>(0x10 + i);
  const Bytes expected = {
      0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x12, 0x00, 0x2c, 0x00, 0x00, 0x00,  // header
      0x00, 0x00, 0x00, 0x00,                                                  // type 18, 44
      0x05, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,                          // entry, slot
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,                          // offset
      0x00, 0x10, 0x00, 0x00,                                                  // length
      0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                          // counter
      0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b,  // tag
      0x1c, 0x1d, 0x1e, 0x1f};
  EXPECT_EQ(encode(chunk, kVersion2), expected);
  EXPECT_EQ(round_trip(chunk), Message{chunk});
  // Of any other length than 20 or 44: a length mismatch.
  Bytes cut = expected;
  cut.resize(expected.size() - 1);
  cut[8] = 43;
  EXPECT_EQ(decode_error(cut), DecodeError::LengthMismatch);
}

TEST(WireSeal, SealedHoldsABoxOfAtLeast32Bytes) {
  const Sealed sealed{std::string(kSealedMinBox, '\x7f')};
  const Bytes bytes = encode(sealed, kVersion2);
  ASSERT_EQ(bytes.size(), kHeaderSize + 2 + kSealedMinBox);
  EXPECT_EQ(bytes[6], 28);
  EXPECT_EQ(bytes[16], kSealedMinBox);  // the box's u16 length
  const auto header = sealed_header(kSealedMinBox);
  EXPECT_EQ(Bytes(bytes.begin(), bytes.begin() + kHeaderSize), Bytes(header.begin(), header.end()));
  EXPECT_EQ(round_trip(sealed), Message{sealed});
  EXPECT_TRUE(encode(Sealed{std::string(kSealedMinBox - 1, 'x')}, kVersion2).empty());
  Bytes short_box = bytes;
  short_box.pop_back();
  short_box[8] -= 1;
  short_box[16] -= 1;
  EXPECT_EQ(decode_error(short_box), DecodeError::BadField);
}

TEST(WireSeal, VersionOneCarriesNoneOfIt) {
  EXPECT_TRUE(encode(Sealed{std::string(kSealedMinBox, 'x')}, kVersion1).empty());
  Bytes b = encode(Sealed{std::string(kSealedMinBox, 'x')}, kVersion2);
  b[4] = 1;
  EXPECT_EQ(decode_error(b), DecodeError::BadType);
  EXPECT_TRUE(encode(Reject{RejectReason::SealRequired, ""}, kVersion1).empty());
}

TEST(WireSeal, TheOpensExtensionIsOneByteNamingTheSuite) {
  Open open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0};
  EXPECT_FALSE(asks_to_seal(open));
  open.extensions.push_back(seal_extension());
  EXPECT_TRUE(asks_to_seal(open));
  const Bytes bytes = encode(open, kVersion2);
  const Bytes tail(bytes.end() - 5, bytes.end());
  EXPECT_EQ(tail, (Bytes{0x05, 0x00, 0x01, 0x00, 0x01}));
  EXPECT_EQ(round_trip(open), Message{open});
  for (const std::string& value : {std::string(), std::string("\x02"), std::string("\x01\x01")}) {
    Open bad{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0};
    bad.extensions.push_back({kExtensionSeal, value});
    EXPECT_TRUE(encode(bad, kVersion2).empty()) << value.size();
  }
}

// A version-2 Hello carrying `extension`, as the bytes a sender would send.
Bytes hello_with(HelloExtension extension) {
  Hello hello{1, {}, 0, "a"};
  hello.extensions.push_back(std::move(extension));
  return encode(hello, kVersion2);
}

// PROTOCOL.md 7.11 (finding 9 of issue 50): the seal extension's static rules hold in a
// version-2 Hello too (a bad value is BadField, step 10); a good one is ignored there, as in
// an Open without a key: a Hello has no key to seal with.
TEST(WireSeal, ASealExtensionInAHelloIsCheckedThenIgnored) {
  const Bytes good = hello_with(seal_extension());
  ASSERT_FALSE(good.empty());
  const auto decoded = decode(good);
  ASSERT_TRUE(std::holds_alternative<Message>(decoded));
  const ExtensionsRead read =
      read_extensions(std::get<Hello>(std::get<Message>(decoded)).extensions, "Hello");
  EXPECT_FALSE(read.refusal);
  EXPECT_EQ(read.ignored, std::vector<std::uint16_t>{kExtensionSeal});
  Bytes bad = good;
  bad.back() = 2;  // suite 2
  EXPECT_EQ(decode_error(bad), DecodeError::BadField);
}

// PROTOCOL.md 7.10 (finding 10 of issue 50): a Hello's 0x8004 with a bad length or value is
// the decoder's BadField before any receiver judges what it means; a good one decodes, and
// is then refused as a must-understand extension the receiver does not apply in a Hello.
TEST(WireSeal, ABadDigestAlgorithmExtensionInAHelloIsBadFieldFirst) {
  const Bytes good = hello_with({kExtensionDigestAlgorithm, std::string(1, '\x03')});
  ASSERT_FALSE(good.empty());
  const auto decoded = decode(good);
  ASSERT_TRUE(std::holds_alternative<Message>(decoded));
  const ExtensionsRead read =
      read_extensions(std::get<Hello>(std::get<Message>(decoded)).extensions, "Hello");
  ASSERT_TRUE(read.refusal);
  EXPECT_EQ(read.refusal->reason, RejectReason::UnsupportedVersion);
  Bytes bad_value = good;
  bad_value.back() = 2;
  EXPECT_EQ(decode_error(bad_value), DecodeError::BadField);
  Bytes bad_length = good;  // length 2: the value and one more byte
  bad_length.push_back(3);
  bad_length[8] += 1;                     // payload_length
  bad_length[bad_length.size() - 4] = 2;  // the extension's length
  EXPECT_EQ(decode_error(bad_length), DecodeError::BadField);
}

}  // namespace
