// Sealing (docs/PROTOCOL.md 7.11), both drivers end to end through their fakes: a keyed tree
// goes sealed (nothing but the handshake in clear, not a name, a byte or the secret); a chunk
// overwritten in the receiver's window by someone who holds its slot's key is never written;
// an altered, replayed or reordered message either way is refused; and a receiver that
// requires sealing refuses a keyed sender that does not seal.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "common/crypto/auth_proof.hpp"
#include "common/crypto/seal.hpp"
#include "common/digest/merkle.hpp"
#include "tests/unit/session_pair.hpp"

namespace rdmax::test::sender_rig {
namespace {

constexpr const char* kAliceSeals =
    "alice 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";

struct SealedPair : SessionPair {
  SealedPair() {
    receiver.require_keys(kAliceSeals);
    sender.with_sealed_key();
    sender.settings.id = "alice";
    sender.add_file("a.bin", random_bytes(3 * kSlot + 5, 81), 0640);
    sender.add_file("d/b.bin", random_bytes(10, 82), 0600);
  }
};

// What someone holding alice's key sees of the pair's connection: its keys, once the Open and
// the Challenge went, and each direction's messages opened (and sealed again) in order.
struct KeyHolder {
  const SessionPair& pair;
  std::optional<SealKeys> keys;
  std::optional<MessageSeal> to_receiver;  // opens and reseals the sender's messages
  std::optional<MessageSeal> to_sender;    // opens the receiver's

  explicit KeyHolder(const SessionPair& p) : pair(p) {}
  void derive() {
    if (keys) return;
    std::string alice;
    for (int i = 0; i < 32; ++i) alice.push_back(static_cast<char>(i));
    const auto& open = std::get<proto::Open>(pair.sender.transport.sent.at(0).message);
    const auto& challenge = std::get<proto::Challenge>(pair.receiver.transport.sent.at(0).message);
    keys = derive_seal_keys(alice, transcript_hash(open, challenge));
    to_receiver.emplace(keys->messages_to_receiver, keys->messages_to_receiver);
    to_sender.emplace(keys->messages_to_sender, keys->messages_to_sender);
  }
  proto::Message open(MessageSeal& seal, const proto::Sealed& sealed) {
    auto opened = seal.open(sealed);
    EXPECT_TRUE(std::holds_alternative<proto::Message>(opened));
    return std::get<proto::Message>(opened);
  }
};

// Every message `t` sent, encoded as it went on the wire.
std::string wire_bytes(const FakeTransport& t) {
  std::string out;
  for (const auto& s : t.sent) {
    const auto bytes = proto::encode(s.message, s.version);
    out.append(bytes.begin(), bytes.end());
  }
  return out;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Every regular file beneath `dir` (temporaries and partials included), read.
std::string everything_beneath(const std::filesystem::path& dir) {
  std::string out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out += read_file(e.path());
  return out;
}

std::vector<proto::MessageType> types_sent(const FakeTransport& t) {
  std::vector<proto::MessageType> out;
  for (const auto& s : t.sent) out.push_back(proto::type_of(s.message));
  return out;
}

TEST(SessionLinkSeal, ATreeGoesSealedAndOnlyTheHandshakeTravelsInClear) {
  SealedPair p;
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.driver->secret(), "s3cret");
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
  EXPECT_EQ(p.arrived("d/b.bin"), p.sent(1));
  using T = proto::MessageType;
  // The sender: Open and Proof in clear, then only Sealed; the receiver: Challenge and Proof.
  const auto from_sender = types_sent(p.sender.transport);
  ASSERT_GT(from_sender.size(), 2u);
  EXPECT_EQ(from_sender[0], T::Open);
  EXPECT_EQ(from_sender[1], T::Proof);
  EXPECT_TRUE(
      std::all_of(from_sender.begin() + 2, from_sender.end(), [](T t) { return t == T::Sealed; }));
  const auto from_receiver = types_sent(p.receiver.transport);
  ASSERT_GT(from_receiver.size(), 2u);
  EXPECT_EQ(from_receiver[0], T::Challenge);
  EXPECT_EQ(from_receiver[1], T::Proof);
  EXPECT_TRUE(std::all_of(from_receiver.begin() + 2, from_receiver.end(),
                          [](T t) { return t == T::Sealed; }));
  // Nothing readable on the wire: no name, no id, no secret, no run of the files' bytes.
  const std::string wire = wire_bytes(p.sender.transport) + wire_bytes(p.receiver.transport);
  for (const std::string& word :
       {std::string("a.bin"), std::string("b.bin"), std::string("s3cret")})
    EXPECT_FALSE(contains(wire, word)) << word;
  std::string written;
  for (const auto& w : p.sender.transport.writes) written.append(w.bytes.begin(), w.bytes.end());
  for (std::size_t entry = 0; entry < 2; ++entry)
    EXPECT_FALSE(contains(written, p.sent(entry).substr(0, 8))) << entry;
}

// The digest at the end (7.9): a sealed chunk's bytes in clear exist only in its read, which
// hashes them before it seals them; the digests that come in the FileDones are the files'.
TEST(SessionLinkSeal, FilesHashedAsTheyAreSealedArriveVerified) {
  SealedPair p;
  p.sender.add_file("c.bin", random_bytes(5 * kSlot + 17, 83), 0600);
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.sender.status(i), Status::Good) << i;
    EXPECT_EQ(p.sender.plan.entries[i].digest, merkle::digest_of(p.sender.contents.at(i))) << i;
  }
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
  EXPECT_EQ(p.arrived("c.bin"), p.sent(2));
}

// The control case of ATreeGoesSealedAndOnlyTheHandshakeTravelsInClear: without sealing the
// same words are on the wire, so that test can fail.
TEST(SessionLinkSeal, WithoutSealingTheNamesTheBytesAndTheSecretTravelInClear) {
  SealedPair p;
  p.sender.with_key();  // --no-seal, to a receiver with --allow-clear (require_seal false)
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  // The operator is warned of each keyed connection served so.
  EXPECT_NE(p.log.since(0).find("warning: [" + p.receiver.connection->label() +
                                "] sender 'alice' authenticated, but served IN CLEAR"),
            std::string::npos)
      << p.log.since(0);
  const std::string wire = wire_bytes(p.sender.transport) + wire_bytes(p.receiver.transport);
  EXPECT_TRUE(contains(wire, "a.bin"));
  EXPECT_TRUE(contains(wire, "s3cret"));
  std::string written;
  for (const auto& w : p.sender.transport.writes) written.append(w.bytes.begin(), w.bytes.end());
  EXPECT_TRUE(contains(written, p.sent(0).substr(0, 8)));
}

// Someone who learned a slot's rkey writes over a chunk after the sender did (and before its
// FileChunk arrives): the chunk does not open, nothing of it reaches the file, both sides
// say so, and the receiver ends this connection only.
TEST(SessionLinkSeal, AChunkOverwrittenInTheWindowIsNeverWritten) {
  SealedPair p;
  int landed = 0;
  p.link.landed = [&](const FakeTransport::Written& w) {
    if (++landed != 2) return;
    std::vector<std::uint8_t> forged(w.bytes.size(), 0x41);
    ASSERT_TRUE(p.receiver.transport.write_remote(w.remote_addr, w.rkey, forged));
  };
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::ProtocolError);  // GotError: the receiver aborted
  EXPECT_EQ(p.receiver.connection->state(), proto::ReceiverState::Closed);
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "a.bin"));
  EXPECT_FALSE(contains(everything_beneath(p.receiver.dir.path()), std::string(64, 'A')))
      << "a byte of the forged chunk was written";
}

// A message altered on its way (either way), replayed (the one before it again) or two
// swapped: none opens, a protocol violation.
TEST(SessionLinkSeal, AnAlteredReplayedOrReorderedMessageIsRefused) {
  // What befalls the n-th sealed message one way; `kept`: one seen before.
  using Tamper = void (*)(int n, proto::Sealed& s, std::optional<proto::Sealed>& kept);
  const Tamper alter = [](int n, proto::Sealed& s, std::optional<proto::Sealed>&) {
    if (n == 3) s.box[s.box.size() / 2] ^= 1;
  };
  const std::vector<std::tuple<const char*, bool, Tamper>> cases{
      {"altered, to the sender", false, alter},
      {"altered, to the receiver", true, alter},
      {"replayed", false,
       [](int n, proto::Sealed& s, std::optional<proto::Sealed>& kept) {
         if (n == 2) kept = s;
         if (n == 3) s = *kept;  // the second again
       }},
      {"swapped", false,
       [](int n, proto::Sealed& s, std::optional<proto::Sealed>& kept) {
         if (n == 2) kept = s;
         if (n == 3) std::swap(s, *kept);  // the third goes as the second was
       }},
  };
  for (const auto& [name, to_receiver, tamper] : cases) {
    SCOPED_TRACE(name);
    SealedPair p;
    int sealed = 0;
    std::optional<proto::Sealed> kept;
    (to_receiver ? p.link.tamper_to_receiver : p.link.tamper) = [&, t = tamper](proto::Message& m) {
      if (auto* s = std::get_if<proto::Sealed>(&m)) t(++sealed, *s, kept);
    };
    ASSERT_TRUE(p.run());
    EXPECT_EQ(p.sender.driver->outcome(), O::ProtocolError);
  }
}

// A sender that seals two chunks under one counter (a bug: GCM's nonce used twice) is refused
// at the second FileChunk, as a protocol violation, before anything of its slot is opened;
// without the check the chunk would merely fail to open (SealBroken), or, sealed so by a
// buggy sender, be taken.
TEST(SessionLinkSeal, AChunkCounterUsedTwiceIsRefused) {
  SealedPair p;
  KeyHolder spy(p);
  std::optional<std::uint64_t> first;
  p.link.tamper_to_receiver = [&](proto::Message& m) {
    auto* s = std::get_if<proto::Sealed>(&m);
    if (s == nullptr) return;
    spy.derive();
    proto::Message inner = spy.open(*spy.to_receiver, *s);
    if (auto* chunk = std::get_if<proto::FileChunk>(&inner); chunk != nullptr && chunk->seal) {
      if (!first)
        first = chunk->seal->counter;
      else
        chunk->seal->counter = *first;
    }
    *s = spy.to_receiver->seal(inner);
  };
  std::vector<proto::Error> errors;
  p.link.tamper = [&](proto::Message& m) {
    const auto* s = std::get_if<proto::Sealed>(&m);
    if (s == nullptr) return;
    spy.derive();
    const proto::Message inner = spy.open(*spy.to_sender, *s);
    if (const auto* error = std::get_if<proto::Error>(&inner)) errors.push_back(*error);
  };
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::ProtocolError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, proto::ErrorCode::ProtocolViolation) << errors[0].text;
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "a.bin"));
}

// A receiver of a revision before sealing ignores the ask and answers in clear (here: the
// sealed Accept opened on its way, so it arrives in clear). The sender ends the connection
// before any Offer, and its Error goes in clear: sealed, that receiver could not read it.
TEST(SessionLinkSeal, AnAcceptInClearGetsAnErrorInClear) {
  SealedPair p;
  KeyHolder spy(p);
  p.link.tamper = [&](proto::Message& m) {
    if (const auto* s = std::get_if<proto::Sealed>(&m)) {
      spy.derive();
      m = spy.open(*spy.to_sender, *s);
    }
  };
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::ProtocolError);
  const auto& sent = p.sender.transport.sent;
  ASSERT_FALSE(sent.empty());
  const auto* error = std::get_if<proto::Error>(&sent.back().message);
  ASSERT_NE(error, nullptr) << "the Error went as a "
                            << proto::to_string(proto::type_of(sent.back().message));
  EXPECT_EQ(error->code, proto::ErrorCode::ProtocolViolation);
  EXPECT_TRUE(p.sender.transport.sent_of<proto::Offer>().empty());
  EXPECT_TRUE(p.sender.transport.sent_of<proto::Sealed>().empty()) << "nothing sealed went";
}

// A sender that finds the receiver's Proof wrong says so with Error(AuthFailed) in clear: it
// has no keys (7.8). The receiver, sealing since it sent its Proof, takes that Error as the
// sender's last word, not as a message in clear to answer with a violation of its own.
TEST(SessionLinkSeal, AWrongReceiverProofEndsWithTheSendersErrorInClear) {
  SealedPair p;
  p.link.tamper = [&](proto::Message& m) {
    if (auto* proof = std::get_if<proto::Proof>(&m)) proof->mac[0] ^= 1;
  };
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::AuthFailed);
  const auto errors = p.sender.transport.sent_of<proto::Error>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, proto::ErrorCode::AuthFailed);
  // The receiver: Challenge, Proof, the sealed Accept, and nothing after the sender's Error.
  using T = proto::MessageType;
  EXPECT_EQ(types_sent(p.receiver.transport), (std::vector<T>{T::Challenge, T::Proof, T::Sealed}));
  EXPECT_EQ(p.receiver.connection->state(), proto::ReceiverState::Closed);
}

TEST(SessionLinkSeal, AReceiverThatRequiresSealingRefusesAKeyedSenderThatDoesNot) {
  SealedPair p;
  p.receiver.options.require_seal = true;
  p.sender.with_key();  // --no-seal
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::AuthFailed);
  const auto rejects = p.receiver.transport.sent_of<proto::Reject>();
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_EQ(rejects[0].reason, proto::RejectReason::SealRequired);
  EXPECT_TRUE(p.receiver.transport.sent_of<proto::Challenge>().empty()) << "refused at the Open";
  EXPECT_EQ(p.receiver.transport.live_regions(), 0u);
}

TEST(SessionLinkSeal, AReceiverThatRequiresSealingServesASealingSender) {
  SealedPair p;
  p.receiver.options.require_seal = true;
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
}

}  // namespace
}  // namespace rdmax::test::sender_rig
