#pragma once
// Sealing (docs/PROTOCOL.md 7.11), the parts without cryptography: the labels of the key
// schedule, the nonce a counter makes, the associated data of a chunk and of a sealed
// message. AES-256-GCM and HKDF are common/crypto/seal.hpp's.
//
// After the two proofs of a connection whose Open carried kExtensionSeal, both sides hold
// three keys drawn from the sender key and the transcript hash T of 7.8 (so no key crosses
// the wire, and each connection's differ): one for the messages each way and one for the
// chunks' bytes. A key never seals two things under one nonce: each counts what it sealed
// (the messages in the order sent; the chunks in the order the sender's reads began).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/wire.hpp"

namespace rdmax::proto {

inline constexpr std::size_t kSealKeyBytes = 32;
inline constexpr std::size_t kSealNonceBytes = 12;
using SealKey = std::array<std::uint8_t, kSealKeyBytes>;
using SealNonce = std::array<std::uint8_t, kSealNonceBytes>;

// What a key seals, and its label in the key schedule (ASCII, no terminator).
enum class SealPurpose : std::uint8_t {
  MessagesToReceiver,  // "rdmax seal v2 messages s>r"
  MessagesToSender,    // "rdmax seal v2 messages r>s"
  ChunksToReceiver,    // "rdmax seal v2 chunks s>r"
};
[[nodiscard]] std::string_view seal_label(SealPurpose purpose);

// Four zero bytes, then the counter as a u64 little-endian.
[[nodiscard]] SealNonce seal_nonce(std::uint64_t counter);

// A chunk's associated data: entry (u32), offset (u64), length (u32), little-endian: the
// bytes cannot be moved to another entry or offset, or cut.
using ChunkAad = std::array<std::uint8_t, 16>;
[[nodiscard]] ChunkAad chunk_aad(std::uint32_t entry, std::uint64_t offset, std::uint32_t length);

// A sealed message's associated data: its own 16-byte header (version 2, type Sealed, the
// payload of a box of `box_bytes`).
[[nodiscard]] std::array<std::uint8_t, kHeaderSize> sealed_header(std::size_t box_bytes);

// The Open's extension that asks for sealing, and whether an Open carries it.
[[nodiscard]] HelloExtension seal_extension();
[[nodiscard]] bool asks_to_seal(const Open& open);

}  // namespace rdmax::proto
