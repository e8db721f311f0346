// Sealing on the wire (docs/PROTOCOL.md 7.11): the sealed FileChunk's 44 bytes, Sealed's
// layout and rules, the Open's seal extension, and that version 1 carries none of it.

#include <gtest/gtest.h>

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

}  // namespace
