#pragma once
// What the encoder (protocol/wire_encode.cpp) and the decoder (protocol/wire_decode.cpp)
// share: the payload sizes of docs/PROTOCOL.md sections 3 and 7, and the static rules of
// the fields. Internal to the codec; the interface is protocol/wire.hpp.

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

#include "protocol/byte_order.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto::codec {

using detail::ByteReader;
using detail::ByteWriter;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// Payload sizes of the fixed parts (see docs/PROTOCOL.md section 3).
constexpr std::size_t kHelloFixedBytes = 8 + kSha256Bytes + 4 + 2;  // 46, then the name
// Version 2: file_size, digest_algorithm, 3 reserved, digest, chunk_size_hint, keepalive_ms,
// name_len: 54, then the name.
constexpr std::size_t kHello2FixedBytes = 8 + 1 + 3 + kSha256Bytes + 4 + 4 + 2;
constexpr std::size_t kExtensionHeaderBytes = 2 + 2;  // type, length, then the value
constexpr std::size_t kWorkingBytes = 1 + 8;
constexpr std::size_t kAcceptBytes = 8 + 4 + 4 + 4 + 4;
constexpr std::size_t kChunkBytes = 8 + 4 + 4;
constexpr std::size_t kCreditBytes = 4 + 4;
constexpr std::size_t kDoneBytes = 8;
constexpr std::size_t kVerdictBytes = 1 + kSha256Bytes;
constexpr std::size_t kLengthPrefixBytes = 2;      // Id, Secret: u16 length, then bytes
constexpr std::size_t kCodeAndTextFixedBytes = 4;  // Reject, Error: u16 code, u16 len, text
constexpr std::size_t kDeniedBytes = 2;
// Version-2 sessions (docs/PROTOCOL.md 7.5).
constexpr std::size_t kOpenBytes = 1 + 3 + 4 + 4 + 4 + 8;
// entry, kind, reserved, mode, size, mtime_sec, mtime_nsec, digest, path_len; then the path.
constexpr std::size_t kOfferFixedBytes = 4 + 1 + 1 + 2 + 8 + 8 + 4 + kSha256Bytes + 2;
constexpr std::size_t kTakeBytes = 4;
constexpr std::size_t kRefuseFixedBytes = 4 + kCodeAndTextFixedBytes;  // entry, then as Reject
constexpr std::size_t kFileChunkBytes = 4 + 4 + 8 + 4;
constexpr std::size_t kFileDoneBytes = 4 + 8;
constexpr std::size_t kFileDoneWithDigestBytes = kFileDoneBytes + kSha256Bytes;  // 7.9
constexpr std::size_t kFileVerdictBytes = 4 + 1 + kSha256Bytes;
constexpr std::size_t kResumeBytes = 4 + 8;
constexpr std::size_t kHaveBytes = 4 + kSha256Bytes;
constexpr std::size_t kChallengeBytes = kNonceBytes;
constexpr std::size_t kProofBytes = kSha256Bytes;
constexpr std::size_t kHoldsBytes = 4 + 8 + kSha256Bytes;
constexpr std::size_t kContinueBytes = 4 + 8;
constexpr std::size_t kFileAbortBytes = 4 + 2 + 2;  // entry, reason, reserved
// Offer.flags: bit 0 is digest_at_end; the others are reserved (7.9).
constexpr std::uint8_t kOfferDigestAtEnd = 0x01;
constexpr std::uint32_t kNanosecondsPerSecond = 1'000'000'000;

// Every message must fit one SEND buffer even at its maximum field lengths.
static_assert(kHeaderSize + kHello2FixedBytes + kMaxNameBytes <= kMaxMessageSize);
static_assert(kHeaderSize + kLengthPrefixBytes + kMaxSecretBytes <= kMaxMessageSize);
static_assert(kHeaderSize + kCodeAndTextFixedBytes + kMaxTextBytes <= kMaxMessageSize);
static_assert(kHeaderSize + kOfferFixedBytes + kMaxPathBytes <= kMaxMessageSize);

// The variant's alternatives are declared in wire-type order, so index + 1 is the type.
static_assert(std::variant_size_v<Message> == 27);
static_assert(std::is_same_v<std::variant_alternative_t<0, Message>, Hello>);
static_assert(std::is_same_v<std::variant_alternative_t<11, Message>, Error>);
static_assert(std::is_same_v<std::variant_alternative_t<12, Message>, Working>);
static_assert(std::is_same_v<std::variant_alternative_t<13, Message>, Open>);
static_assert(std::is_same_v<std::variant_alternative_t<19, Message>, FileVerdict>);
static_assert(std::is_same_v<std::variant_alternative_t<21, Message>, Have>);
static_assert(std::is_same_v<std::variant_alternative_t<23, Message>, Proof>);
static_assert(std::is_same_v<std::variant_alternative_t<25, Message>, FileAbort>);
static_assert(std::is_same_v<std::variant_alternative_t<26, Message>, Continue>);

inline std::size_t extensions_size(const std::vector<HelloExtension>& extensions) {
  std::size_t size = 0;
  for (const auto& e : extensions) size += kExtensionHeaderBytes + e.value.size();
  return size;
}

// Hello's and Open's rule for the extensions they know (docs/PROTOCOL.md 7.6).
inline const char* extensions_problem(const std::vector<HelloExtension>& extensions) {
  for (const auto& e : extensions)
    if (e.type == kExtensionResume && !e.value.empty())
      return "resume extension with a value";
    else if (e.type == kExtensionSenderKey &&
             (e.value.size() <= kNonceBytes || e.value.size() > kNonceBytes + kMaxIdBytes))
      return "sender-key extension not a nonce and an id of 1..256 bytes";
    else if (e.type == kExtensionDigestAtEnd && !e.value.empty())
      return "digest-at-end extension with a value";
    else if (e.type == kExtensionDigestAlgorithm &&
             (e.value.size() != 1 ||
              static_cast<DigestAlgorithm>(e.value[0]) != DigestAlgorithm::Blake3))
      return "digest-algorithm extension not one byte 3";
  return nullptr;
}

// A Verdict's codes; a FileVerdict may also be Abandoned (7.9).
inline bool is_known(VerdictCode code) {
  return static_cast<std::uint8_t>(code) <= 3;
}
inline bool is_known_for_entry(VerdictCode code) {
  return is_known(code) || code == VerdictCode::Abandoned;
}
inline bool is_known(AbortReason reason) {
  return reason == AbortReason::Changed || reason == AbortReason::Unreadable;
}
inline bool is_known(RejectReason reason) {
  auto v = static_cast<std::uint16_t>(reason);
  return v >= 1 && v <= 10;
}
// Reasons and codes a version-1 peer does not know: the encoder refuses them in version 1.
inline bool is_version1(RejectReason reason) {
  return static_cast<std::uint16_t>(reason) <= 8;
}
inline bool is_version1(ErrorCode code) {
  return static_cast<std::uint16_t>(code) <= 5;
}
inline bool is_known(ErrorCode code) {
  auto v = static_cast<std::uint16_t>(code);
  return v >= 1 && v <= 6;
}
// The algorithms a fixed digest_algorithm field may name (a Hello's, an Open's).
inline bool is_known(DigestAlgorithm algorithm) {
  return algorithm == DigestAlgorithm::WholeFileSha256 ||
         algorithm == DigestAlgorithm::FsVeritySha256;
}
// And what a session may use: those, or one kExtensionDigestAlgorithm names (7.10).
inline bool is_known_for_session(DigestAlgorithm algorithm) {
  return is_known(algorithm) || algorithm == DigestAlgorithm::Blake3;
}
// The algorithm an Open's fixed field carries when kExtensionDigestAlgorithm names another.
inline constexpr DigestAlgorithm kAlgorithmBesideExtension = DigestAlgorithm::FsVeritySha256;
// kExtensionDigestAlgorithm's size: one byte, the algorithm.
inline constexpr std::size_t kDigestAlgorithmExtensionBytes = kExtensionHeaderBytes + 1;

// An Open's payload: its fixed fields, its extensions, and 0x8004 when only that extension
// can name its algorithm (7.10).
inline std::size_t open_size(const Open& m) {
  return kOpenBytes + extensions_size(m.extensions) +
         (is_known(m.digest_algorithm) ? 0 : kDigestAlgorithmExtensionBytes);
}
// extensions_problem() for an Open: also a 0x8004 left in Open.extensions, which the decoder
// lifts into digest_algorithm when it is the only one and stands beside 2 (7.10).
inline const char* open_extensions_problem(const Open& m) {
  for (const auto& e : m.extensions)
    if (e.type == kExtensionDigestAlgorithm)
      return "digest-algorithm extension twice, not last, or beside digest_algorithm 1";
  return extensions_problem(m.extensions);
}
inline bool is_known(WorkPhase phase) {
  auto v = static_cast<std::uint8_t>(phase);
  return v >= 1 && v <= 3;
}
inline bool is_known(EntryKind kind) {
  return kind == EntryKind::File || kind == EntryKind::Directory;
}
inline bool is_zero(const Digest& digest) {
  for (std::uint8_t b : digest)
    if (b != 0) return false;
  return true;
}
inline bool is_known_version(std::uint16_t version) {
  return version == kVersion1 || version == kVersion2;
}

// The static rule a field of `message` breaks (docs/PROTOCOL.md 3, 7), if any: the encoder
// refuses such a message, the decoder reports it as BadField.
const char* field_problem(const Message& message);

}  // namespace rdmax::proto::codec
