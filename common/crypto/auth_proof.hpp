#pragma once
// The cryptography of sender keys (docs/PROTOCOL.md 7.8): HMAC-SHA256 proofs over the
// handshake's transcript (protocol/auth.hpp), fresh nonces, and a comparison that takes the
// same time whatever bytes differ.

#include <span>
#include <string_view>

#include "protocol/auth.hpp"

namespace rdmax {

// T = SHA-256(auth_transcript(claiming, challenge)): what both proofs cover, and the salt of
// the sealing keys (7.11). `claiming`: a push's Open, or a fetch's Fetch (7.13).
[[nodiscard]] proto::Digest transcript_hash(const proto::Message& claiming,
                                            const proto::Challenge& challenge);

// HMAC-SHA256(key, proof_label(role) || T).
[[nodiscard]] proto::Digest auth_proof(proto::ProofRole role, std::string_view key,
                                       const proto::Digest& transcript);
[[nodiscard]] inline proto::Digest auth_proof(proto::ProofRole role, std::string_view key,
                                              const proto::Message& claiming,
                                              const proto::Challenge& challenge) {
  return auth_proof(role, key, transcript_hash(claiming, challenge));
}

// HMAC-SHA256(key, data): the primitive, for the known-answer tests.
[[nodiscard]] proto::Digest hmac_sha256(std::string_view key, std::span<const std::uint8_t> data);

// 32 bytes from the kernel's random generator (getrandom, blocking until it is seeded).
[[nodiscard]] proto::Nonce fresh_nonce();

// Equal, compared in constant time (CRYPTO_memcmp).
[[nodiscard]] bool same_proof(const proto::Digest& expected, const proto::Digest& actual);

}  // namespace rdmax
