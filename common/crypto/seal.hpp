#pragma once
// The cryptography of sealing (docs/PROTOCOL.md 7.11): the key schedule (HKDF-SHA256 of the
// sender key, salted with the transcript hash T of 7.8) and AES-256-GCM through OpenSSL's
// EVP, which uses AES-NI and VAES where the CPU has them. protocol/seal.hpp holds the
// labels, nonces and associated data.

#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

#include "protocol/seal.hpp"

namespace rdmax {

// HKDF-SHA256 (RFC 5869) with a 32-byte output: PRK = HMAC-SHA256(salt, ikm), then
// HMAC-SHA256(PRK, info || 0x01).
[[nodiscard]] proto::SealKey hkdf_sha256(std::span<const std::uint8_t> salt,
                                         std::span<const std::uint8_t> ikm,
                                         std::span<const std::uint8_t> info);

// The key of `purpose`: hkdf_sha256(T, key, seal_label(purpose)).
[[nodiscard]] proto::SealKey derive_seal_key(std::string_view key, const proto::Digest& transcript,
                                             proto::SealPurpose purpose);

// A connection's three keys.
struct SealKeys {
  proto::SealKey messages_to_receiver{};
  proto::SealKey messages_to_sender{};
  proto::SealKey chunks{};
};
[[nodiscard]] SealKeys derive_seal_keys(std::string_view key, const proto::Digest& transcript);

// Encrypts `data` in place under `key` with the nonce of `counter` and `aad`; the tag.
[[nodiscard]] proto::SealTag seal_in_place(const proto::SealKey& key, std::uint64_t counter,
                                           std::span<const std::uint8_t> aad,
                                           std::span<std::uint8_t> data);
// The same from `plain` into `out` (as long; the two apart, or the same).
[[nodiscard]] proto::SealTag seal_into(const proto::SealKey& key, std::uint64_t counter,
                                       std::span<const std::uint8_t> aad,
                                       std::span<const std::uint8_t> plain,
                                       std::span<std::uint8_t> out);
// Decrypts in place; false when the tag does not match, and then `data` holds nothing usable.
[[nodiscard]] bool open_in_place(const proto::SealKey& key, std::uint64_t counter,
                                 std::span<const std::uint8_t> aad, std::span<std::uint8_t> data,
                                 const proto::SealTag& tag);

// One connection's messages, each way: what goes is sealed under one key, what comes opened
// under the other, each way counting from 0, so that a message dropped, replayed, reordered,
// altered or injected does not open (and every later one neither).
class MessageSeal {
 public:
  MessageSeal(const proto::SealKey& send, const proto::SealKey& receive)
      : send_(send), receive_(receive) {}

  // The message encoded in version 2, sealed. Throws std::invalid_argument for a message that
  // does not encode (the encoder's rules) or does not fit a Sealed.
  [[nodiscard]] proto::Sealed seal(const proto::Message& message);
  // The message a Sealed holds; a DecodeFailure (BadField) when it does not open, or
  // whatever the message inside breaks. Only a message that opened counts.
  [[nodiscard]] std::variant<proto::Message, proto::DecodeFailure> open(
      const proto::Sealed& sealed);

 private:
  proto::SealKey send_;
  proto::SealKey receive_;
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
};

}  // namespace rdmax
