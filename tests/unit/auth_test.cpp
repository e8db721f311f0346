// Sender keys (docs/PROTOCOL.md 7.8): the Challenge and Proof layouts, the Open's key
// extension, and the proofs of the document's worked example, computed here by the code
// and there independently (Python's hmac and hashlib): the two must agree byte for byte.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/crypto/auth_proof.hpp"
#include "common/digest/sha256.hpp"
#include "protocol/auth.hpp"
#include "protocol/seal.hpp"
#include "protocol/wire.hpp"

namespace {

using namespace rdmax;
using namespace rdmax::proto;
using Bytes = std::vector<std::uint8_t>;

template <std::size_t N>
std::array<std::uint8_t, N> counting_from(std::uint8_t first) {
  std::array<std::uint8_t, N> a{};
  for (std::size_t i = 0; i < N; ++i) a[i] = static_cast<std::uint8_t>(first + i);
  return a;
}

std::string example_key() {
  std::string key;
  for (int i = 0; i < 32; ++i) key.push_back(static_cast<char>(i));
  return key;
}

// The worked example's Open: one file of 4096 bytes, Resume understood, a key for "alice".
Open example_open() {
  Open open{DigestAlgorithm::FsVeritySha256, 10000, 0, 1, 4096};
  open.extensions.push_back({kExtensionResume, {}});
  open.extensions.push_back(sender_key_extension(counting_from<32>(0xa0), "alice"));
  return open;
}

Challenge example_challenge() {
  return Challenge{counting_from<32>(0xc0)};
}

TEST(Auth, TheWorkedExampleOfTheDocument) {
  EXPECT_EQ(to_hex(encode(example_open(), kVersion2)),
            "524d415802000e0045000000000000000200000010270000000000000100000000100000000000000"
            "100000002002500a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf616c"
            "696365");
  EXPECT_EQ(to_hex(encode(example_challenge(), kVersion2)),
            "524d4158020017002000000000000000c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8"
            "d9dadbdcdddedf");
  const Digest sender =
      auth_proof(ProofRole::Sender, example_key(), example_open(), example_challenge());
  const Digest receiver =
      auth_proof(ProofRole::Receiver, example_key(), example_open(), example_challenge());
  EXPECT_EQ(to_hex(sender), "171d6c19685b1ee17b89d8cbb0d3b630df85b2413232a226c9303e880e8878a8");
  EXPECT_EQ(to_hex(receiver), "0221adf05e729f9bb72c49c2a18d600cd8facc2633e843c8be244238bcaeaecf");
  EXPECT_EQ(to_hex(encode(Proof{sender}, kVersion2)),
            "524d4158020018002000000000000000171d6c19685b1ee17b89d8cbb0d3b630df85b2413232a226c9"
            "303e880e8878a8");
}

// A fetch's proofs (7.13): the same formulas over its Fetch, in the Open's place. The values
// are 7.13's worked example, computed there with Python's hmac and hashlib.
TEST(Auth, TheWorkedExampleOfAFetch) {
  Fetch fetch{10000, 0, 1, {}};
  fetch.extensions.push_back(sender_key_extension(counting_from<32>(0xa0), "alice"));
  fetch.extensions.push_back({kExtensionSeal, std::string(1, '\x01')});
  EXPECT_EQ(to_hex(encode(fetch, kVersion2)),
            "524d415802001f003a0000000000000010270000000000000100000002002500a0a1a2a3a4a5a6a7a8"
            "a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf616c6963650500010001");
  EXPECT_EQ(to_hex(transcript_hash(fetch, example_challenge())),
            "226a84f7f6943a2ab138d264bd131d4a157f5915ab45aa2c0b8799750619c38d");
  EXPECT_EQ(to_hex(auth_proof(ProofRole::Sender, example_key(), fetch, example_challenge())),
            "71eaa1e6e200386472452fe2a0000a96662ce6a1b50c852d7f71fe4ba712471f");
  EXPECT_EQ(to_hex(auth_proof(ProofRole::Receiver, example_key(), fetch, example_challenge())),
            "d942cce2de4162a60162e19e3ed9981bde1e37aea28c895424013af57dabb397");
  ASSERT_TRUE(sender_key_claim(fetch));
  EXPECT_EQ(sender_key_claim(fetch)->id, "alice");
  // A push's proof over the same nonces is never a fetch's: the message's type differs.
  EXPECT_FALSE(same_proof(
      auth_proof(ProofRole::Sender, example_key(), fetch, example_challenge()),
      auth_proof(ProofRole::Sender, example_key(), example_open(), example_challenge())));
}

// RFC 4231, test case 2: the primitive is HMAC-SHA256 itself.
TEST(Auth, HmacIsRfc4231) {
  const std::string data = "what do ya want for nothing?";
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", Bytes(data.begin(), data.end()))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Auth, EveryPartOfTheTranscriptChangesTheProof) {
  const Digest good =
      auth_proof(ProofRole::Sender, example_key(), example_open(), example_challenge());
  // Another nonce of ours, another id, another field of the Open, another challenge, another
  // key, the other role: each is another proof, so none can stand in for another.
  Open other_nonce = example_open();
  other_nonce.extensions[1] = sender_key_extension(counting_from<32>(0xa1), "alice");
  Open other_id = example_open();
  other_id.extensions[1] = sender_key_extension(counting_from<32>(0xa0), "alicf");
  Open other_size = example_open();
  other_size.total_bytes = 4097;
  Challenge other_challenge = example_challenge();
  other_challenge.nonce[31] ^= 1;
  std::string other_key = example_key();
  other_key[0] = 1;
  for (const Digest& d :
       {auth_proof(ProofRole::Sender, example_key(), other_nonce, example_challenge()),
        auth_proof(ProofRole::Sender, example_key(), other_id, example_challenge()),
        auth_proof(ProofRole::Sender, example_key(), other_size, example_challenge()),
        auth_proof(ProofRole::Sender, example_key(), example_open(), other_challenge),
        auth_proof(ProofRole::Sender, other_key, example_open(), example_challenge()),
        auth_proof(ProofRole::Receiver, example_key(), example_open(), example_challenge())})
    EXPECT_FALSE(same_proof(good, d));
  EXPECT_TRUE(same_proof(
      good, auth_proof(ProofRole::Sender, example_key(), example_open(), example_challenge())));
}

TEST(Auth, TheClaimComesBackOutOfTheOpen) {
  const auto claim = sender_key_claim(example_open());
  ASSERT_TRUE(claim);
  EXPECT_EQ(claim->id, "alice");
  EXPECT_EQ(claim->nonce, counting_from<32>(0xa0));
  EXPECT_FALSE(sender_key_claim(Open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 0}));
}

TEST(Auth, TheKeyExtensionNeedsANonceAndAnIdOf1To256Bytes) {
  Open open = example_open();
  open.extensions[1].value.resize(kNonceBytes);  // no id
  EXPECT_TRUE(encode(open, kVersion2).empty());
  open.extensions[1] = sender_key_extension(counting_from<32>(0), std::string(256, 'i'));
  EXPECT_FALSE(encode(open, kVersion2).empty());
  open.extensions[1] = sender_key_extension(counting_from<32>(0), std::string(257, 'i'));
  EXPECT_TRUE(encode(open, kVersion2).empty());
}

TEST(Auth, ChallengeAndProofRoundTripAndAreVersion2Only) {
  for (const Message& m : {Message{example_challenge()}, Message{Proof{counting_from<32>(7)}}}) {
    const auto back = decode(encode(m, kVersion2));
    ASSERT_TRUE(std::holds_alternative<Message>(back));
    EXPECT_EQ(std::get<Message>(back), m);
    EXPECT_TRUE(encode(m, kVersion1).empty());
  }
  // One byte short, one too many.
  Bytes bytes = encode(example_challenge(), kVersion2);
  bytes.pop_back();
  bytes[8] = 31;
  EXPECT_TRUE(std::holds_alternative<DecodeFailure>(decode(bytes)));
  bytes.push_back(0);
  bytes.push_back(0);
  bytes[8] = 33;
  EXPECT_TRUE(std::holds_alternative<DecodeFailure>(decode(bytes)));
}

TEST(Auth, TheNewReasonsAndCodeCannotGoToAVersion1Peer) {
  EXPECT_TRUE(encode(Reject{RejectReason::AuthRequired, "key"}, kVersion1).empty());
  EXPECT_TRUE(encode(Reject{RejectReason::AuthFailed, ""}, kVersion1).empty());
  EXPECT_TRUE(encode(Error{ErrorCode::AuthFailed, ""}, kVersion1).empty());
  EXPECT_FALSE(encode(Reject{RejectReason::AuthFailed, ""}, kVersion2).empty());
  EXPECT_FALSE(encode(Reject{RejectReason::UnsupportedVersion, "key"}, kVersion1).empty());
}

// A version-1 peer's decoder knows reasons 1..8 and codes 1..5; so does ours, for version 1.
TEST(Auth, TheNewReasonsAndCodeDecodeInVersion2Only) {
  for (const Message& m :
       {Message{Reject{RejectReason::AuthRequired, "key"}},
        Message{Reject{RejectReason::AuthFailed, ""}}, Message{Error{ErrorCode::AuthFailed, ""}}}) {
    Bytes bytes = encode(m, kVersion2);
    ASSERT_FALSE(bytes.empty());
    const auto back = decode(bytes);
    ASSERT_TRUE(std::holds_alternative<Message>(back));
    EXPECT_EQ(std::get<Message>(back), m);
    bytes[4] = 1;  // the same bytes, labelled version 1
    const auto v1 = decode(bytes);
    ASSERT_TRUE(std::holds_alternative<DecodeFailure>(v1));
    EXPECT_EQ(std::get<DecodeFailure>(v1).error, DecodeError::BadField);
  }
}

TEST(Auth, NoncesAreFresh) {
  EXPECT_NE(fresh_nonce(), fresh_nonce());
}

}  // namespace
