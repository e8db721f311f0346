// Sealing (docs/PROTOCOL.md 7.11): the key schedule and the sealed chunk and message of the
// document's worked example, computed here by the code and there independently (Python's
// hmac and the cryptography package's AESGCM): the two must agree byte for byte. Then what
// sealing is for: a message altered, replayed, reordered, dropped or sent the other way does
// not open, and neither does a chunk moved to another entry, offset or length.

#include <gtest/gtest.h>

#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "common/crypto/auth_proof.hpp"
#include "common/crypto/seal.hpp"
#include "protocol/auth.hpp"
#include "protocol/seal.hpp"
#include "protocol/wire.hpp"

namespace {

using namespace rdmax;
using namespace rdmax::proto;
using Bytes = std::vector<std::uint8_t>;

Bytes hex(std::string_view text) {
  Bytes out;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2)
    out.push_back(
        static_cast<std::uint8_t>(std::stoi(std::string(text.substr(i, 2)), nullptr, 16)));
  return out;
}
template <class A>
Bytes bytes_of(const A& a) {
  return Bytes(a.begin(), a.end());
}

// The example of 7.8: alice's key 00 01 ... 1f, her Open and the receiver's Challenge.
std::string example_key() {
  std::string key;
  for (int i = 0; i < 32; ++i) key.push_back(static_cast<char>(i));
  return key;
}
Digest example_transcript() {
  Open open{DigestAlgorithm::FsVeritySha256, 10000, 0, 1, 4096};
  open.extensions.push_back({kExtensionResume, {}});
  Nonce sender{}, receiver{};
  for (std::size_t i = 0; i < 32; ++i) {
    sender[i] = static_cast<std::uint8_t>(0xa0 + i);
    receiver[i] = static_cast<std::uint8_t>(0xc0 + i);
  }
  open.extensions.push_back(sender_key_extension(sender, "alice"));
  return transcript_hash(open, Challenge{receiver});
}

TEST(Seal, TheExampleTranscriptIsSevenEightsOne) {
  EXPECT_EQ(bytes_of(example_transcript()),
            hex("1a18c48394165d514913f25877b3dbc841984ebfd5545909cfd6e161b0718b11"));
}

// RFC 5869, test case 1: the first 32 bytes of its OKM are T(1), all a seal key takes.
TEST(Seal, HkdfIsRfc5869) {
  const Bytes ikm(22, 0x0b);
  const Bytes salt = hex("000102030405060708090a0b0c");
  const Bytes info = hex("f0f1f2f3f4f5f6f7f8f9");
  EXPECT_EQ(bytes_of(hkdf_sha256(salt, ikm, info)),
            hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"));
}

TEST(Seal, TheExampleKeys) {
  const SealKeys keys = derive_seal_keys(example_key(), example_transcript());
  EXPECT_EQ(bytes_of(keys.messages_to_receiver),
            hex("a29dbca8a4b2f10f5b5fd4dbb4653efa56acad067e70e15bec2586d72ba15225"));
  EXPECT_EQ(bytes_of(keys.messages_to_sender),
            hex("fbfc71936a9e9b9000a2863c2c186fc324ed4b48372c445b1068cd9f5bf69445"));
  EXPECT_EQ(bytes_of(keys.chunks),
            hex("077d329f83b14324f8ad4290f8e90fafad551ed8779262ef47ab7f70b87dbec5"));
}

TEST(Seal, TheExampleChunk) {
  const SealKeys keys = derive_seal_keys(example_key(), example_transcript());
  const std::string text = "rdmax: the bytes of a file.....\n";
  Bytes data(text.begin(), text.end());
  const ChunkAad aad = chunk_aad(0, 0, 32);
  EXPECT_EQ(bytes_of(aad), hex("00000000000000000000000020000000"));
  const SealTag tag = seal_in_place(keys.chunks, 0, aad, data);
  EXPECT_EQ(data, hex("cac89cef29c2fdfcfb3a093a986fcb7c5436d610804ebb8c0c93abfaf6195c7a"));
  EXPECT_EQ(bytes_of(tag), hex("2847fd7350bb9e89ae4175b0caf0d93c"));
  ASSERT_TRUE(open_in_place(keys.chunks, 0, aad, data, tag));
  EXPECT_EQ(data, Bytes(text.begin(), text.end()));
}

TEST(Seal, TheExampleMessage) {
  const SealKeys keys = derive_seal_keys(example_key(), example_transcript());
  MessageSeal receiver(keys.messages_to_sender, keys.messages_to_receiver);
  const Accept accept{0x00007f0012340000, 0, 1 << 20, 16};  // region_rkey 0, as 3.2 says
  const Bytes wire = encode(receiver.seal(accept), kVersion2);
  EXPECT_EQ(wire, hex("524d415802001c003a000000000000003800e297cef863aa4b19894fe389ae6c7bd60eb5c"
                      "9079ecd381f60b63a350936a1d1296f97e38f534bd96158da2ed0916c97101d42d3510ef0"
                      "73"));
  MessageSeal sender(keys.messages_to_receiver, keys.messages_to_sender);
  const auto decoded = decode(wire);
  ASSERT_TRUE(std::holds_alternative<Message>(decoded));
  const auto opened = sender.open(std::get<Sealed>(std::get<Message>(decoded)));
  ASSERT_TRUE(std::holds_alternative<Message>(opened));
  EXPECT_EQ(std::get<Message>(opened), Message{accept});
}

// SECURITY.md: a peer holds nothing of a connection after it ends, so a key wipes its bytes
// when the object ends. The key lives in an unsigned char array that provides its storage
// ([intro.object]); the array outlives the key, and reading its elements afterwards through
// a volatile glvalue makes the compiler load what memory holds, not what it may assume of an
// object whose lifetime ended: the bytes the destructor left there.
TEST(SealKey, WipesItsBytesWhenTheObjectEnds) {
  alignas(SealKey) unsigned char storage[sizeof(SealKey)];
  SealKey::Bytes bytes{};
  bytes.fill(0xa5);
  SealKey* key = new (storage) SealKey(bytes);
  ASSERT_EQ(key->data()[0], 0xa5);
  key->~SealKey();
  const volatile unsigned char* left = storage;
  for (std::size_t i = 0; i < sizeof storage; ++i) EXPECT_EQ(left[i], 0) << "byte " << i;
}

// 7.11: the receiver takes each chunk counter once, in any order, whatever gaps a sender
// leaves for good (a read that failed), in memory bounded by the gaps, not the chunks.
TEST(ChunkCounters, EachOnceInAnyOrderWithGaps) {
  ChunkCounters counters;
  for (std::uint64_t c : {0u, 2u, 1u, 5u, 4u}) EXPECT_TRUE(counters.take(c)) << c;
  for (std::uint64_t c : {0u, 1u, 2u, 4u, 5u}) EXPECT_FALSE(counters.take(c)) << c;
  EXPECT_EQ(counters.runs(), 2u);  // 0..2 and 4..5: 3 never came
  for (std::uint64_t c = 6; c < 300000; ++c) ASSERT_TRUE(counters.take(c)) << c;
  EXPECT_EQ(counters.runs(), 2u);
  EXPECT_TRUE(counters.take(3));  // late, but new
  EXPECT_EQ(counters.runs(), 1u);
  EXPECT_FALSE(counters.take(299999));
  EXPECT_TRUE(counters.take(UINT64_MAX));
  EXPECT_FALSE(counters.take(UINT64_MAX));
  // A sender that leaves a gap after every counter is refused at the bound.
  ChunkCounters sparse;
  for (std::uint64_t c = 0; c < 2 * ChunkCounters::kMaxRuns; c += 2) ASSERT_TRUE(sparse.take(c));
  EXPECT_FALSE(sparse.take(2 * ChunkCounters::kMaxRuns + 10));
  EXPECT_TRUE(sparse.take(1));  // it closes a gap: no new run
}

// Every holder of a connection's keys holds them as SealKey, which wipes itself.
static_assert(!std::is_trivially_destructible_v<SealKey>);
static_assert(!std::is_trivially_destructible_v<SealKeys>);
static_assert(!std::is_trivially_destructible_v<MessageSeal>);

// A pair of seals as two ends of one connection hold them.
struct Ends {
  SealKeys keys = derive_seal_keys(example_key(), example_transcript());
  MessageSeal sender{keys.messages_to_receiver, keys.messages_to_sender};
  MessageSeal receiver{keys.messages_to_sender, keys.messages_to_receiver};
};

bool opens(MessageSeal& seal, const Sealed& sealed) {
  return std::holds_alternative<Message>(seal.open(sealed));
}

TEST(Seal, MessagesOpenInOrderEachWay) {
  Ends ends;
  for (std::uint32_t i = 0; i < 3; ++i) {
    const auto offer = ends.sender.seal(Take{i});  // any message: the seal does not judge
    const auto opened = ends.receiver.open(offer);
    ASSERT_TRUE(std::holds_alternative<Message>(opened)) << i;
    EXPECT_EQ(std::get<Message>(opened), Message{Take{i}});
    EXPECT_TRUE(opens(ends.sender, ends.receiver.seal(Credit{i, 7})));
  }
}

TEST(Seal, AnAlteredMessageDoesNotOpen) {
  Ends ends;
  const Sealed sealed = ends.sender.seal(Offer{0, EntryKind::File, 0644, 1, 0, 0, {}, "a"});
  for (std::size_t at : {std::size_t{0}, sealed.box.size() / 2, sealed.box.size() - 1}) {
    Ends fresh;
    Sealed altered = fresh.sender.seal(Offer{0, EntryKind::File, 0644, 1, 0, 0, {}, "a"});
    altered.box[at] = static_cast<char>(altered.box[at] ^ 1);
    const auto opened = fresh.receiver.open(altered);
    ASSERT_TRUE(std::holds_alternative<DecodeFailure>(opened)) << at;
    EXPECT_EQ(std::get<DecodeFailure>(opened).error, DecodeError::BadField);
  }
}

TEST(Seal, AReplayedMessageDoesNotOpen) {
  Ends ends;
  const Sealed first = ends.sender.seal(Take{1});
  ASSERT_TRUE(opens(ends.receiver, first));
  EXPECT_FALSE(opens(ends.receiver, first));
}

TEST(Seal, ReorderedOrDroppedMessagesDoNotOpen) {
  Ends ends;
  const Sealed first = ends.sender.seal(Take{1});
  const Sealed second = ends.sender.seal(Take{2});
  EXPECT_FALSE(opens(ends.receiver, second));  // the first was dropped, or comes later
  EXPECT_TRUE(opens(ends.receiver, first));    // a failure counts nothing
  EXPECT_TRUE(opens(ends.receiver, second));
}

TEST(Seal, AMessageSentBackDoesNotOpen) {
  Ends ends;
  const Sealed sealed = ends.sender.seal(Take{1});
  EXPECT_FALSE(opens(ends.sender, sealed));  // reflected to its sender
}

TEST(Seal, AnotherConnectionsKeysDoNotOpen) {
  Ends ends;
  Digest other = example_transcript();
  other[0] ^= 1;
  const SealKeys keys = derive_seal_keys(example_key(), other);
  MessageSeal stranger(keys.messages_to_sender, keys.messages_to_receiver);
  EXPECT_FALSE(opens(stranger, ends.sender.seal(Take{1})));
}

TEST(Seal, ASealedOrInvalidMessageIsNotSealed) {
  Ends ends;
  EXPECT_THROW((void)ends.sender.seal(Sealed{std::string(40, 'x')}), std::invalid_argument);
  EXPECT_THROW((void)ends.sender.seal(Id{""}), std::invalid_argument);  // does not encode
  EXPECT_TRUE(opens(ends.receiver, ends.sender.seal(Take{1})));         // and nothing was counted
}

TEST(Seal, AChunkMovedOrCutDoesNotOpen) {
  const SealKeys keys = derive_seal_keys(example_key(), example_transcript());
  const Bytes plain(4096, 0x5a);
  Bytes data = plain;
  const SealTag tag = seal_in_place(keys.chunks, 9, chunk_aad(3, 8192, 4096), data);
  const Bytes sealed = data;
  const auto opens_as = [&](std::uint64_t counter, const ChunkAad& aad, const SealKey& key) {
    Bytes copy = sealed;
    return open_in_place(key, counter, aad, copy, tag);
  };
  EXPECT_TRUE(opens_as(9, chunk_aad(3, 8192, 4096), keys.chunks));
  EXPECT_FALSE(opens_as(9, chunk_aad(4, 8192, 4096), keys.chunks));  // another entry
  EXPECT_FALSE(opens_as(9, chunk_aad(3, 0, 4096), keys.chunks));     // another offset
  EXPECT_FALSE(opens_as(9, chunk_aad(3, 8192, 4095), keys.chunks));  // another length
  EXPECT_FALSE(opens_as(8, chunk_aad(3, 8192, 4096), keys.chunks));  // another nonce
  EXPECT_FALSE(opens_as(9, chunk_aad(3, 8192, 4096), keys.messages_to_receiver));
  Bytes overwritten = sealed;  // a peer that holds the slot's rkey writes one byte
  overwritten[100] ^= 0xff;
  EXPECT_FALSE(open_in_place(keys.chunks, 9, chunk_aad(3, 8192, 4096), overwritten, tag));
}

}  // namespace
