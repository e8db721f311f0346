#include "protocol/wire.hpp"
#include "wire_test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace rdmax::proto {
// Lets GoogleTest print enum names in failure messages.
void PrintTo(DecodeError e, std::ostream* os) {
  *os << to_string(e);
}
}  // namespace rdmax::proto

namespace {

using namespace rdmax::proto;
using rdmax::test::wire::Bytes;
using rdmax::test::wire::decode_error;

constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();

Digest sample_sha() {
  Digest sha{};
  for (std::size_t i = 0; i < sha.size(); ++i) sha[i] = static_cast<std::uint8_t>(i * 7 + 1);
  return sha;
}

// Every byte value, repeated: secrets and texts are opaque bytes, NUL and 0xff included.
std::string all_bytes(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i % 256);
  return s;
}

std::vector<Message> samples() {
  return {
      Hello{1234567890123, sample_sha(), 1 << 20, "report.pdf"},
      Hello{0, {}, 0, "x"},
      Hello{UINT64_MAX, sample_sha(), kU32Max, std::string(kMaxNameBytes, 'n')},
      Hello{42, sample_sha(), 0, "日本語.txt"},
      Hello{7, sample_sha(), 4096, "données.bin"},
      Accept{0x00007f0012340000, 0xdeadbeef, 1 << 20, 16},
      Accept{0, 0, kMinSlotSize, 1},
      Accept{UINT64_MAX - std::uint64_t{kMinSlotSize} * kMaxSlotCount, kU32Max, kMinSlotSize,
             kMaxSlotCount},
      Accept{1, 2, kU32Max, kMaxSlotCount},
      Chunk{0, 0, 0},
      Chunk{UINT64_MAX - 5, kU32Max, kU32Max},
      Credit{7, 0x1234},
      Credit{kU32Max, kU32Max},
      Done{0},
      Done{UINT64_MAX},
      Verdict{VerdictCode::Good, sample_sha()},
      Verdict{VerdictCode::HashMismatch, sample_sha()},
      Verdict{VerdictCode::StorageError, {}},
      Verdict{VerdictCode::SizeMismatch, {}},
      Id{"alice"},
      Id{std::string(kMaxIdBytes, 'i')},
      Secret{"s"},
      Secret{all_bytes(kMaxSecretBytes)},
      Denied{0},
      Denied{65535},
      Reject{RejectReason::BadName, ""},
      Reject{RejectReason::Exists, "file exists"},
      Reject{RejectReason::TooLarge, "too large"},
      Reject{RejectReason::NoSpace, "no space"},
      Reject{RejectReason::Busy, all_bytes(kMaxTextBytes)},
      Reject{RejectReason::UnsupportedVersion, "version 1 only"},
      Reject{RejectReason::Internal, "internal"},
      Reject{RejectReason::NoMemory, "no memory"},
      Bye{},
      Error{ErrorCode::ProtocolViolation, "Chunk before Accept"},
      Error{ErrorCode::Timeout, ""},
      Error{ErrorCode::Internal, "x"},
      Error{ErrorCode::TooManyAttempts, "bye"},
      Error{ErrorCode::ShuttingDown, all_bytes(kMaxTextBytes)},
  };
}

std::string describe(const Message& m, std::size_t index) {
  return std::string(to_string(type_of(m))) + " sample #" + std::to_string(index);
}

void put16(Bytes& b, std::size_t at, std::uint16_t v) {
  b[at] = static_cast<std::uint8_t>(v);
  b[at + 1] = static_cast<std::uint8_t>(v >> 8);
}

void put32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (std::size_t i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// A message built by hand: a correct header around an arbitrary payload.
Bytes frame(std::uint16_t type, const Bytes& payload) {
  Bytes b(kHeaderSize + payload.size(), 0);
  put32(b, 0, kMagic);
  put16(b, 4, kVersion1);
  put16(b, 6, type);
  put32(b, 8, static_cast<std::uint32_t>(payload.size()));
  std::copy(payload.begin(), payload.end(), b.begin() + kHeaderSize);
  return b;
}

Bytes encoded(const Message& m) {
  Bytes b = encode(m, kVersion1);
  EXPECT_FALSE(b.empty()) << to_string(type_of(m));
  return b;
}

TEST(Wire, EveryMessageRoundTrips) {
  const auto all = samples();
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(describe(all[i], i));
    const Bytes b = encoded(all[i]);
    EXPECT_EQ(b.size(), encoded_size(all[i], kVersion1));
    EXPECT_LE(b.size(), kMaxMessageSize);
    auto result = decode(b);
    ASSERT_TRUE(std::holds_alternative<Message>(result)) << std::get<DecodeFailure>(result).detail;
    EXPECT_EQ(std::get<Message>(result), all[i]);
  }
}

TEST(Wire, EveryTypeIsCoveredBySamples) {
  std::vector<bool> seen(13, false);
  for (const auto& m : samples()) seen[static_cast<std::size_t>(type_of(m))] = true;
  for (std::size_t t = 1; t <= 12; ++t) EXPECT_TRUE(seen[t]) << "type " << t;
}

TEST(Wire, HeaderLayoutIsLittleEndianRmax) {
  const Bytes b = encoded(Chunk{0x0102030405060708, 0x0A0B0C0D, 0x11121314});
  const Bytes expected = {
      'R',  'M',  'A',  'X',  1,    0,    3,    0,     // magic, version 1, type 3
      16,   0,    0,    0,    0,    0,    0,    0,     // payload_length 16, reserved
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // offset
      0x0D, 0x0C, 0x0B, 0x0A, 0x14, 0x13, 0x12, 0x11,  // length, slot
  };
  EXPECT_EQ(b, expected);
}

TEST(Wire, HelloLayoutMatchesTheDocument) {
  Digest sha{};
  sha[0] = 0xAA;
  sha[31] = 0xBB;
  const Bytes b = encoded(Hello{0x1122334455667788, sha, 0x00100000, "ab"});
  ASSERT_EQ(b.size(), kHeaderSize + 46 + 2);
  EXPECT_EQ(b[8], 48);     // payload_length = 46 + name_len
  EXPECT_EQ(b[16], 0x88);  // file_size, low byte first
  EXPECT_EQ(b[23], 0x11);
  EXPECT_EQ(b[24], 0xAA);  // sha256 at payload offset 8
  EXPECT_EQ(b[55], 0xBB);
  EXPECT_EQ(b[56 + 2], 0x10);  // chunk_size_hint at payload offset 40
  EXPECT_EQ(b[60], 2);         // name_len at payload offset 44
  EXPECT_EQ(b[61], 0);
  EXPECT_EQ(b[62], 'a');  // name at payload offset 46
  EXPECT_EQ(b[63], 'b');
}

TEST(Wire, AcceptLayoutMatchesTheDocument) {
  const Bytes b = encoded(Accept{0x0102030405060708, 0x11223344, 0x00010000, 3});
  ASSERT_EQ(b.size(), kHeaderSize + 24);
  EXPECT_EQ(b[16], 0x08);
  EXPECT_EQ(b[24], 0x44);                                            // region_rkey
  EXPECT_EQ(b[30], 0x01);                                            // slot_size 0x00010000
  EXPECT_EQ(b[32], 3);                                               // slot_count
  EXPECT_EQ((Bytes{b.begin() + 36, b.end()}), (Bytes{0, 0, 0, 0}));  // reserved
}

TEST(Wire, EncodeIntoReportsTooSmallBufferWithoutWriting) {
  const auto all = samples();
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(describe(all[i], i));
    const std::size_t size = encoded_size(all[i], kVersion1);
    Bytes buffer(size + 8, 0xEE);
    for (std::size_t n = 0; n < size; ++n) {
      EXPECT_EQ(encode_into(all[i], std::span(buffer).first(n), kVersion1), 0U) << n;
    }
    EXPECT_EQ(buffer, Bytes(size + 8, 0xEE));
    ASSERT_EQ(encode_into(all[i], buffer, kVersion1), size);
    EXPECT_EQ(buffer[size], 0xEE);  // nothing written past the message
    EXPECT_EQ(Bytes(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(size)),
              encode(all[i], kVersion1));
  }
}

TEST(Wire, EncoderRefusesWhatTheDecoderWouldReject) {
  std::array<std::uint8_t, kMaxMessageSize> buffer{};
  const std::vector<Message> invalid = {
      Hello{1, {}, 0, ""},
      Hello{1, {}, 0, std::string(kMaxNameBytes + 1, 'n')},
      Hello{1, {}, 0, std::string(70000, 'n')},  // would not even fit the u16 length
      Accept{0, 1, kMinSlotSize - 1, 1},
      Accept{0, 1, kMinSlotSize, 0},
      Accept{0, 1, kMinSlotSize, kMaxSlotCount + 1},
      Accept{UINT64_MAX - kMinSlotSize + 2, 1, kMinSlotSize, 1},
      Verdict{static_cast<VerdictCode>(4), {}},
      Id{""},
      Id{std::string(kMaxIdBytes + 1, 'i')},
      Secret{""},
      Secret{std::string(kMaxSecretBytes + 1, 's')},
      Reject{static_cast<RejectReason>(0), ""},
      Reject{static_cast<RejectReason>(9), ""},
      Reject{RejectReason::Busy, std::string(kMaxTextBytes + 1, 't')},
      Error{static_cast<ErrorCode>(0), ""},
      Error{static_cast<ErrorCode>(6), ""},
      Error{ErrorCode::Timeout, std::string(kMaxTextBytes + 1, 't')},
  };
  for (std::size_t i = 0; i < invalid.size(); ++i) {
    SCOPED_TRACE(describe(invalid[i], i));
    EXPECT_TRUE(encode(invalid[i], kVersion1).empty());
    EXPECT_EQ(encode_into(invalid[i], buffer, kVersion1), 0U);
  }
}

TEST(Wire, EveryTruncationIsRejected) {
  const auto all = samples();
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(describe(all[i], i));
    const Bytes b = encoded(all[i]);
    for (std::size_t n = 0; n < b.size(); ++n) {
      const Bytes prefix(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_EQ(decode_error(prefix),
                n < kHeaderSize ? DecodeError::Short : DecodeError::LengthMismatch)
          << "prefix of " << n << " bytes";
    }
  }
}

TEST(Wire, WrongMagicIsRejected) {
  const Bytes good = encoded(Bye{});
  for (std::size_t at = 0; at < 4; ++at) {
    Bytes b = good;
    b[at] ^= 0x20;  // e.g. "rMAX"
    EXPECT_EQ(decode_error(b), DecodeError::BadMagic) << at;
    EXPECT_EQ(peek_version(b), std::nullopt);
  }
  Bytes big_endian = good;
  put32(big_endian, 0, 0x524D4158);  // magic written in the wrong byte order
  EXPECT_EQ(decode_error(big_endian), DecodeError::BadMagic);
}

TEST(Wire, WrongVersionIsRejectedButPeekable) {
  const Bytes good = encoded(Hello{1, {}, 0, "f"});
  EXPECT_EQ(peek_version(good), kVersion1);
  for (std::uint16_t version : std::initializer_list<std::uint16_t>{0, 3, 0x0100, 0xFFFF}) {
    Bytes b = good;
    put16(b, 4, version);
    EXPECT_EQ(decode_error(b), DecodeError::BadVersion) << version;
    EXPECT_EQ(peek_version(b), version);
  }
  // Only magic and version are needed, whatever a future header looks like.
  Bytes six = {'R', 'M', 'A', 'X', 7, 0};
  EXPECT_EQ(peek_version(six), 7);
  six.pop_back();
  EXPECT_EQ(peek_version(six), std::nullopt);
  EXPECT_EQ(peek_version(Bytes{}), std::nullopt);
}

TEST(Wire, UnknownTypeIsRejected) {
  for (std::uint16_t type : std::initializer_list<std::uint16_t>{0, 13, 0x0100, 0xFFFF}) {
    EXPECT_EQ(decode_error(frame(type, {})), DecodeError::BadType) << type;
  }
}

TEST(Wire, NonzeroHeaderReservedIsRejected) {
  const Bytes good = encoded(Done{5});
  for (std::size_t at = 12; at < 16; ++at) {
    Bytes b = good;
    b[at] = 1;
    EXPECT_EQ(decode_error(b), DecodeError::BadReserved) << at;
  }
}

TEST(Wire, PayloadLengthThatLiesIsRejected) {
  const auto all = samples();
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(describe(all[i], i));
    const Bytes good = encoded(all[i]);
    const auto claimed = static_cast<std::uint32_t>(good.size() - kHeaderSize);

    Bytes too_big = good;
    put32(too_big, 8, claimed + 1);
    EXPECT_EQ(decode_error(too_big), DecodeError::LengthMismatch);

    if (claimed > 0) {
      Bytes too_small = good;
      put32(too_small, 8, claimed - 1);
      EXPECT_EQ(decode_error(too_small), DecodeError::LengthMismatch);
    }

    Bytes trailing = good;  // header is right about the payload, but more bytes arrived
    trailing.push_back(0);
    EXPECT_EQ(decode_error(trailing), DecodeError::LengthMismatch);

    // Consistent header and bytes, but one byte more than the message type allows.
    Bytes longer = trailing;
    put32(longer, 8, claimed + 1);
    EXPECT_EQ(decode_error(longer), DecodeError::LengthMismatch);
  }
}

TEST(Wire, OversizeIsRejected) {
  Bytes claims_huge = encoded(Bye{});
  put32(claims_huge, 8, kU32Max);  // must not overflow into a small total
  EXPECT_EQ(decode_error(claims_huge), DecodeError::TooLarge);

  Bytes claims_4097 = encoded(Bye{});
  put32(claims_4097, 8, static_cast<std::uint32_t>(kMaxMessageSize - kHeaderSize + 1));
  EXPECT_EQ(decode_error(claims_4097), DecodeError::TooLarge);

  const Bytes consistent_4097 = frame(10, Bytes(kMaxMessageSize - kHeaderSize + 1, 0));
  EXPECT_EQ(decode_error(consistent_4097), DecodeError::TooLarge);

  // Exactly kMaxMessageSize is not oversize; it fails on its content instead.
  const Bytes consistent_4096 = frame(11, Bytes(kMaxMessageSize - kHeaderSize, 0));
  EXPECT_EQ(decode_error(consistent_4096), DecodeError::LengthMismatch);
}

// Builds a counted-field payload: prefix bytes, u16 length, then content bytes.
Bytes counted(const Bytes& prefix, std::uint16_t len, std::size_t actual) {
  Bytes p = prefix;
  p.push_back(static_cast<std::uint8_t>(len));
  p.push_back(static_cast<std::uint8_t>(len >> 8));
  p.insert(p.end(), actual, 'a');
  return p;
}

struct CountedField {
  const char* name;
  std::uint16_t type;
  Bytes prefix;  // fixed fields before the u16 length (with valid values)
  std::size_t max;
  bool may_be_empty;
};

std::vector<CountedField> counted_fields() {
  return {
      {"Hello.name", 1, Bytes(44, 0), kMaxNameBytes, false},
      {"Id.id", 7, {}, kMaxIdBytes, false},
      {"Secret.secret", 8, {}, kMaxSecretBytes, false},
      {"Reject.text", 10, {5, 0}, kMaxTextBytes, true},
      {"Error.text", 12, {2, 0}, kMaxTextBytes, true},
  };
}

TEST(Wire, InnerLengthThatLiesIsRejected) {
  for (const auto& f : counted_fields()) {
    SCOPED_TRACE(f.name);
    EXPECT_EQ(decode_error(frame(f.type, counted(f.prefix, 3, 3))), std::nullopt);
    EXPECT_EQ(decode_error(frame(f.type, counted(f.prefix, 4, 3))), DecodeError::LengthMismatch);
    EXPECT_EQ(decode_error(frame(f.type, counted(f.prefix, 2, 3))), DecodeError::LengthMismatch);
    EXPECT_EQ(decode_error(frame(f.type, counted(f.prefix, 0xFFFF, 3))),
              DecodeError::LengthMismatch);
    // The payload is too short to even hold the length field.
    EXPECT_EQ(decode_error(frame(f.type, f.prefix)), DecodeError::LengthMismatch);
  }
}

TEST(Wire, InnerLengthAboveItsMaximumIsRejected) {
  for (const auto& f : counted_fields()) {
    SCOPED_TRACE(f.name);
    const auto max = static_cast<std::uint16_t>(f.max);
    EXPECT_EQ(decode_error(frame(f.type, counted(f.prefix, max, f.max))), std::nullopt);
    const auto over = static_cast<std::uint16_t>(f.max + 1);
    EXPECT_EQ(decode_error(frame(f.type, counted(f.prefix, over, f.max + 1))),
              DecodeError::BadField);
  }
}

TEST(Wire, ZeroLengthFieldsAreRejectedWhereRequired) {
  for (const auto& f : counted_fields()) {
    SCOPED_TRACE(f.name);
    const auto result = decode_error(frame(f.type, counted(f.prefix, 0, 0)));
    if (f.may_be_empty) {
      EXPECT_EQ(result, std::nullopt);
    } else {
      EXPECT_EQ(result, DecodeError::BadField);
    }
  }
}

TEST(Wire, UnknownEnumCodesAreRejected) {
  for (std::uint8_t code : std::initializer_list<std::uint8_t>{4, 0x80, 0xFF}) {
    Bytes payload(1 + kSha256Bytes, 0);
    payload[0] = code;
    EXPECT_EQ(decode_error(frame(6, payload)), DecodeError::BadField) << int{code};
  }
  for (std::uint16_t reason : std::initializer_list<std::uint16_t>{0, 9, 0xFFFF}) {
    Bytes payload = counted({0, 0}, 0, 0);
    put16(payload, 0, reason);
    EXPECT_EQ(decode_error(frame(10, payload)), DecodeError::BadField) << reason;
  }
  for (std::uint16_t code : std::initializer_list<std::uint16_t>{0, 6, 0xFFFF}) {
    Bytes payload = counted({0, 0}, 0, 0);
    put16(payload, 0, code);
    EXPECT_EQ(decode_error(frame(12, payload)), DecodeError::BadField) << code;
  }
}

TEST(Wire, AcceptFieldRulesAreEnforced) {
  auto accept = [](std::uint64_t addr, std::uint32_t slot_size, std::uint32_t slot_count,
                   std::uint32_t reserved = 0) {
    Bytes p(24, 0);
    for (std::size_t i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(addr >> (8 * i));
    put32(p, 12, slot_size);
    put32(p, 16, slot_count);
    put32(p, 20, reserved);
    return frame(2, p);
  };
  EXPECT_EQ(decode_error(accept(0x1000, 4096, 1)), std::nullopt);
  EXPECT_EQ(decode_error(accept(0x1000, 4095, 1)), DecodeError::BadField);
  EXPECT_EQ(decode_error(accept(0x1000, 0, 1)), DecodeError::BadField);
  EXPECT_EQ(decode_error(accept(0x1000, 4096, 0)), DecodeError::BadField);
  EXPECT_EQ(decode_error(accept(0x1000, 4096, 64)), std::nullopt);
  EXPECT_EQ(decode_error(accept(0x1000, 4096, 65)), DecodeError::BadField);
  // region_addr + region length must itself be a representable address.
  EXPECT_EQ(decode_error(accept(UINT64_MAX - 4096, 4096, 1)), std::nullopt);
  EXPECT_EQ(decode_error(accept(UINT64_MAX - 4095, 4096, 1)), DecodeError::BadField);
  EXPECT_EQ(decode_error(accept(UINT64_MAX, kU32Max, 64)), DecodeError::BadField);
  EXPECT_EQ(decode_error(accept(0x1000, 4096, 1, 1)), DecodeError::BadReserved);
}

TEST(Wire, FailuresCarryADetail) {
  auto result = decode(frame(13, {}));
  ASSERT_TRUE(std::holds_alternative<DecodeFailure>(result));
  EXPECT_FALSE(std::get<DecodeFailure>(result).detail.empty());
}

// The names come from the enums themselves (protocol/enum_names.hpp): every wire code has
// one, none is used twice, and a code this build does not know prints as "?".
TEST(Wire, EveryCodeHasADistinctName) {
  const auto expect_distinct = [](const auto& values, std::size_t count) {
    std::set<std::string> names;
    for (auto v : values) {
      const std::string name = to_string(v);
      EXPECT_NE(name, "?");
      EXPECT_TRUE(names.insert(name).second) << name;
    }
    EXPECT_EQ(names.size(), count);
  };
  expect_distinct(enum_values<MessageType>(), 32U);
  expect_distinct(enum_values<RejectReason>(), 11U);
  expect_distinct(enum_values<ErrorCode>(), 7U);
  expect_distinct(enum_values<VerdictCode>(), 6U);
  expect_distinct(enum_values<DecodeError>(), 9U);  // NotSealed: SealedTransport's
  EXPECT_STREQ(to_string(MessageType::FileChunk), "FileChunk");
  EXPECT_STREQ(to_string(static_cast<MessageType>(99)), "?");
  EXPECT_STREQ(to_string(static_cast<MessageType>(0)), "?");
  // Words for people where the enumerator is not one (--digest, the report).
  EXPECT_STREQ(to_string(DigestAlgorithm::FsVeritySha256), "fsverity-sha256");
  EXPECT_STREQ(to_string(EntryKind::Directory), "directory");
}

}  // namespace
