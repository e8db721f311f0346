// The decoder of protocol/wire.hpp: the header, then each type's payload, checked against
// every static rule before anything is believed (docs/PROTOCOL.md 2, "Decoding rules").

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "protocol/wire_codec.hpp"

namespace rdmax::proto {
using namespace codec;
namespace {

using DecodeResult = std::variant<Message, DecodeFailure>;

DecodeFailure fail(DecodeError error, std::string detail) {
  return {error, std::move(detail)};
}

std::string as_string(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

DecodeFailure payload_length_mismatch(MessageType type, std::size_t expected, std::size_t got) {
  return fail(DecodeError::LengthMismatch, std::string(to_string(type)) + " payload must be " +
                                               std::to_string(expected) + " bytes, got " +
                                               std::to_string(got));
}

// Reads a u16 length then exactly that many bytes, which must be all that is left.
std::optional<DecodeFailure> read_counted(ByteReader& r, const char* field, std::string& out) {
  if (r.remaining() < 2)
    return fail(DecodeError::LengthMismatch, std::string(field) + " length missing");
  const std::uint16_t len = r.u16();
  if (len != r.remaining()) {
    return fail(DecodeError::LengthMismatch, std::string(field) + " length " + std::to_string(len) +
                                                 " but " + std::to_string(r.remaining()) +
                                                 " bytes follow");
  }
  out = as_string(r.take(len));
  return std::nullopt;
}

// Extensions (type, length, value) up to the end of the payload: a Hello's, an Open's or a
// Fetch's.
std::optional<DecodeFailure> read_extensions(ByteReader& r, const char* message,
                                             std::vector<HelloExtension>& out) {
  while (r.remaining() > 0) {
    if (r.remaining() < kExtensionHeaderBytes)
      return fail(DecodeError::LengthMismatch,
                  std::string(message) + " extension header truncated");
    HelloExtension e;
    e.type = r.u16();
    const std::uint16_t len = r.u16();
    if (len > r.remaining()) {
      return fail(DecodeError::LengthMismatch, std::string(message) + " extension length " +
                                                   std::to_string(len) + " but " +
                                                   std::to_string(r.remaining()) + " bytes follow");
    }
    e.value = as_string(r.take(len));
    out.push_back(std::move(e));
  }
  return std::nullopt;
}

// An Open's kExtensionDigestAlgorithm, when it is the only one and the last, one byte naming
// BLAKE3, beside a fixed field of 2, becomes Open.digest_algorithm (7.10). Any other use
// stays in Open.extensions, where field_problem() finds it: a BadField.
void lift_digest_algorithm(Open& m) {
  const auto named = [](const HelloExtension& e) { return e.type == kExtensionDigestAlgorithm; };
  if (std::count_if(m.extensions.begin(), m.extensions.end(), named) != 1) return;
  const auto it = std::find_if(m.extensions.begin(), m.extensions.end(), named);
  // Last, where the encoder writes it: the Open then encodes again to the bytes that came,
  // which the key proofs cover (7.8).
  if (std::next(it) != m.extensions.end() || it->value.size() != 1 ||
      m.digest_algorithm != kAlgorithmBesideExtension ||
      static_cast<DigestAlgorithm>(it->value[0]) != DigestAlgorithm::Blake3)
    return;
  m.digest_algorithm = DigestAlgorithm::Blake3;
  m.extensions.erase(it);
}

template <class I>
I read_int(ByteReader& r) {
  if constexpr (sizeof(I) == 1) return static_cast<I>(r.u8());
  if constexpr (sizeof(I) == 2) return static_cast<I>(r.u16());
  if constexpr (sizeof(I) == 4) return static_cast<I>(r.u32());
  if constexpr (sizeof(I) == 8) return static_cast<I>(r.u64());  // two's complement
}

// One field of a layout (protocol/wire_codec.hpp). A reserved field or flag that is not
// zero is only noted: every length is checked first (section 2, steps 8 and 9).
struct FieldReader {
  ByteReader& r;
  const char* reserved_problem = nullptr;
  std::optional<DecodeFailure> failure;

  template <class M, class T>
  void read(M& m, T M::*field) {
    if constexpr (std::is_enum_v<T>) {
      m.*field = static_cast<T>(read_int<std::underlying_type_t<T>>(r));
    } else if constexpr (std::is_integral_v<T>) {
      m.*field = read_int<T>(r);
    } else {
      const auto bytes = r.take((m.*field).size());
      std::copy(bytes.begin(), bytes.end(), (m.*field).begin());
    }
  }
  template <class M, std::size_t N>
  void read(M&, Reserved<N>) {
    for (std::size_t i = 0; i < N; ++i)
      if (r.u8() != 0) reserved_problem = "reserved is not zero";
  }
  template <class M>
  void read(M& m, FlagBits<M> bits) {
    const std::uint8_t flags = r.u8();
    const unsigned known = bits.bit2 != nullptr ? 7U : 3U;
    if ((flags & ~known) != 0) reserved_problem = "flags has a reserved bit set";
    m.*(bits.bit0) = (flags & 1U) != 0;
    m.*(bits.bit1) = (flags & 2U) != 0;
    if (bits.bit2 != nullptr) m.*(bits.bit2) = (flags & 4U) != 0;
  }
  template <class M>
  void read(M& m, Counted<M> counted) {
    failure = read_counted(r, counted.name, m.*(counted.member));
  }
};

template <HasLayout M>
DecodeResult read_layout(MessageType type, ByteReader& r, std::size_t size) {
  const std::string name = to_string(type);
  constexpr std::size_t fixed = fixed_size<M>();
  if (!counted<M>() && size != fixed) return payload_length_mismatch(type, fixed, size);
  if (size < fixed) {
    return fail(DecodeError::LengthMismatch, name + " payload needs " + std::to_string(fixed) +
                                                 "+ bytes, got " + std::to_string(size));
  }
  M m{};
  FieldReader fields{r, nullptr, std::nullopt};
  std::apply([&](auto... field) { (fields.read(m, field), ...); }, M::layout());
  if (fields.failure) return *fields.failure;
  if (fields.reserved_problem != nullptr)
    return fail(DecodeError::BadReserved, name + "." + fields.reserved_problem);
  return m;
}

// The payload of a type with a layout: the alternative of the Message at its index.
template <std::size_t... I>
DecodeResult read_by_layout(MessageType type, ByteReader& r, std::size_t size,
                            std::index_sequence<I...>) {
  DecodeResult result = fail(DecodeError::BadType, "unknown type");
  const auto index = static_cast<std::size_t>(type) - 1;
  (void)((index == I &&
          [&] {
            using M = std::variant_alternative_t<I, Message>;
            if constexpr (HasLayout<M>) result = read_layout<M>(type, r, size);
            return true;
          }()) ||
         ...);
  return result;
}

// Parses the payload of a known type. Field reads cannot fail once the size checks passed,
// but the reader checks bounds anyway so a mistake here cannot read past the buffer.
DecodeResult parse_payload(MessageType type, std::uint16_t version, ByteReader& r,
                           std::span<const std::uint8_t> payload) {
  auto exact = [&](std::size_t size) -> std::optional<DecodeFailure> {
    if (payload.size() != size) return payload_length_mismatch(type, size, payload.size());
    return std::nullopt;
  };
  auto at_least = [&](std::size_t size) -> std::optional<DecodeFailure> {
    if (payload.size() < size) {
      return fail(DecodeError::LengthMismatch, std::string(to_string(type)) + " payload needs " +
                                                   std::to_string(size) + "+ bytes, got " +
                                                   std::to_string(payload.size()));
    }
    return std::nullopt;
  };
  auto read_sha = [&](Digest& sha) {
    auto bytes = r.take(kSha256Bytes);
    for (std::size_t i = 0; i < bytes.size(); ++i) sha[i] = bytes[i];
  };
  // 12 bytes, or 44 with the digest: FileDone, Holds and Continue share the layout.
  static_assert(kFileDoneBytes == kHoldsBytes && kHoldsBytes == kContinueBytes);
  auto entry_and_digest = [&]<class M>(M m, std::uint64_t M::*value) -> DecodeResult {
    if (payload.size() != kFileDoneWithDigestBytes)
      if (auto f = exact(kFileDoneBytes)) return *f;
    m.entry = r.u32();
    m.*value = r.u64();
    if (payload.size() == kFileDoneWithDigestBytes) read_sha(m.digest.emplace());
    return m;
  };

  switch (type) {  // the messages written by hand; the others by their layouts
    case MessageType::Hello: {
      Hello m;
      if (version == kVersion1) {
        if (auto f = at_least(kHelloFixedBytes)) return *f;
        m.file_size = r.u64();
        read_sha(m.digest);
        m.chunk_size_hint = r.u32();
      } else {
        if (auto f = at_least(kHello2FixedBytes)) return *f;
        m.file_size = r.u64();
        const std::uint8_t algorithm = r.u8();
        const std::uint8_t reserved8 = r.u8();
        const std::uint16_t reserved16 = r.u16();
        read_sha(m.digest);
        m.chunk_size_hint = r.u32();
        m.keepalive_ms = r.u32();
        m.digest_algorithm = static_cast<DigestAlgorithm>(algorithm);
        // The name, then extensions (type, length, value) to the end of the payload.
        const std::uint16_t name_len = r.u16();
        if (name_len > r.remaining()) {
          return fail(DecodeError::LengthMismatch, "Hello.name length " + std::to_string(name_len) +
                                                       " but " + std::to_string(r.remaining()) +
                                                       " bytes follow");
        }
        m.name = as_string(r.take(name_len));
        if (auto f = read_extensions(r, "Hello", m.extensions)) return *f;
        // Section 2: every length (step 8) before the reserved fields (step 9).
        if (reserved8 != 0 || reserved16 != 0)
          return fail(DecodeError::BadReserved, "Hello.reserved is not zero");
        return m;
      }
      if (auto f = read_counted(r, "Hello.name", m.name)) return *f;
      return m;
    }
    case MessageType::Open: {
      if (auto f = at_least(kOpenBytes)) return *f;
      Open m;
      const std::uint8_t algorithm = r.u8();
      const std::uint8_t reserved8 = r.u8();
      const std::uint16_t reserved16 = r.u16();
      m.keepalive_ms = r.u32();
      m.chunk_size_hint = r.u32();
      m.entry_count = r.u32();
      m.total_bytes = r.u64();
      m.digest_algorithm = static_cast<DigestAlgorithm>(algorithm);
      if (auto f = read_extensions(r, "Open", m.extensions)) return *f;
      if (reserved8 != 0 || reserved16 != 0)
        return fail(DecodeError::BadReserved, "Open.reserved is not zero");
      // The fixed field never names what only the extension may (field_problem() below
      // cannot tell the two apart once lifted).
      if (!is_known(m.digest_algorithm))
        return fail(DecodeError::BadField, "Open.digest_algorithm unknown");
      lift_digest_algorithm(m);
      return m;
    }
    case MessageType::Fetch: {
      if (auto f = at_least(kFetchBytes)) return *f;
      Fetch m;
      m.keepalive_ms = r.u32();
      m.shard_index = r.u32();
      m.shard_count = r.u32();
      if (auto f = read_extensions(r, "Fetch", m.extensions)) return *f;
      return m;
    }
    // An entry and a u64, and in the longer form a digest (7.9): a FileDone's of an entry
    // offered with digest_at_end, an older receiver's Holds, a sender's proving Continue.
    case MessageType::FileDone:
      return entry_and_digest(FileDone{}, &FileDone::total_bytes);
    case MessageType::Holds:
      return entry_and_digest(Holds{}, &Holds::length);
    case MessageType::Continue:
      return entry_and_digest(Continue{}, &Continue::from);
    case MessageType::FileChunk: {
      // 20 bytes, or 44 with the seal of the chunk's bytes on a sealed connection (7.11).
      if (payload.size() != kFileChunkSealedBytes)
        if (auto f = exact(kFileChunkBytes)) return *f;
      FileChunk m;
      m.entry = r.u32();
      m.slot = r.u32();
      m.offset = r.u64();
      m.length = r.u32();
      if (payload.size() == kFileChunkSealedBytes) {
        ChunkSeal& seal = m.seal.emplace();
        seal.counter = r.u64();
        const auto tag = r.take(kSealTagBytes);
        std::copy(tag.begin(), tag.end(), seal.tag.begin());
      }
      return m;
    }
    default:
      return read_by_layout(type, r, payload.size(),
                            std::make_index_sequence<std::variant_size_v<Message>>{});
  }
}

DecodeResult decode_payload(MessageType type, std::uint16_t version,
                            std::span<const std::uint8_t> payload) {
  ByteReader r(payload);
  DecodeResult result = parse_payload(type, version, r, payload);
  // The size checks come before the reads, so this only catches a mistake in them.
  if (!r.ok()) return fail(DecodeError::LengthMismatch, "payload shorter than its fields");
  return result;
}

bool is_known_type(std::uint16_t type, std::uint16_t version) {
  return type >= 1 && type <= (version == kVersion1 ? kLastType1 : kLastType2);
}

std::uint32_t read_le32(std::span<const std::uint8_t> b, std::size_t at) {
  return std::uint32_t{b[at]} | std::uint32_t{b[at + 1]} << 8 | std::uint32_t{b[at + 2]} << 16 |
         std::uint32_t{b[at + 3]} << 24;
}

std::uint16_t read_le16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>(b[at] | b[at + 1] << 8);
}

}  // namespace

std::optional<std::uint16_t> peek_version(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 6 || read_le32(bytes, 0) != kMagic) return std::nullopt;
  return read_le16(bytes, 4);
}

std::variant<Message, DecodeFailure> decode(std::span<const std::uint8_t> bytes) {
  // The checks run in the order docs/PROTOCOL.md section 2 lists them.
  if (bytes.size() < kHeaderSize) {
    return fail(DecodeError::Short, std::to_string(bytes.size()) + " bytes, header needs 16");
  }
  if (read_le32(bytes, 0) != kMagic) return fail(DecodeError::BadMagic, "magic is not RMAX");
  const std::uint16_t version = read_le16(bytes, 4);
  if (!is_known_version(version)) {
    return fail(DecodeError::BadVersion,
                "version " + std::to_string(version) + ", expected 1 or 2");
  }
  if (read_le32(bytes, 12) != 0) return fail(DecodeError::BadReserved, "header.reserved is not 0");
  const std::uint16_t raw_type = read_le16(bytes, 6);
  if (!is_known_type(raw_type, version))
    return fail(DecodeError::BadType, "type " + std::to_string(raw_type));
  const auto type = static_cast<MessageType>(raw_type);
  const std::uint64_t claimed = kHeaderSize + std::uint64_t{read_le32(bytes, 8)};
  if (claimed > kMaxMessageSize || bytes.size() > kMaxMessageSize) {
    return fail(DecodeError::TooLarge, "message of " + std::to_string(claimed) + " claimed / " +
                                           std::to_string(bytes.size()) + " received bytes");
  }
  if (claimed != bytes.size()) {
    return fail(DecodeError::LengthMismatch, "header says " + std::to_string(claimed) +
                                                 " bytes, received " +
                                                 std::to_string(bytes.size()));
  }

  DecodeResult result = decode_payload(type, version, bytes.subspan(kHeaderSize));
  if (const auto* message = std::get_if<Message>(&result)) {
    if (const char* problem = field_problem(*message)) return fail(DecodeError::BadField, problem);
    // The reasons and the code version 2 added (sender keys) do not exist in version 1.
    if (version == kVersion1) {
      if (const auto* reject = std::get_if<Reject>(message); reject && !is_version1(reject->reason))
        return fail(DecodeError::BadField, "Reject.reason unknown in version 1");
      if (const auto* error = std::get_if<Error>(message); error && !is_version1(error->code))
        return fail(DecodeError::BadField, "Error.code unknown in version 1");
    }
  }
  return result;
}

}  // namespace rdmax::proto
