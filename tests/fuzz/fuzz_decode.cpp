// Fuzz target for the wire codec (protocol/wire.hpp), in both directions:
//  - arbitrary bytes into decode() and peek_version(): nothing may crash, every failure must
//    be the one docs/PROTOCOL.md section 2 assigns, and whatever decodes must re-encode to the
//    very same bytes (the format has exactly one encoding per message) and decode back equal;
//  - the same bytes read as the fields of a message for encode(): whatever the encoder accepts
//    must decode back to the message it was given ("a message that was encoded always decodes
//    back to itself", wire.hpp).

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "protocol/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace rdmax::proto;
using Bytes = std::span<const std::uint8_t>;

std::uint32_t le32(Bytes b, std::size_t at) {
  return std::uint32_t{b[at]} | std::uint32_t{b[at + 1]} << 8 | std::uint32_t{b[at + 2]} << 16 |
         std::uint32_t{b[at + 3]} << 24;
}

std::uint16_t le16(Bytes b, std::size_t at) {
  return static_cast<std::uint16_t>(b[at] | b[at + 1] << 8);
}

bool known(const char* name) {
  return std::strncmp(name, "Unknown", 7) != 0;
}

// The enum codes inside a decoded message passed the decoder's static rules, so each must
// have a name: a code the decoder lets through without one would reach logs as "Unknown...".
bool codes_known(const Message& m) {
  if (const auto* v = std::get_if<Verdict>(&m)) return known(to_string(v->code));
  if (const auto* r = std::get_if<Reject>(&m)) return known(to_string(r->reason));
  if (const auto* e = std::get_if<Error>(&m)) return known(to_string(e->code));
  if (const auto* w = std::get_if<Working>(&m)) return known(to_string(w->phase));
  if (const auto* h = std::get_if<Hello>(&m)) return known(to_string(h->digest_algorithm));
  if (const auto* o = std::get_if<Open>(&m)) return known(to_string(o->digest_algorithm));
  if (const auto* o = std::get_if<Offer>(&m)) return known(to_string(o->kind));
  if (const auto* r = std::get_if<Refuse>(&m)) return known(to_string(r->reason));
  if (const auto* v = std::get_if<FileVerdict>(&m)) return known(to_string(v->code));
  return true;
}

bool equal(Bytes a, Bytes b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// A failed decode must report the first rule the bytes break, in the documented order.
void check_failure(Bytes bytes, DecodeError error, std::optional<std::uint16_t> version) {
  FUZZ_CHECK(known(to_string(error)));
  if (error == DecodeError::Short) {
    FUZZ_CHECK(bytes.size() < kHeaderSize);
    return;
  }
  FUZZ_CHECK(bytes.size() >= kHeaderSize);
  if (error == DecodeError::BadMagic) {
    FUZZ_CHECK(!version.has_value());
    return;
  }
  FUZZ_CHECK(version.has_value());
  if (error == DecodeError::BadVersion) {
    FUZZ_CHECK(*version != kVersion1 && *version != kVersion2);
    return;
  }
  FUZZ_CHECK(*version == kVersion1 || *version == kVersion2);
  const std::uint16_t type = le16(bytes, 6);
  if (error == DecodeError::BadType)
    FUZZ_CHECK(type < 1 || type > (*version == kVersion1 ? 12 : std::variant_size_v<Message>));
  if (error == DecodeError::TooLarge) {
    FUZZ_CHECK(bytes.size() > kMaxMessageSize ||
               kHeaderSize + std::uint64_t{le32(bytes, 8)} > kMaxMessageSize);
  }
  // The payload checks run only once the size is known to fit one SEND buffer.
  if (error == DecodeError::LengthMismatch || error == DecodeError::BadField) {
    FUZZ_CHECK(bytes.size() <= kMaxMessageSize);
  }
}

void check_decoded(Bytes bytes, const Message& m, std::optional<std::uint16_t> version) {
  FUZZ_CHECK(version == kVersion1 || version == kVersion2);
  const std::uint16_t v = *version;
  FUZZ_CHECK(static_cast<std::uint16_t>(type_of(m)) == le16(bytes, 6));
  FUZZ_CHECK(known(to_string(type_of(m))));
  FUZZ_CHECK(codes_known(m));
  // Working and every message after version 1's twelve exist in version 2 only.
  if (v == kVersion1) FUZZ_CHECK(m.index() < 12);
  FUZZ_CHECK(encoded_size(m, v) == bytes.size());

  const std::vector<std::uint8_t> again = encode(m, v);
  FUZZ_CHECK(equal(again, bytes));

  // encode_into must fill an exact-size buffer and refuse one a byte short, never overrun it.
  std::vector<std::uint8_t> buffer(bytes.size());
  FUZZ_CHECK(encode_into(m, buffer, v) == bytes.size());
  FUZZ_CHECK(equal(buffer, bytes));
  FUZZ_CHECK(encode_into(m, std::span(buffer).first(bytes.size() - 1), v) == 0);

  const auto back = decode(again);
  const auto* message = std::get_if<Message>(&back);
  FUZZ_CHECK(message != nullptr && *message == m);
}

void check_decode(Bytes bytes) {
  const std::optional<std::uint16_t> version = peek_version(bytes);
  if (version) FUZZ_CHECK(bytes.size() >= 6 && le32(bytes, 0) == kMagic);

  const auto result = decode(bytes);
  if (const auto* failure = std::get_if<DecodeFailure>(&result)) {
    check_failure(bytes, failure->error, version);
  } else {
    check_decoded(bytes, std::get<Message>(result), version);
  }
}

// Any field value, including out-of-range enum codes and over-long strings: the encoder must
// refuse what the decoder would reject rather than produce it.
Message make_message(FuzzedDataProvider& in) {
  auto sha = [&] {
    Digest sha{};
    for (auto& b : sha) b = in.ConsumeIntegral<std::uint8_t>();
    return sha;
  };
  auto text = [&] { return in.ConsumeRandomLengthString(2 * kMaxMessageSize); };
  switch (in.ConsumeIntegralInRange<int>(1, 22)) {
    case 1: {
      Hello m{in.ConsumeIntegral<std::uint64_t>(), sha(), in.ConsumeIntegral<std::uint32_t>(), {}};
      m.name = text();
      m.digest_algorithm = static_cast<DigestAlgorithm>(in.ConsumeIntegral<std::uint8_t>());
      m.keepalive_ms = in.ConsumeIntegral<std::uint32_t>();
      return m;
    }
    case 13:
      return Working{static_cast<WorkPhase>(in.ConsumeIntegral<std::uint8_t>()),
                     in.ConsumeIntegral<std::uint64_t>()};
    case 2:
      return Accept{in.ConsumeIntegral<std::uint64_t>(), in.ConsumeIntegral<std::uint32_t>(),
                    in.ConsumeIntegral<std::uint32_t>(), in.ConsumeIntegral<std::uint32_t>()};
    case 3:
      return Chunk{in.ConsumeIntegral<std::uint64_t>(), in.ConsumeIntegral<std::uint32_t>(),
                   in.ConsumeIntegral<std::uint32_t>()};
    case 4:
      return Credit{in.ConsumeIntegral<std::uint32_t>(), in.ConsumeIntegral<std::uint32_t>()};
    case 5:
      return Done{in.ConsumeIntegral<std::uint64_t>()};
    case 6: {
      const auto code = static_cast<VerdictCode>(in.ConsumeIntegral<std::uint8_t>());
      return Verdict{code, sha()};
    }
    case 7:
      return Id{text()};
    case 8:
      return Secret{text()};
    case 9:
      return Denied{in.ConsumeIntegral<std::uint16_t>()};
    case 10: {
      const auto reason = static_cast<RejectReason>(in.ConsumeIntegral<std::uint16_t>());
      return Reject{reason, text()};
    }
    case 11:
      return Bye{};
    case 14: {
      Open m;
      m.digest_algorithm = static_cast<DigestAlgorithm>(in.ConsumeIntegral<std::uint8_t>());
      m.keepalive_ms = in.ConsumeIntegral<std::uint32_t>();
      m.chunk_size_hint = in.ConsumeIntegral<std::uint32_t>();
      m.entry_count = in.ConsumeIntegral<std::uint32_t>();
      m.total_bytes = in.ConsumeIntegral<std::uint64_t>();
      return m;
    }
    case 15: {
      Offer m;
      m.entry = in.ConsumeIntegral<std::uint32_t>();
      m.kind = static_cast<EntryKind>(in.ConsumeIntegral<std::uint8_t>());
      m.mode = in.ConsumeIntegral<std::uint16_t>();
      m.size = in.ConsumeIntegral<std::uint64_t>();
      m.mtime_sec = in.ConsumeIntegral<std::int64_t>();
      m.mtime_nsec = in.ConsumeIntegral<std::uint32_t>();
      m.digest = in.ConsumeBool() ? Digest{} : sha();
      m.path = text();
      return m;
    }
    case 16:
      return Take{in.ConsumeIntegral<std::uint32_t>()};
    case 17: {
      Refuse m;
      m.entry = in.ConsumeIntegral<std::uint32_t>();
      m.reason = static_cast<RejectReason>(in.ConsumeIntegral<std::uint16_t>());
      m.text = text();
      return m;
    }
    case 18:
      return FileChunk{in.ConsumeIntegral<std::uint32_t>(), in.ConsumeIntegral<std::uint32_t>(),
                       in.ConsumeIntegral<std::uint64_t>(), in.ConsumeIntegral<std::uint32_t>()};
    case 19:
      return FileDone{in.ConsumeIntegral<std::uint32_t>(), in.ConsumeIntegral<std::uint64_t>()};
    case 20: {
      FileVerdict m;
      m.entry = in.ConsumeIntegral<std::uint32_t>();
      m.code = static_cast<VerdictCode>(in.ConsumeIntegral<std::uint8_t>());
      m.received_digest = sha();
      return m;
    }
    case 21:
      return Resume{in.ConsumeIntegral<std::uint32_t>(), in.ConsumeIntegral<std::uint64_t>()};
    case 22:
      return Have{in.ConsumeIntegral<std::uint32_t>(), sha()};
    default: {
      const auto code = static_cast<ErrorCode>(in.ConsumeIntegral<std::uint16_t>());
      return Error{code, text()};
    }
  }
}

void check_encode(FuzzedDataProvider& in) {
  const std::uint16_t version = in.ConsumeBool() ? kVersion1 : kVersion2;
  const Message m = make_message(in);
  const std::vector<std::uint8_t> bytes = encode(m, version);
  // Version 1 has no Working and no session messages: the encoder must refuse them.
  if (version == kVersion1 && m.index() >= 12) FUZZ_CHECK(bytes.empty());
  // encode and encode_into must agree on refusing and on the bytes.
  std::vector<std::uint8_t> buffer(kMaxMessageSize + 1);
  const std::size_t written = encode_into(m, buffer, version);
  FUZZ_CHECK(written == bytes.size());
  FUZZ_CHECK(equal(std::span(buffer).first(written), bytes));
  if (bytes.empty()) return;

  FUZZ_CHECK(bytes.size() == encoded_size(m, version) && bytes.size() <= kMaxMessageSize);
  FUZZ_CHECK(peek_version(bytes) == version);
  const auto back = decode(bytes);
  const auto* message = std::get_if<Message>(&back);
  FUZZ_CHECK(message != nullptr && *message == m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check_decode(Bytes(data, size));
  FuzzedDataProvider in(data, size);
  check_encode(in);
  return 0;
}
