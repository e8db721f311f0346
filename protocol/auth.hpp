#pragma once
// Sender keys (docs/PROTOCOL.md 7.8), the parts without cryptography: what an Open claims,
// and the bytes each side's proof covers. The HMAC itself is common/crypto/auth_proof.hpp's.
//
// The exchange, before any memory is granted:
//   sender   -> Open with kExtensionSenderKey {sender nonce, id}
//   receiver -> Challenge {receiver nonce}
//   sender   -> Proof {HMAC(key, "rdmax sender proof v2" || SHA-256(transcript))}
//   receiver -> Proof {HMAC(key, "rdmax receiver proof v2" || SHA-256(transcript))}, Accept
// where the transcript is the Open and the Challenge as encoded on the wire. Both nonces
// are in it, so a proof is good for one connection only (no replay), and the labels differ,
// so one side's proof is never the other's (no reflection). The key never crosses the wire.
// A fetch (7.13) makes the same exchange with its Fetch in the Open's place: the fetcher
// claims and proves as a sender does, the server challenges and proves as a receiver does.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/wire.hpp"

namespace rdmax::proto {

enum class ProofRole : std::uint8_t { Sender, Receiver };

// The label a role's HMAC starts with (ASCII, no terminator).
[[nodiscard]] std::string_view proof_label(ProofRole role);

// The Open's extension that claims a key for `id` (1..kMaxIdBytes bytes).
[[nodiscard]] HelloExtension sender_key_extension(const Nonce& nonce, std::string_view id);

struct SenderKeyClaim {
  Nonce nonce{};
  std::string id;
};
// The claim an Open (or a Fetch) carries, if any (the codec has checked the extension's size).
[[nodiscard]] std::optional<SenderKeyClaim> sender_key_claim(
    std::span<const HelloExtension> extensions);
[[nodiscard]] inline std::optional<SenderKeyClaim> sender_key_claim(const Open& open) {
  return sender_key_claim(open.extensions);
}
[[nodiscard]] inline std::optional<SenderKeyClaim> sender_key_claim(const Fetch& fetch) {
  return sender_key_claim(fetch.extensions);
}

// The claiming message (an Open, or a Fetch), then the Challenge, each encoded in version 2
// as it travelled (the codec's encoding is the only one: a decoded message encodes back to
// the bytes it came from). The message's type is in its header, so a push's transcript is
// never a fetch's.
[[nodiscard]] std::vector<std::uint8_t> auth_transcript(const Message& claiming,
                                                        const Challenge& challenge);

}  // namespace rdmax::proto
