#include "protocol/wire.hpp"

#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "protocol/byte_order.hpp"

namespace rdmax::proto {
namespace {

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
constexpr std::size_t kFileVerdictBytes = 4 + 1 + kSha256Bytes;
constexpr std::size_t kResumeBytes = 4 + 8;
constexpr std::size_t kHaveBytes = 4 + kSha256Bytes;
constexpr std::uint32_t kNanosecondsPerSecond = 1'000'000'000;

// Every message must fit one SEND buffer even at its maximum field lengths.
static_assert(kHeaderSize + kHello2FixedBytes + kMaxNameBytes <= kMaxMessageSize);
static_assert(kHeaderSize + kLengthPrefixBytes + kMaxSecretBytes <= kMaxMessageSize);
static_assert(kHeaderSize + kCodeAndTextFixedBytes + kMaxTextBytes <= kMaxMessageSize);
static_assert(kHeaderSize + kOfferFixedBytes + kMaxPathBytes <= kMaxMessageSize);

// The variant's alternatives are declared in wire-type order, so index + 1 is the type.
static_assert(std::variant_size_v<Message> == 22);
static_assert(std::is_same_v<std::variant_alternative_t<0, Message>, Hello>);
static_assert(std::is_same_v<std::variant_alternative_t<11, Message>, Error>);
static_assert(std::is_same_v<std::variant_alternative_t<12, Message>, Working>);
static_assert(std::is_same_v<std::variant_alternative_t<13, Message>, Open>);
static_assert(std::is_same_v<std::variant_alternative_t<19, Message>, FileVerdict>);
static_assert(std::is_same_v<std::variant_alternative_t<21, Message>, Have>);

std::size_t extensions_size(const std::vector<HelloExtension>& extensions) {
  std::size_t size = 0;
  for (const auto& e : extensions) size += kExtensionHeaderBytes + e.value.size();
  return size;
}

// Hello's and Open's rule for the extensions they know (docs/PROTOCOL.md 7.6).
const char* extensions_problem(const std::vector<HelloExtension>& extensions) {
  for (const auto& e : extensions)
    if (e.type == kExtensionResume && !e.value.empty()) return "resume extension with a value";
  return nullptr;
}

bool is_known(VerdictCode code) {
  return static_cast<std::uint8_t>(code) <= 3;
}
bool is_known(RejectReason reason) {
  auto v = static_cast<std::uint16_t>(reason);
  return v >= 1 && v <= 8;
}
bool is_known(ErrorCode code) {
  auto v = static_cast<std::uint16_t>(code);
  return v >= 1 && v <= 5;
}
bool is_known(DigestAlgorithm algorithm) {
  return algorithm == DigestAlgorithm::WholeFileSha256 ||
         algorithm == DigestAlgorithm::FsVeritySha256;
}
bool is_known(WorkPhase phase) {
  auto v = static_cast<std::uint8_t>(phase);
  return v >= 1 && v <= 3;
}
bool is_known(EntryKind kind) {
  return kind == EntryKind::File || kind == EntryKind::Directory;
}
bool is_zero(const Digest& digest) {
  for (std::uint8_t b : digest)
    if (b != 0) return false;
  return true;
}
bool is_known_version(std::uint16_t version) {
  return version == kVersion1 || version == kVersion2;
}

std::size_t payload_size(const Message& message, std::uint16_t version) {
  return std::visit(Overloaded{
                        [&](const Hello& m) {
                          return (version == kVersion1 ? kHelloFixedBytes : kHello2FixedBytes) +
                                 m.name.size() + extensions_size(m.extensions);
                        },
                        [](const Accept&) { return kAcceptBytes; },
                        [](const Chunk&) { return kChunkBytes; },
                        [](const Credit&) { return kCreditBytes; },
                        [](const Done&) { return kDoneBytes; },
                        [](const Verdict&) { return kVerdictBytes; },
                        [](const Id& m) { return kLengthPrefixBytes + m.id.size(); },
                        [](const Secret& m) { return kLengthPrefixBytes + m.secret.size(); },
                        [](const Denied&) { return kDeniedBytes; },
                        [](const Reject& m) { return kCodeAndTextFixedBytes + m.text.size(); },
                        [](const Bye&) { return std::size_t{0}; },
                        [](const Error& m) { return kCodeAndTextFixedBytes + m.text.size(); },
                        [](const Working&) { return kWorkingBytes; },
                        [](const Open& m) { return kOpenBytes + extensions_size(m.extensions); },
                        [](const Offer& m) { return kOfferFixedBytes + m.path.size(); },
                        [](const Take&) { return kTakeBytes; },
                        [](const Refuse& m) { return kRefuseFixedBytes + m.text.size(); },
                        [](const FileChunk&) { return kFileChunkBytes; },
                        [](const FileDone&) { return kFileDoneBytes; },
                        [](const FileVerdict&) { return kFileVerdictBytes; },
                        [](const Resume&) { return kResumeBytes; },
                        [](const Have&) { return kHaveBytes; },
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
  return version == kVersion1;
}

// The static field rules shared by encoder and decoder. Returns nullptr when the message is
// valid, otherwise a fixed description (no allocation: encode_into runs on the data path).
const char* field_problem(const Message& message) {
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
            if (!is_known(m.digest_algorithm)) return "Open.digest_algorithm unknown";
            if (m.keepalive_ms != 0 && !in_range(m.keepalive_ms, kMinKeepaliveMs, kMaxKeepaliveMs))
              return "Open.keepalive_ms not 0 or in 100..60000";
            if (m.entry_count == 0) return "Open.entry_count is 0";
            if (kOpenBytes + extensions_size(m.extensions) > kMaxMessageSize - kHeaderSize)
              return "Open does not fit one message";
            return extensions_problem(m.extensions);
          },
          [](const Offer& m) -> const char* {
            if (!is_known(m.kind)) return "Offer.kind unknown";
            if (m.mode > kMaxMode) return "Offer.mode above 07777";
            if (m.mtime_nsec >= kNanosecondsPerSecond) return "Offer.mtime_nsec not below 10^9";
            if (!in_range(m.path.size(), 1, kMaxPathBytes))
              return "Offer.path length not in 1..2048";
            if (m.kind == EntryKind::Directory && (m.size != 0 || !is_zero(m.digest)))
              return "Offer of a directory with a size or digest";
            return nullptr;
          },
          [](const Refuse& m) -> const char* {
            if (!is_known(m.reason)) return "Refuse.reason unknown";
            return m.text.size() > kMaxTextBytes ? "Refuse.text longer than 512" : nullptr;
          },
          [](const FileVerdict& m) -> const char* {
            return is_known(m.code) ? nullptr : "FileVerdict.code unknown";
          },
          [](const auto&) -> const char* { return nullptr; },  // no static rules
      },
      message);
}

void write_extensions(ByteWriter& w, const std::vector<HelloExtension>& extensions) {
  for (const auto& e : extensions) {
    w.u16(e.type);
    w.u16(static_cast<std::uint16_t>(e.value.size()));
    w.text(e.value);
  }
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
                 [&](const Accept& m) {
                   w.u64(m.region_addr);
                   w.u32(m.region_rkey);
                   w.u32(m.slot_size);
                   w.u32(m.slot_count);
                   w.u32(0);  // reserved
                 },
                 [&](const Chunk& m) {
                   w.u64(m.offset);
                   w.u32(m.length);
                   w.u32(m.slot);
                 },
                 [&](const Credit& m) {
                   w.u32(m.slot);
                   w.u32(m.rkey);
                 },
                 [&](const Done& m) { w.u64(m.total_bytes); },
                 [&](const Verdict& m) {
                   w.u8(static_cast<std::uint8_t>(m.code));
                   w.bytes(m.received_digest);
                 },
                 [&](const Id& m) {
                   w.u16(static_cast<std::uint16_t>(m.id.size()));
                   w.text(m.id);
                 },
                 [&](const Secret& m) {
                   w.u16(static_cast<std::uint16_t>(m.secret.size()));
                   w.text(m.secret);
                 },
                 [&](const Denied& m) { w.u16(m.attempts_left); },
                 [&](const Reject& m) {
                   w.u16(static_cast<std::uint16_t>(m.reason));
                   w.u16(static_cast<std::uint16_t>(m.text.size()));
                   w.text(m.text);
                 },
                 [&](const Bye&) {},
                 [&](const Error& m) {
                   w.u16(static_cast<std::uint16_t>(m.code));
                   w.u16(static_cast<std::uint16_t>(m.text.size()));
                   w.text(m.text);
                 },
                 [&](const Working& m) {
                   w.u8(static_cast<std::uint8_t>(m.phase));
                   w.u64(m.stored_bytes);
                 },
                 [&](const Open& m) {
                   w.u8(static_cast<std::uint8_t>(m.digest_algorithm));
                   w.u8(0);  // reserved
                   w.u16(0);
                   w.u32(m.keepalive_ms);
                   w.u32(m.chunk_size_hint);
                   w.u32(m.entry_count);
                   w.u64(m.total_bytes);
                   write_extensions(w, m.extensions);
                 },
                 [&](const Offer& m) {
                   w.u32(m.entry);
                   w.u8(static_cast<std::uint8_t>(m.kind));
                   w.u8(0);  // reserved
                   w.u16(m.mode);
                   w.u64(m.size);
                   w.u64(static_cast<std::uint64_t>(m.mtime_sec));  // two's complement
                   w.u32(m.mtime_nsec);
                   w.bytes(m.digest);
                   w.u16(static_cast<std::uint16_t>(m.path.size()));
                   w.text(m.path);
                 },
                 [&](const Take& m) { w.u32(m.entry); },
                 [&](const Refuse& m) {
                   w.u32(m.entry);
                   w.u16(static_cast<std::uint16_t>(m.reason));
                   w.u16(static_cast<std::uint16_t>(m.text.size()));
                   w.text(m.text);
                 },
                 [&](const FileChunk& m) {
                   w.u32(m.entry);
                   w.u32(m.slot);
                   w.u64(m.offset);
                   w.u32(m.length);
                 },
                 [&](const FileDone& m) {
                   w.u32(m.entry);
                   w.u64(m.total_bytes);
                 },
                 [&](const FileVerdict& m) {
                   w.u32(m.entry);
                   w.u8(static_cast<std::uint8_t>(m.code));
                   w.bytes(m.received_digest);
                 },
                 [&](const Resume& m) {
                   w.u32(m.entry);
                   w.u64(m.offset);
                 },
                 [&](const Have& m) {
                   w.u32(m.entry);
                   w.bytes(m.digest);
                 },
             },
             message);
}

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

// Extensions (type, length, value) up to the end of the payload: a Hello's or an Open's.
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

  switch (type) {
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
    case MessageType::Accept: {
      if (auto f = exact(kAcceptBytes)) return *f;
      Accept m;
      m.region_addr = r.u64();
      m.region_rkey = r.u32();
      m.slot_size = r.u32();
      m.slot_count = r.u32();
      const std::uint32_t reserved = r.u32();
      if (reserved != 0) return fail(DecodeError::BadReserved, "Accept.reserved is not zero");
      return m;
    }
    case MessageType::Chunk: {
      if (auto f = exact(kChunkBytes)) return *f;
      Chunk m;
      m.offset = r.u64();
      m.length = r.u32();
      m.slot = r.u32();
      return m;
    }
    case MessageType::Credit: {
      if (auto f = exact(kCreditBytes)) return *f;
      Credit m;
      m.slot = r.u32();
      m.rkey = r.u32();
      return m;
    }
    case MessageType::Done: {
      if (auto f = exact(kDoneBytes)) return *f;
      Done m;
      m.total_bytes = r.u64();
      return m;
    }
    case MessageType::Verdict: {
      if (auto f = exact(kVerdictBytes)) return *f;
      Verdict m;
      const std::uint8_t code = r.u8();
      m.code = static_cast<VerdictCode>(code);
      read_sha(m.received_digest);
      return m;
    }
    case MessageType::Id: {
      if (auto f = at_least(kLengthPrefixBytes)) return *f;
      Id m;
      if (auto f = read_counted(r, "Id.id", m.id)) return *f;
      return m;
    }
    case MessageType::Secret: {
      if (auto f = at_least(kLengthPrefixBytes)) return *f;
      Secret m;
      if (auto f = read_counted(r, "Secret.secret", m.secret)) return *f;
      return m;
    }
    case MessageType::Denied: {
      if (auto f = exact(kDeniedBytes)) return *f;
      Denied m;
      m.attempts_left = r.u16();
      return m;
    }
    case MessageType::Reject: {
      if (auto f = at_least(kCodeAndTextFixedBytes)) return *f;
      Reject m;
      const std::uint16_t reason = r.u16();
      m.reason = static_cast<RejectReason>(reason);
      if (auto f = read_counted(r, "Reject.text", m.text)) return *f;
      return m;
    }
    case MessageType::Bye: {
      if (auto f = exact(0)) return *f;
      return Bye{};
    }
    case MessageType::Error: {
      if (auto f = at_least(kCodeAndTextFixedBytes)) return *f;
      Error m;
      const std::uint16_t code = r.u16();
      m.code = static_cast<ErrorCode>(code);
      if (auto f = read_counted(r, "Error.text", m.text)) return *f;
      return m;
    }
    case MessageType::Working: {
      if (auto f = exact(kWorkingBytes)) return *f;
      Working m;
      const std::uint8_t phase = r.u8();
      m.stored_bytes = r.u64();
      m.phase = static_cast<WorkPhase>(phase);
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
      return m;
    }
    case MessageType::Offer: {
      if (auto f = at_least(kOfferFixedBytes)) return *f;
      Offer m;
      m.entry = r.u32();
      const std::uint8_t kind = r.u8();
      const std::uint8_t reserved = r.u8();
      m.mode = r.u16();
      m.size = r.u64();
      m.mtime_sec = static_cast<std::int64_t>(r.u64());
      m.mtime_nsec = r.u32();
      read_sha(m.digest);
      m.kind = static_cast<EntryKind>(kind);
      if (auto f = read_counted(r, "Offer.path", m.path)) return *f;
      if (reserved != 0) return fail(DecodeError::BadReserved, "Offer.reserved is not zero");
      return m;
    }
    case MessageType::Take: {
      if (auto f = exact(kTakeBytes)) return *f;
      Take m;
      m.entry = r.u32();
      return m;
    }
    case MessageType::Refuse: {
      if (auto f = at_least(kRefuseFixedBytes)) return *f;
      Refuse m;
      m.entry = r.u32();
      m.reason = static_cast<RejectReason>(r.u16());
      if (auto f = read_counted(r, "Refuse.text", m.text)) return *f;
      return m;
    }
    case MessageType::FileChunk: {
      if (auto f = exact(kFileChunkBytes)) return *f;
      FileChunk m;
      m.entry = r.u32();
      m.slot = r.u32();
      m.offset = r.u64();
      m.length = r.u32();
      return m;
    }
    case MessageType::FileDone: {
      if (auto f = exact(kFileDoneBytes)) return *f;
      FileDone m;
      m.entry = r.u32();
      m.total_bytes = r.u64();
      return m;
    }
    case MessageType::FileVerdict: {
      if (auto f = exact(kFileVerdictBytes)) return *f;
      FileVerdict m;
      m.entry = r.u32();
      m.code = static_cast<VerdictCode>(r.u8());
      read_sha(m.received_digest);
      return m;
    }
    case MessageType::Resume: {
      if (auto f = exact(kResumeBytes)) return *f;
      Resume m;
      m.entry = r.u32();
      m.offset = r.u64();
      return m;
    }
    case MessageType::Have: {
      if (auto f = exact(kHaveBytes)) return *f;
      Have m;
      m.entry = r.u32();
      read_sha(m.digest);
      return m;
    }
  }
  return fail(DecodeError::BadType, "unknown type");  // unreachable: type was checked
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
  return type >= 1 && type <= (version == kVersion1 ? 12 : 22);
}

std::uint32_t read_le32(std::span<const std::uint8_t> b, std::size_t at) {
  return std::uint32_t{b[at]} | std::uint32_t{b[at + 1]} << 8 | std::uint32_t{b[at + 2]} << 16 |
         std::uint32_t{b[at + 3]} << 24;
}

std::uint16_t read_le16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>(b[at] | b[at + 1] << 8);
}

}  // namespace

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
  }
  return result;
}

}  // namespace rdmax::proto
