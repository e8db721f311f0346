// Version 2 of the wire format (docs/PROTOCOL.md section 7): the Hello's new layout, the
// Working message, and the rules that keep version 1 exactly as it was.

#include <gtest/gtest.h>

#include "protocol/wire.hpp"
#include "wire_test_helpers.hpp"

namespace {

using namespace rdmax::proto;
using rdmax::test::wire::Bytes;
using rdmax::test::wire::decode_error;

Hello example_hello() {
  Hello h;
  h.file_size = 1 << 20;
  for (std::size_t i = 0; i < h.digest.size(); ++i)
    h.digest[i] = static_cast<std::uint8_t>(0xa0 + i);
  h.name = "a.bin";
  h.keepalive_ms = 10000;
  return h;
}

// The worked example of docs/PROTOCOL.md 7.2, byte for byte.
TEST(WireV2, HelloLayoutMatchesTheDocument) {
  const Bytes b = encode(example_hello(), kVersion2);
  Bytes expected = {
      0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x01, 0x00,  // RMAX, version 2, type 1
      0x3b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // payload 59, reserved
      0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,  // file_size 1048576
      0x01, 0x00, 0x00, 0x00,                          // digest_algorithm 1, reserved
  };
  for (int i = 0; i < 32; ++i) expected.push_back(static_cast<std::uint8_t>(0xa0 + i));
  const Bytes tail = {
      0x00, 0x00, 0x00, 0x00,  // chunk_size_hint 0
      0x10, 0x27, 0x00, 0x00,  // keepalive_ms 10000
      0x05, 0x00,              // name_len 5
      'a',  '.',  'b',  'i',  'n',
  };
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(b, expected);
  EXPECT_EQ(b.size(), encoded_size(example_hello(), kVersion2));
  auto back = decode(b);
  ASSERT_TRUE(std::holds_alternative<Message>(back));
  EXPECT_EQ(std::get<Message>(back), Message{example_hello()});
  EXPECT_EQ(peek_version(b), kVersion2);
}

TEST(WireV2, WorkingLayoutAndRoundTrip) {
  const Bytes b = encode(Working{WorkPhase::Committing, 0x0102030405060708}, kVersion2);
  const Bytes expected = {0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x0d, 0x00, 0x09,
                          0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x08,
                          0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
  EXPECT_EQ(b, expected);
  auto back = decode(b);
  ASSERT_TRUE(std::holds_alternative<Message>(back));
  EXPECT_EQ(std::get<Message>(back), Message{(Working{WorkPhase::Committing, 0x0102030405060708})});
}

TEST(WireV2, Version1CannotExpressVersion2Things) {
  EXPECT_TRUE(encode(Working{WorkPhase::Storing, 1}, kVersion1).empty());
  EXPECT_TRUE(encode(example_hello(), kVersion1).empty());  // keepalive_ms != 0
  Hello plain = example_hello();
  plain.keepalive_ms = 0;
  EXPECT_EQ(encode(plain, kVersion1).size(), kHeaderSize + 46 + 5);  // the version-1 layout
  // Type 13 does not exist in version 1.
  Bytes b = encode(Working{WorkPhase::Storing, 1}, kVersion2);
  b[4] = 1;
  EXPECT_EQ(decode_error(b), DecodeError::BadType);
}

TEST(WireV2, OtherMessagesKeepTheirPayloadInVersion2) {
  const std::vector<Message> samples{Accept{0x1000, 0, 4096, 2},
                                     Chunk{0, 4096, 1},
                                     Credit{1, 2},
                                     Done{7},
                                     Verdict{},
                                     Id{"x"},
                                     Secret{"y"},
                                     Denied{2},
                                     Reject{RejectReason::Exists, "e"},
                                     Bye{},
                                     Error{ErrorCode::Timeout, "t"}};
  for (const auto& m : samples) {
    const Bytes v1 = encode(m, kVersion1);
    const Bytes v2 = encode(m, kVersion2);
    ASSERT_FALSE(v1.empty());
    ASSERT_EQ(v1.size(), v2.size());
    EXPECT_EQ(v2[4], 2);
    EXPECT_TRUE(std::equal(v1.begin() + 6, v1.end(), v2.begin() + 6)) << to_string(type_of(m));
  }
}

TEST(WireV2, TheFsVerityDigestIsAlgorithmTwoAndVersion1CannotCarryIt) {
  Hello h = example_hello();
  h.digest_algorithm = DigestAlgorithm::FsVeritySha256;
  Bytes b = encode(h, kVersion2);
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b[16 + 8], 2);
  auto back = decode(b);
  ASSERT_TRUE(std::holds_alternative<Message>(back));
  EXPECT_EQ(std::get<Message>(back), Message{h});
  h.keepalive_ms = 0;
  EXPECT_TRUE(encode(h, kVersion1).empty());
  EXPECT_STREQ(to_string(DigestAlgorithm::FsVeritySha256), "fsverity-sha256");
}

TEST(WireV2, HelloExtensionsFollowTheNameAndRoundTrip) {
  Hello h = example_hello();
  h.extensions = {{0x0003, "ab"}, {0x8002, ""}};
  const Bytes b = encode(h, kVersion2);
  ASSERT_EQ(b.size(), kHeaderSize + 54 + 5 + (4 + 2) + 4);
  const std::size_t at = kHeaderSize + 54 + 5;  // after the name
  EXPECT_EQ(b[at], 0x03);
  EXPECT_EQ(b[at + 1], 0x00);
  EXPECT_EQ(b[at + 2], 2);  // length
  EXPECT_EQ(b[at + 4], 'a');
  EXPECT_EQ(b[at + 6], 0x02);
  EXPECT_EQ(b[at + 7], 0x80);
  auto back = decode(b);
  ASSERT_TRUE(std::holds_alternative<Message>(back));
  EXPECT_EQ(std::get<Message>(back), Message{h});
  // Version 1 has no room for them.
  h.keepalive_ms = 0;
  EXPECT_TRUE(encode(h, kVersion1).empty());
  // Too large for one message: not encoded.
  h.extensions = {{1, std::string(4100, 'x')}};
  EXPECT_TRUE(encode(h, kVersion2).empty());
}

TEST(WireV2, MalformedHelloExtensionsAreLengthMismatches) {
  Hello h = example_hello();
  h.extensions = {{0x0003, "abc"}};
  const Bytes good = encode(h, kVersion2);
  auto with_payload = [](Bytes b, std::size_t payload) {
    b.resize(kHeaderSize + payload);
    b[8] = static_cast<std::uint8_t>(payload);
    b[9] = static_cast<std::uint8_t>(payload >> 8);
    return b;
  };
  const std::size_t full = good.size() - kHeaderSize;
  // Two bytes of an extension header, then the end.
  EXPECT_EQ(decode_error(with_payload(good, 54 + 5 + 2)), DecodeError::LengthMismatch);
  // A length that runs past the payload.
  EXPECT_EQ(decode_error(with_payload(good, full - 1)), DecodeError::LengthMismatch);
  // A name_len past the payload.
  Bytes name = good;
  name[kHeaderSize + 52] = 200;
  EXPECT_EQ(decode_error(name), DecodeError::LengthMismatch);
}

// Resume (docs/PROTOCOL.md 7.6): the extension that asks for it, Open's extensions, and
// the two messages, byte for byte as the document's examples.
TEST(WireV2, ResumeExtensionIsEmptyInAHelloAndAnOpen) {
  Hello h = example_hello();
  h.extensions = {{kExtensionResume, {}}};
  Bytes b = encode(h, kVersion2);
  ASSERT_EQ(b.size(), kHeaderSize + 54 + 5 + 4);
  EXPECT_EQ(Bytes(b.end() - 4, b.end()), (Bytes{0x01, 0x00, 0x00, 0x00}));
  ASSERT_TRUE(std::holds_alternative<Message>(decode(b)));
  h.extensions = {{kExtensionResume, "x"}};  // the extension carries no value
  EXPECT_TRUE(encode(h, kVersion2).empty());

  Open o{DigestAlgorithm::FsVeritySha256, 10000, 0, 3, 1048576, {{kExtensionResume, {}}}};
  b = encode(o, kVersion2);
  ASSERT_EQ(b.size(), kHeaderSize + 24 + 4);
  EXPECT_EQ(b[8], 28);  // payload length
  EXPECT_EQ(Bytes(b.end() - 4, b.end()), (Bytes{0x01, 0x00, 0x00, 0x00}));
  auto back = decode(b);
  ASSERT_TRUE(std::holds_alternative<Message>(back));
  EXPECT_EQ(std::get<Message>(back), Message{o});
  // An extension header cut short, and a value with the resume extension.
  Bytes cut = b;
  cut.resize(b.size() - 2);
  cut[8] = 26;
  EXPECT_EQ(decode_error(cut), DecodeError::LengthMismatch);
  Bytes valued = b;
  valued[kHeaderSize + 24 + 2] = 1;  // length 1...
  valued.push_back('x');             // ...and its byte
  valued[8] = 29;
  EXPECT_EQ(decode_error(valued), DecodeError::BadField);
}

TEST(WireV2, ResumeAndHaveLayouts) {
  const Bytes resume = encode(Resume{7, 0x300000}, kVersion2);
  EXPECT_EQ(resume, (Bytes{0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x15, 0x00, 0x0c, 0x00,
                           0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
                           0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00}));
  Have have{7, {}};
  for (std::size_t i = 0; i < have.digest.size(); ++i)
    have.digest[i] = static_cast<std::uint8_t>(0xa0 + i);
  const Bytes h = encode(have, kVersion2);
  ASSERT_EQ(h.size(), kHeaderSize + 36);
  EXPECT_EQ(h[6], 22);  // type
  EXPECT_EQ(h[kHeaderSize], 7);
  EXPECT_EQ(h[kHeaderSize + 4], 0xa0);
  for (const Message& m : {Message{Resume{7, 0x300000}}, Message{have}}) {
    auto back = decode(encode(m, kVersion2));
    ASSERT_TRUE(std::holds_alternative<Message>(back));
    EXPECT_EQ(std::get<Message>(back), m);
    EXPECT_TRUE(encode(m, kVersion1).empty());  // version 2 only
  }
  Bytes short_resume = resume;
  short_resume.pop_back();
  short_resume[8] = 11;
  EXPECT_EQ(decode_error(short_resume), DecodeError::LengthMismatch);
}

TEST(WireV2, StaticRulesOfTheNewFields) {
  Bytes b = encode(example_hello(), kVersion2);
  Bytes reserved = b;
  reserved[16 + 10] = 1;  // a reserved byte after digest_algorithm
  EXPECT_EQ(decode_error(reserved), DecodeError::BadReserved);
  for (int unknown : {0, 3, 9, 255}) {
    Bytes algorithm = b;
    algorithm[16 + 8] = static_cast<std::uint8_t>(unknown);
    EXPECT_EQ(decode_error(algorithm), DecodeError::BadField) << unknown;
  }
  Bytes keepalive = b;
  keepalive[16 + 48] = 50;  // 50 ms: below the 100 ms minimum
  keepalive[16 + 49] = 0;
  EXPECT_EQ(decode_error(keepalive), DecodeError::BadField);
  Bytes phase = encode(Working{WorkPhase::Storing, 1}, kVersion2);
  phase[16] = 0;
  EXPECT_EQ(decode_error(phase), DecodeError::BadField);
  Bytes truncated = encode(Working{WorkPhase::Storing, 1}, kVersion2);
  truncated.pop_back();
  truncated[8] = 8;
  EXPECT_EQ(decode_error(truncated), DecodeError::LengthMismatch);
}

}  // namespace
