// Fetching on the wire (docs/PROTOCOL.md 7.13): Fetch and Want, byte for byte as the document
// shows them, and every static rule of theirs that a decoder enforces.

#include <gtest/gtest.h>

#include <string>

#include "protocol/fetch_part.hpp"
#include "protocol/wire.hpp"
#include "wire_test_helpers.hpp"

namespace wire_fetch_test {

using namespace rdmax::proto;
using rdmax::test::wire::Bytes;
using rdmax::test::wire::decode_error;
using rdmax::test::wire::round_trip;

// The document's examples.
const Bytes kFetchExample = {0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x1f, 0x00, 0x11,
                             0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // header: type 31, 17 bytes
                             0x10, 0x27, 0x00, 0x00,                    // keepalive_ms 10000
                             0x02, 0x00, 0x00, 0x00,                    // shard_index 2
                             0x04, 0x00, 0x00, 0x00,                    // shard_count 4
                             0x05, 0x00, 0x01, 0x00, 0x01};  // the seal extension, suite 1
const Bytes kWantExample = {0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x20, 0x00, 0x0d,
                            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // header: type 32, 13 bytes
                            0x03, 0x00,  // flags: last, recursive; reserved
                            0x09, 0x00,  // path_len 9
                            0x64, 0x61, 0x74, 0x61, 0x2f, 0x73, 0x65, 0x74, 0x31};  // "data/set1"

// Part 1 of 3 of the whole (0x8008, -P 3's second connection), no keepalive.
const Bytes kFetchPartExample = {0x52, 0x4d, 0x41, 0x58, 0x02, 0x00, 0x1f, 0x00, 0x18,
                                 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // type 31, 24 bytes
                                 0x00, 0x00, 0x00, 0x00,                    // keepalive_ms 0
                                 0x00, 0x00, 0x00, 0x00,                    // shard_index 0
                                 0x01, 0x00, 0x00, 0x00,                    // shard_count 1
                                 0x08, 0x80, 0x08, 0x00,                    // 0x8008, 8 bytes
                                 0x01, 0x00, 0x00, 0x00,                    // index 1
                                 0x03, 0x00, 0x00, 0x00};                   // count 3

Fetch example_fetch() {
  return Fetch{10000, 2, 4, {HelloExtension{kExtensionSeal, std::string(1, '\x01')}}};
}

TEST(WireFetch, AFetchIsKeepalivesAShardAndExtensions) {
  EXPECT_EQ(encode(example_fetch(), kVersion2), kFetchExample);
  EXPECT_EQ(round_trip(example_fetch()), Message{example_fetch()});
  const Fetch plain{0, 0, 1, {}};
  EXPECT_EQ(encode(plain, kVersion2).size(), kHeaderSize + 12);
  EXPECT_EQ(round_trip(plain), Message{plain});
}

TEST(WireFetch, APartOfTheShareIsAnIndexBelowACount) {
  const Fetch part{0, 0, 1, {fetch_part_extension({1, 3})}};
  EXPECT_EQ(encode(part, kVersion2), kFetchPartExample);
  EXPECT_EQ(round_trip(part), Message{part});
  EXPECT_EQ(fetch_part_of(part), (FetchPart{1, 3}));
  EXPECT_EQ(fetch_part_of(Fetch{0, 0, 1, {}}), (FetchPart{0, 1})) << "none: the whole share";
  const auto with = [](std::size_t at, std::uint8_t byte) {
    Bytes b = kFetchPartExample;
    b[at] = byte;
    return decode_error(b);
  };
  EXPECT_EQ(with(32, 3), DecodeError::BadField);   // index 3 of 3
  EXPECT_EQ(with(36, 1), DecodeError::BadField);   // count 1
  EXPECT_EQ(with(36, 65), DecodeError::BadField);  // count 65
  EXPECT_TRUE(encode(Fetch{0, 0, 1, {fetch_part_extension({0, 1})}}, kVersion2).empty());
}

TEST(WireFetch, AWantIsFlagsAndOnePath) {
  EXPECT_EQ(encode(Want{true, true, "data/set1"}, kVersion2), kWantExample);
  const Want more{false, false, "."};
  EXPECT_EQ(round_trip(more), Message{more});
  const Want longest{true, false, std::string(kMaxPathBytes, 'p')};
  EXPECT_EQ(round_trip(longest), Message{longest});
  // A listed path (rdma-recv --files-from): flags bit 2.
  const Want listed{true, false, "data/set1", true};
  Bytes expected = kWantExample;
  expected[16] = 0x05;  // last, keep_path
  EXPECT_EQ(encode(listed, kVersion2), expected);
  EXPECT_EQ(round_trip(listed), Message{listed});
}

TEST(WireFetch, AFetchBreakingItsRulesDoesNotDecode) {
  const auto with = [](std::size_t at, std::uint8_t byte) {
    Bytes b = kFetchExample;
    b[at] = byte;
    return decode_error(b);
  };
  Bytes slow = kFetchExample;
  slow[16] = 50;  // keepalive_ms 50
  slow[17] = 0;
  EXPECT_EQ(decode_error(slow), DecodeError::BadField);
  EXPECT_EQ(with(20, 4), DecodeError::BadField);        // shard_index 4 of 4
  EXPECT_EQ(with(24, 0), DecodeError::BadField);        // shard_count 0
  EXPECT_EQ(with(32, 2), DecodeError::BadField);        // the seal extension's suite 2
  EXPECT_EQ(with(30, 2), DecodeError::LengthMismatch);  // its length 2: past the payload
  Bytes short_fetch(kFetchExample.begin(), kFetchExample.begin() + kHeaderSize + 11);
  short_fetch[8] = 11;
  EXPECT_EQ(decode_error(short_fetch), DecodeError::LengthMismatch);
  // The encoder refuses the same.
  EXPECT_TRUE(encode(Fetch{0, 1, 1, {}}, kVersion2).empty());
  EXPECT_TRUE(encode(Fetch{0, 0, kMaxShards + 1, {}}, kVersion2).empty());
  EXPECT_FALSE(encode(Fetch{0, kMaxShards - 1, kMaxShards, {}}, kVersion2).empty());
  EXPECT_TRUE(encode(Fetch{99, 0, 1, {}}, kVersion2).empty());
  EXPECT_TRUE(
      encode(Fetch{0, 0, 1, {HelloExtension{kExtensionSenderKey, std::string(32, 'n')}}}, kVersion2)
          .empty());  // a nonce without an id
}

TEST(WireFetch, AWantBreakingItsRulesDoesNotDecode) {
  const auto with = [](std::size_t at, std::uint8_t byte) {
    Bytes b = kWantExample;
    b[at] = byte;
    return decode_error(b);
  };
  EXPECT_EQ(with(16, 0x0b), DecodeError::BadReserved);     // flags bit 3
  EXPECT_EQ(with(16, 0x83), DecodeError::BadReserved);     // flags bit 7
  EXPECT_EQ(with(17, 0x01), DecodeError::BadReserved);     // the reserved byte
  EXPECT_EQ(with(18, 0x08), DecodeError::LengthMismatch);  // path_len 8, 9 bytes follow
  Bytes both = kWantExample;  // every length is checked before any reserved field
  both[17] = 0x01;
  both[18] = 0x08;
  EXPECT_EQ(decode_error(both), DecodeError::LengthMismatch);
  Bytes empty(kWantExample.begin(), kWantExample.begin() + kHeaderSize + 4);
  empty[8] = 4;
  empty[18] = 0;
  EXPECT_EQ(decode_error(empty), DecodeError::BadField);  // an empty path
  EXPECT_TRUE(encode(Want{true, false, ""}, kVersion2).empty());
  EXPECT_TRUE(encode(Want{true, false, std::string(kMaxPathBytes + 1, 'p')}, kVersion2).empty());
}

TEST(WireFetch, VersionOneCarriesNeitherAndNoTypeFollowsThem) {
  EXPECT_TRUE(encode(example_fetch(), kVersion1).empty());
  EXPECT_TRUE(encode(Want{true, true, "data/set1"}, kVersion1).empty());
  for (const Bytes& example : {kFetchExample, kWantExample}) {
    Bytes b = example;
    b[4] = 1;
    EXPECT_EQ(decode_error(b), DecodeError::BadType);
  }
  Bytes next = kWantExample;
  next[6] = 33;
  EXPECT_EQ(decode_error(next), DecodeError::BadType);
}

}  // namespace wire_fetch_test
