#pragma once
// What the encoder (protocol/wire_encode.cpp) and the decoder (protocol/wire_decode.cpp)
// share: the payload sizes of docs/PROTOCOL.md sections 3 and 7, and the static rules of
// the fields. Internal to the codec; the interface is protocol/wire.hpp.

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
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

// Payload sizes of the parts written by hand (docs/PROTOCOL.md sections 3 and 7).
constexpr std::size_t kHelloFixedBytes = 8 + kSha256Bytes + 4 + 2;  // 46, then the name
// Version 2: file_size, digest_algorithm, 3 reserved, digest, chunk_size_hint, keepalive_ms,
// name_len: 54, then the name.
constexpr std::size_t kHello2FixedBytes = 8 + 1 + 3 + kSha256Bytes + 4 + 4 + 2;
constexpr std::size_t kExtensionHeaderBytes = 2 + 2;  // type, length, then the value
constexpr std::size_t kLengthPrefixBytes = 2;         // a counted string's u16 length
constexpr std::size_t kOpenBytes = 1 + 3 + 4 + 4 + 4 + 8;
constexpr std::size_t kFetchBytes = 4 + 4 + 4;  // then extensions (7.13)
constexpr std::size_t kFileDoneBytes = 4 + 8;
constexpr std::size_t kFileDoneWithDigestBytes = kFileDoneBytes + kSha256Bytes;  // 7.9
constexpr std::size_t kHoldsBytes = 4 + 8;  // 7.9: to a sender that proves what it has
constexpr std::size_t kHoldsWithDigestBytes = kHoldsBytes + kSha256Bytes;  // an older receiver's
constexpr std::size_t kContinueBytes = 4 + 8;
constexpr std::size_t kContinueWithDigestBytes = kContinueBytes + kSha256Bytes;
constexpr std::size_t kFileChunkBytes = 4 + 4 + 8 + 4;
constexpr std::size_t kFileChunkSealedBytes = kFileChunkBytes + 8 + kSealTagBytes;  // 7.11
constexpr std::uint32_t kNanosecondsPerSecond = 1'000'000'000;

template <class M>
concept HasLayout = requires {
  M::layout();
};

// A field's bytes before any counted string.
template <class M, class T>
constexpr std::size_t fixed_bytes(T M::*) {
  return sizeof(T);
}
template <std::size_t N>
constexpr std::size_t fixed_bytes(Reserved<N>) {
  return N;
}
template <class M>
constexpr std::size_t fixed_bytes(FlagBits<M>) {
  return 1;
}
template <class M>
constexpr std::size_t fixed_bytes(Counted<M>) {
  return kLengthPrefixBytes;
}
// A layout's fixed bytes, and whether a counted string follows them.
template <HasLayout M>
constexpr std::size_t fixed_size() {
  return std::apply([](auto... f) { return (std::size_t{0} + ... + fixed_bytes(f)); }, M::layout());
}
template <class F>
inline constexpr bool kIsCounted = false;
template <class M>
inline constexpr bool kIsCounted<Counted<M>> = true;
template <HasLayout M>
constexpr bool counted() {
  return std::apply([](auto... f) { return (false || ... || kIsCounted<decltype(f)>); },
                    M::layout());
}
template <HasLayout M>
std::size_t layout_size(const M& m) {
  std::size_t size = fixed_size<M>();
  std::apply(
      [&](auto... f) {
        ((size +=
          [&] {
            if constexpr (kIsCounted<decltype(f)>)
              return (m.*(f.member)).size();
            else
              return std::size_t{0};
          }()),
         ...);
      },
      M::layout());
  return size;
}

// Every message must fit one SEND buffer even at its maximum field lengths.
static_assert(kHeaderSize + kHello2FixedBytes + kMaxNameBytes <= kMaxMessageSize);
static_assert(kHeaderSize + fixed_size<Secret>() + kMaxSecretBytes <= kMaxMessageSize);
static_assert(kHeaderSize + fixed_size<Refuse>() + kMaxTextBytes <= kMaxMessageSize);
static_assert(kHeaderSize + fixed_size<Offer>() + kMaxPathBytes <= kMaxMessageSize);
static_assert(fixed_size<Offer>() == 4 + 1 + 1 + 2 + 8 + 8 + 4 + kSha256Bytes + 2);
static_assert(fixed_size<Accept>() == 24);
static_assert(fixed_size<Want>() == 4);
// A sealed message (7.11) holds any message that may be sealed at its largest: a session's
// (an Offer of the longest path) or an answer (a Secret, a Refuse's text).
static_assert(kHeaderSize + fixed_size<Sealed>() + kSealedMinBox + fixed_size<Offer>() +
                  kMaxPathBytes <=
              kMaxMessageSize);
static_assert(kHeaderSize + fixed_size<Sealed>() + kSealedMinBox + fixed_size<Secret>() +
                  kMaxSecretBytes <=
              kMaxMessageSize);

// The variant's alternatives are declared in wire-type order, so index + 1 is the type.
static_assert(std::variant_size_v<Message> == 32);
static_assert(std::is_same_v<std::variant_alternative_t<0, Message>, Hello>);
static_assert(std::is_same_v<std::variant_alternative_t<11, Message>, Error>);
static_assert(std::is_same_v<std::variant_alternative_t<12, Message>, Working>);
static_assert(std::is_same_v<std::variant_alternative_t<13, Message>, Open>);
static_assert(std::is_same_v<std::variant_alternative_t<19, Message>, FileVerdict>);
static_assert(std::is_same_v<std::variant_alternative_t<21, Message>, Have>);
static_assert(std::is_same_v<std::variant_alternative_t<23, Message>, Proof>);
static_assert(std::is_same_v<std::variant_alternative_t<25, Message>, FileAbort>);
static_assert(std::is_same_v<std::variant_alternative_t<26, Message>, Continue>);
static_assert(std::is_same_v<std::variant_alternative_t<27, Message>, Sealed>);
static_assert(std::is_same_v<std::variant_alternative_t<28, Message>, Stripes>);
static_assert(std::is_same_v<std::variant_alternative_t<29, Message>, Join>);
static_assert(std::is_same_v<std::variant_alternative_t<30, Message>, Fetch>);
static_assert(std::is_same_v<std::variant_alternative_t<31, Message>, Want>);
// The last type of each version: 12 in version 1, Want's in version 2.
inline constexpr std::uint16_t kLastType1 = 12;
inline constexpr std::uint16_t kLastType2 = std::variant_size_v<Message>;

inline std::size_t extensions_size(const std::vector<HelloExtension>& extensions) {
  std::size_t size = 0;
  for (const auto& e : extensions) size += kExtensionHeaderBytes + e.value.size();
  return size;
}

// kExtensionStripeGroup's value (7.12): the token, then `member` and `members` (u16 each).
inline bool stripe_group_value_ok(const std::string& value) {
  if (value.size() != kStripeGroupValueBytes) return false;
  auto u16_at = [&](std::size_t at) {
    return static_cast<std::uint16_t>(static_cast<std::uint8_t>(value[at]) |
                                      static_cast<std::uint8_t>(value[at + 1]) << 8);
  };
  const std::uint16_t member = u16_at(kStripeTokenBytes);
  const std::uint16_t members = u16_at(kStripeTokenBytes + 2);
  return members >= 2 && members <= kMaxStripeMembers && member < members;
}

// kExtensionFetchPart's value (7.13): `index` and `count` (u32 each).
inline bool fetch_part_value_ok(const std::string& value) {
  if (value.size() != kFetchPartValueBytes) return false;
  auto u32_at = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i)
      v |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(value[at + i])) << (8 * i);
    return v;
  };
  const std::uint32_t index = u32_at(0);
  const std::uint32_t count = u32_at(4);
  return count >= 2 && count <= kMaxStripeMembers && index < count;
}

// Hello's, Open's and Fetch's rule for the extensions they know (docs/PROTOCOL.md 7.6).
inline const char* extensions_problem(const std::vector<HelloExtension>& extensions) {
  for (const auto& e : extensions)
    if (e.type == kExtensionResume && !e.value.empty())
      return "resume extension with a value";
    else if (e.type == kExtensionSenderKey &&
             (e.value.size() <= kNonceBytes || e.value.size() > kNonceBytes + kMaxIdBytes))
      return "sender-key extension not a nonce and an id of 1..256 bytes";
    else if (e.type == kExtensionDigestAtEnd && !e.value.empty())
      return "digest-at-end extension with a value";
    else if (e.type == kExtensionProveHeld && !e.value.empty())
      return "prove-held extension with a value";
    else if (e.type == kExtensionSeal &&
             (e.value.size() != 1 || static_cast<std::uint8_t>(e.value[0]) != kSealSuiteAes256Gcm))
      return "seal extension not one byte 1";
    else if (e.type == kExtensionStripeGroup && !stripe_group_value_ok(e.value))
      return "stripe-group extension not 20 bytes of a token, a member below 2..64 members";
    else if (e.type == kExtensionFetchPart && !fetch_part_value_ok(e.value))
      return "part extension not 8 bytes of an index below a count of 2..64";
    else if (e.type == kExtensionDigestAlgorithm &&
             (e.value.size() != 1 ||
              static_cast<DigestAlgorithm>(e.value[0]) != DigestAlgorithm::Blake3))
      return "digest-algorithm extension not one byte 3";
  return nullptr;
}

// A Verdict's codes; a FileVerdict may also be Abandoned (7.9) or Interrupted (7.12).
inline bool is_known(VerdictCode code) {
  return static_cast<std::uint8_t>(code) <= 3;
}
inline bool is_known_for_entry(VerdictCode code) {
  return is_known(code) || code == VerdictCode::Abandoned || code == VerdictCode::Interrupted;
}
inline bool is_known(AbortReason reason) {
  return reason == AbortReason::Changed || reason == AbortReason::Unreadable;
}
inline bool is_known(RejectReason reason) {
  auto v = static_cast<std::uint16_t>(reason);
  return v >= 1 && v <= 11;
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
  return v >= 1 && v <= 7;
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
