// The encoder of protocol/wire.hpp: a message's payload size, the rules a message must obey
// to be encoded at all (the decoder's, so that whatever is encoded decodes back to itself),
// and the bytes.

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "protocol/wire_codec.hpp"

namespace rdmax::proto {
using namespace codec;
namespace {

std::size_t payload_size(const Message& message, std::uint16_t version) {
  return std::visit(
      Overloaded{
          [&](const Hello& m) {
            return (version == kVersion1 ? kHelloFixedBytes : kHello2FixedBytes) + m.name.size() +
                   extensions_size(m.extensions);
          },
          [](const Open& m) { return open_size(m); },
          [](const Fetch& m) { return kFetchBytes + extensions_size(m.extensions); },
          [](const FileDone& m) { return m.digest ? kFileDoneWithDigestBytes : kFileDoneBytes; },
          [](const FileChunk& m) { return m.seal ? kFileChunkSealedBytes : kFileChunkBytes; },
          [](const Holds& m) { return m.digest ? kHoldsWithDigestBytes : kHoldsBytes; },
          [](const Continue& m) { return m.digest ? kContinueWithDigestBytes : kContinueBytes; },
          [](const auto& m) { return layout_size(m); },
      },
      message);
}

bool in_range(std::size_t size, std::size_t min, std::size_t max) {
  return size >= min && size <= max;
}

// Can `version` express this message at all? Version 1 has no Working and no sessions, and
// its Hello has no room for an algorithm other than SHA-256 or for keepalives.
bool expressible(const Message& message, std::uint16_t version) {
  if (version == kVersion2) return true;
  // Working and the session messages come after version 1's twelve types.
  if (message.index() >= 12) return false;
  if (const auto* hello = std::get_if<Hello>(&message))
    return hello->digest_algorithm == DigestAlgorithm::WholeFileSha256 &&
           hello->keepalive_ms == 0 && hello->extensions.empty();
  if (const auto* reject = std::get_if<Reject>(&message)) return is_version1(reject->reason);
  if (const auto* error = std::get_if<Error>(&message)) return is_version1(error->code);
  return version == kVersion1;
}

void write_extensions(ByteWriter& w, const std::vector<HelloExtension>& extensions) {
  for (const auto& e : extensions) {
    w.u16(e.type);
    w.u16(static_cast<std::uint16_t>(e.value.size()));
    w.text(e.value);
  }
}

// An Open's algorithm that only the extension can name goes there, after the others; the
// fixed field then says fs-verity (PROTOCOL.md 7.10).
void write_open(ByteWriter& w, const Open& m) {
  const bool named = !is_known(m.digest_algorithm);
  w.u8(static_cast<std::uint8_t>(named ? kAlgorithmBesideExtension : m.digest_algorithm));
  w.u8(0);  // reserved
  w.u16(0);
  w.u32(m.keepalive_ms);
  w.u32(m.chunk_size_hint);
  w.u32(m.entry_count);
  w.u64(m.total_bytes);
  write_extensions(w, m.extensions);
  if (named) {
    w.u16(kExtensionDigestAlgorithm);
    w.u16(1);
    w.u8(static_cast<std::uint8_t>(m.digest_algorithm));
  }
}

template <class I>
void write_int(ByteWriter& w, I value) {
  const auto v = static_cast<std::make_unsigned_t<I>>(value);  // two's complement
  if constexpr (sizeof(I) == 1) w.u8(v);
  if constexpr (sizeof(I) == 2) w.u16(v);
  if constexpr (sizeof(I) == 4) w.u32(v);
  if constexpr (sizeof(I) == 8) w.u64(v);
}

template <class M, class T>
void write_field(ByteWriter& w, const M& m, T M::*field) {
  if constexpr (std::is_enum_v<T>)
    write_int(w, static_cast<std::underlying_type_t<T>>(m.*field));
  else if constexpr (std::is_integral_v<T>)
    write_int(w, m.*field);
  else
    w.bytes(m.*field);  // a byte array
}
template <class M, std::size_t N>
void write_field(ByteWriter& w, const M&, Reserved<N>) {
  for (std::size_t i = 0; i < N; ++i) w.u8(0);
}
template <class M>
void write_field(ByteWriter& w, const M& m, FlagBits<M> bits) {
  w.u8(static_cast<std::uint8_t>((m.*(bits.bit0) ? 1U : 0U) | (m.*(bits.bit1) ? 2U : 0U) |
                                 (bits.bit2 != nullptr && m.*(bits.bit2) ? 4U : 0U)));
}
template <class M>
void write_field(ByteWriter& w, const M& m, Counted<M> counted) {
  const std::string& text = m.*(counted.member);
  w.u16(static_cast<std::uint16_t>(text.size()));
  w.text(text);
}

void write_payload(ByteWriter& w, const Message& message, std::uint16_t version) {
  std::visit(Overloaded{
                 [&](const Hello& m) {
                   w.u64(m.file_size);
                   if (version == kVersion1) {
                     w.bytes(m.digest);
                     w.u32(m.chunk_size_hint);
                   } else {
                     w.u8(static_cast<std::uint8_t>(m.digest_algorithm));
                     w.u8(0);  // reserved
                     w.u16(0);
                     w.bytes(m.digest);
                     w.u32(m.chunk_size_hint);
                     w.u32(m.keepalive_ms);
                   }
                   w.u16(static_cast<std::uint16_t>(m.name.size()));
                   w.text(m.name);
                   write_extensions(w, m.extensions);  // version 2 only (expressible)
                 },
                 [&](const Open& m) { write_open(w, m); },
                 [&](const Fetch& m) {
                   w.u32(m.keepalive_ms);
                   w.u32(m.shard_index);
                   w.u32(m.shard_count);
                   write_extensions(w, m.extensions);
                 },
                 [&](const FileDone& m) {
                   w.u32(m.entry);
                   w.u64(m.total_bytes);
                   if (m.digest) w.bytes(*m.digest);
                 },
                 [&](const Holds& m) {
                   w.u32(m.entry);
                   w.u64(m.length);
                   if (m.digest) w.bytes(*m.digest);
                 },
                 [&](const Continue& m) {
                   w.u32(m.entry);
                   w.u64(m.from);
                   if (m.digest) w.bytes(*m.digest);
                 },
                 [&](const FileChunk& m) {
                   w.u32(m.entry);
                   w.u32(m.slot);
                   w.u64(m.offset);
                   w.u32(m.length);
                   if (m.seal) {
                     w.u64(m.seal->counter);
                     w.bytes(m.seal->tag);
                   }
                 },
                 [&](const auto& m) {
                   std::apply([&](auto... field) { (write_field(w, m, field), ...); },
                              std::decay_t<decltype(m)>::layout());
                 },
             },
             message);
}

}  // namespace

// The static field rules shared by encoder and decoder. Returns nullptr when the message is
// valid, otherwise a fixed description (no allocation: encode_into runs on the data path).
const char* codec::field_problem(const Message& message) {
  return std::visit(
      Overloaded{
          [](const Hello& m) -> const char* {
            if (!in_range(m.name.size(), 1, kMaxNameBytes))
              return "Hello.name length not in 1..255";
            if (!is_known(m.digest_algorithm)) return "Hello.digest_algorithm unknown";
            if (m.keepalive_ms != 0 && !in_range(m.keepalive_ms, kMinKeepaliveMs, kMaxKeepaliveMs))
              return "Hello.keepalive_ms not 0 or in 100..60000";
            if (kHello2FixedBytes + m.name.size() + extensions_size(m.extensions) >
                kMaxMessageSize - kHeaderSize)
              return "Hello does not fit one message";
            return extensions_problem(m.extensions);
          },
          [](const Accept& m) -> const char* {
            if (m.slot_size < kMinSlotSize) return "Accept.slot_size below 4096";
            if (m.slot_count < 1 || m.slot_count > kMaxSlotCount)
              return "Accept.slot_count not in 1..64";
            const std::uint64_t region_len = std::uint64_t{m.slot_size} * m.slot_count;
            if (m.region_addr > std::numeric_limits<std::uint64_t>::max() - region_len)
              return "Accept region_addr + slot_size * slot_count overflows 64 bits";
            return nullptr;
          },
          [](const Verdict& m) -> const char* {
            return is_known(m.code) ? nullptr : "Verdict.code unknown";
          },
          [](const Id& m) -> const char* {
            return in_range(m.id.size(), 1, kMaxIdBytes) ? nullptr : "Id.id length not in 1..256";
          },
          [](const Secret& m) -> const char* {
            return in_range(m.secret.size(), 1, kMaxSecretBytes)
                       ? nullptr
                       : "Secret.secret length not in 1..1024";
          },
          [](const Reject& m) -> const char* {
            if (!is_known(m.reason)) return "Reject.reason unknown";
            return m.text.size() > kMaxTextBytes ? "Reject.text longer than 512" : nullptr;
          },
          [](const Error& m) -> const char* {
            if (!is_known(m.code)) return "Error.code unknown";
            return m.text.size() > kMaxTextBytes ? "Error.text longer than 512" : nullptr;
          },
          [](const Working& m) -> const char* {
            return is_known(m.phase) ? nullptr : "Working.phase unknown";
          },
          [](const Open& m) -> const char* {
            if (!is_known_for_session(m.digest_algorithm)) return "Open.digest_algorithm unknown";
            if (m.keepalive_ms != 0 && !in_range(m.keepalive_ms, kMinKeepaliveMs, kMaxKeepaliveMs))
              return "Open.keepalive_ms not 0 or in 100..60000";
            // A connection that only joins a striped file offers nothing of its own (7.12).
            const bool member = std::any_of(
                m.extensions.begin(), m.extensions.end(),
                [](const HelloExtension& e) { return e.type == kExtensionStripeGroup; });
            if (m.entry_count == 0 && !member)
              return "Open.entry_count is 0 without a stripe group";
            if (open_size(m) > kMaxMessageSize - kHeaderSize)
              return "Open does not fit one message";
            return open_extensions_problem(m);
          },
          [](const Offer& m) -> const char* {
            if (!is_known(m.kind)) return "Offer.kind unknown";
            if (m.mode > kMaxMode) return "Offer.mode above 07777";
            if (m.mtime_nsec >= kNanosecondsPerSecond) return "Offer.mtime_nsec not below 10^9";
            if (!in_range(m.path.size(), 1, kMaxPathBytes))
              return "Offer.path length not in 1..2048";
            if (m.kind == EntryKind::Directory && (m.size != 0 || !is_zero(m.digest)))
              return "Offer of a directory with a size or digest";
            if (m.digest_at_end && m.kind == EntryKind::Directory)
              return "Offer of a directory with digest_at_end";
            if (m.digest_at_end && !is_zero(m.digest))
              return "Offer with digest_at_end and a digest";
            if (m.striped && m.kind == EntryKind::Directory) return "Offer of a directory striped";
            return nullptr;
          },
          [](const Refuse& m) -> const char* {
            // SealRequired judges a whole connection, at its Open (7.11): never an entry.
            if (!is_known(m.reason) || m.reason == RejectReason::SealRequired)
              return "Refuse.reason not in 1..10";
            return m.text.size() > kMaxTextBytes ? "Refuse.text longer than 512" : nullptr;
          },
          [](const FileVerdict& m) -> const char* {
            return is_known_for_entry(m.code) ? nullptr : "FileVerdict.code unknown";
          },
          [](const FileAbort& m) -> const char* {
            return is_known(m.reason) ? nullptr : "FileAbort.reason unknown";
          },
          [](const Sealed& m) -> const char* {
            return m.box.size() < kSealedMinBox ? "Sealed.box shorter than 32 bytes" : nullptr;
          },
          [](const Fetch& m) -> const char* {
            if (m.keepalive_ms != 0 && !in_range(m.keepalive_ms, kMinKeepaliveMs, kMaxKeepaliveMs))
              return "Fetch.keepalive_ms not 0 or in 100..60000";
            if (!in_range(m.shard_count, 1, kMaxShards) || m.shard_index >= m.shard_count)
              return "Fetch.shard_count not in 1..1000000, or shard_index not below it";
            if (kFetchBytes + extensions_size(m.extensions) > kMaxMessageSize - kHeaderSize)
              return "Fetch does not fit one message";
            return extensions_problem(m.extensions);
          },
          [](const Want& m) -> const char* {
            return in_range(m.path.size(), 1, kMaxPathBytes) ? nullptr
                                                             : "Want.path length not in 1..2048";
          },
          [](const Stripes& m) -> const char* {
            return m.max_members < 2 || m.max_members > kMaxStripeMembers
                       ? "Stripes.max_members not in 2..64"
                       : nullptr;
          },
          [](const auto&) -> const char* { return nullptr; },  // no static rules
      },
      message);
}

MessageType type_of(const Message& message) {
  return static_cast<MessageType>(message.index() + 1);
}

std::size_t encoded_size(const Message& message, std::uint16_t version) {
  return kHeaderSize + payload_size(message, version);
}

std::vector<std::uint8_t> encode(const Message& message, std::uint16_t version) {
  if (encoded_size(message, version) > kMaxMessageSize) return {};
  std::vector<std::uint8_t> out(encoded_size(message, version));
  out.resize(encode_into(message, out, version));
  return out;
}

std::size_t encode_into(const Message& message, std::span<std::uint8_t> out,
                        std::uint16_t version) {
  if (!is_known_version(version) || !expressible(message, version)) return 0;
  if (field_problem(message) != nullptr) return 0;
  const std::size_t size = encoded_size(message, version);
  if (size > out.size() || size > kMaxMessageSize) return 0;

  ByteWriter w(out);
  w.u32(kMagic);
  w.u16(version);
  w.u16(static_cast<std::uint16_t>(type_of(message)));
  w.u32(static_cast<std::uint32_t>(size - kHeaderSize));
  w.u32(0);  // reserved
  write_payload(w, message, version);
  return w.written();
}

}  // namespace rdmax::proto
