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
#include <map>
#include <span>
#include <string_view>

#include "protocol/secure_wipe.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

inline constexpr std::size_t kSealKeyBytes = 32;
inline constexpr std::size_t kSealNonceBytes = 12;

// A key of sealing, or a secret on the way to one (HKDF's PRK): 32 bytes that wipe
// themselves when the object ends, so that a peer holds no key of a connection after it
// (docs/SECURITY.md). Every copy is such an object, and wipes itself too: hold keys only in
// this type, never in a plain array that would outlive its connection in freed memory.
class SealKey {
 public:
  using Bytes = std::array<std::uint8_t, kSealKeyBytes>;

  SealKey() = default;
  explicit SealKey(const Bytes& bytes) : bytes_(bytes) {}
  SealKey(const SealKey&) = default;
  SealKey& operator=(const SealKey&) = default;
  ~SealKey() { wipe(); }

  std::uint8_t* data() { return bytes_.data(); }
  const std::uint8_t* data() const { return bytes_.data(); }
  static constexpr std::size_t size() { return kSealKeyBytes; }
  const std::uint8_t* begin() const { return bytes_.data(); }
  const std::uint8_t* end() const { return bytes_.data() + kSealKeyBytes; }
  void wipe() { secure_wipe(bytes_.data(), bytes_.size()); }

 private:
  Bytes bytes_{};
};
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

// The counters of a connection's chunks the receiver has taken: a counter used twice means
// one key sealed two chunks under one nonce, which breaks GCM's promises (the XOR of the two
// plaintexts shows, and tags can be forged), so the second is refused (7.11). The sender may
// use them in any order (the reference: as its reads begin, which is not the order its
// FileChunks go) and may skip some for good (a read that failed, a file abandoned), so what
// is kept is the runs of counters seen: one run for a sender that skips none, one more per
// gap. At most kMaxRuns of them, so that the memory stays bounded whatever a sender does.
class ChunkCounters {
 public:
  static constexpr std::size_t kMaxRuns = 65536;

  // True, and `counter` is taken: never seen on this connection, and within the bound.
  [[nodiscard]] bool take(std::uint64_t counter);
  std::size_t runs() const { return runs_.size(); }

 private:
  std::map<std::uint64_t, std::uint64_t> runs_;  // first -> last; disjoint, never adjacent
};

// The Open's (or a Fetch's, 7.13) extension that asks for sealing, and whether it is there.
[[nodiscard]] HelloExtension seal_extension();
[[nodiscard]] bool asks_to_seal(std::span<const HelloExtension> extensions);
[[nodiscard]] inline bool asks_to_seal(const Open& open) {
  return asks_to_seal(open.extensions);
}
[[nodiscard]] inline bool asks_to_seal(const Fetch& fetch) {
  return asks_to_seal(fetch.extensions);
}

}  // namespace rdmax::proto
