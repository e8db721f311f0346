// Fuzz target for the parsers of untrusted or hand-written text in protocol/: the file-name
// rule (names come from the network), the escaping of names for logs, the secrets file and
// size arguments. Each is checked against a second, deliberately different implementation
// written from its header comment, so a fuzzer finds disagreements, not only crashes. The
// whole input goes to every parser.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/names.hpp"
#include "protocol/secrets.hpp"
#include "protocol/sender_keys.hpp"
#include "protocol/sizes.hpp"
#include "protocol/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace rdmax::proto;

// Decodes code points and checks their values, where names.cpp checks byte ranges per lead
// byte (Unicode table 3-7): two routes to "well-formed UTF-8". nullopt if s is not.
std::optional<std::vector<std::uint32_t>> decode_utf8(std::string_view s) {
  static constexpr std::uint32_t kSmallestOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  std::vector<std::uint32_t> code_points;
  for (std::size_t i = 0; i < s.size();) {
    const auto lead = static_cast<std::uint8_t>(s[i]);
    std::size_t length = 0;
    std::uint32_t cp = 0;
    if (lead < 0x80) {
      length = 1;
      cp = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2;
      cp = lead & 0x1Fu;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3;
      cp = lead & 0x0Fu;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4;
      cp = lead & 0x07u;
    } else {
      return std::nullopt;
    }
    if (s.size() - i < length) return std::nullopt;
    for (std::size_t k = 1; k < length; ++k) {
      const auto b = static_cast<std::uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return std::nullopt;
      cp = cp << 6 | (b & 0x3Fu);
    }
    if (cp < kSmallestOfLength[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return std::nullopt;
    }
    code_points.push_back(cp);
    i += length;
  }
  return code_points;
}

bool valid_utf8(std::string_view s) {
  return decode_utf8(s).has_value();
}

void check_name(std::string_view name, NameBytes rule) {
  const std::optional<NameError> error = check_file_name(name, rule);
  bool forbidden_byte = false;
  for (char c : name) {
    const auto b = static_cast<std::uint8_t>(c);
    const bool control = rule == NameBytes::Printable ? b < 0x20 || b == 0x7F : b == 0;
    forbidden_byte |= control || c == '/' || c == '\\';
  }
  const bool acceptable = !name.empty() && name.size() <= kMaxNameBytes && name != "." &&
                          name != ".." && !forbidden_byte && valid_utf8(name);
  FUZZ_CHECK(acceptable == !error.has_value());
  if (!error) return;
  FUZZ_CHECK(std::string_view(to_string(*error)) != "UnknownNameError");
  // The whole-name problems take precedence over any byte-level one.
  FUZZ_CHECK((*error == NameError::Empty) == name.empty());
  if (!name.empty()) FUZZ_CHECK((*error == NameError::TooLong) == (name.size() > kMaxNameBytes));
}

// The characters names.hpp says escape_for_log never lets through, as a table.
bool escaped_in_logs(std::uint32_t cp) {
  static constexpr std::uint32_t kRanges[][2] = {
      {0x00, 0x1F},     {0x5C, 0x5C},     {0x7F, 0x9F},     {0x061C, 0x061C},
      {0x200E, 0x200F}, {0x2028, 0x202E}, {0x2066, 0x2069},
  };
  for (const auto& range : kRanges) {
    if (cp >= range[0] && cp <= range[1]) return true;
  }
  return false;
}

bool is_lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

void check_escape_for_log(std::string_view text) {
  const std::string out = escape_for_log(text);
  // Valid UTF-8 with none of the escaped characters, except backslashes that start \xNN.
  const auto code_points = decode_utf8(out);
  FUZZ_CHECK(code_points.has_value());
  for (std::uint32_t cp : *code_points) FUZZ_CHECK(cp == '\\' || !escaped_in_logs(cp));
  for (std::size_t i = out.find('\\'); i != std::string::npos; i = out.find('\\', i + 1)) {
    FUZZ_CHECK(i + 3 < out.size() && out[i + 1] == 'x' && is_lower_hex(out[i + 2]) &&
               is_lower_hex(out[i + 3]));
  }
  // Text that needs no escape is logged as it is.
  const auto input = decode_utf8(text);
  bool clean = input.has_value();
  if (clean) {
    for (std::uint32_t cp : *input) clean &= !escaped_in_logs(cp);
  }
  if (clean) FUZZ_CHECK(out == text);
}

// The header's description of a secrets line, implemented separately: split on '\n', drop
// one trailing '\r', split on runs of blanks.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = std::string_view::npos;
  for (std::size_t i = 0; i <= line.size(); ++i) {
    const bool blank = i == line.size() || line[i] == ' ' || line[i] == '\t';
    if (blank && start != std::string_view::npos) {
      fields.push_back(line.substr(start, i - start));
      start = std::string_view::npos;
    } else if (!blank && start == std::string_view::npos) {
      start = i;
    }
  }
  return fields;
}

void check_secrets(std::string_view text) {
  std::string_view body = text;
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);  // a UTF-8 BOM is skipped
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start < body.size();) {
    std::size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }

  auto parsed = SecretStore::parse(text);
  if (const auto* error = std::get_if<SecretsParseError>(&parsed)) {
    FUZZ_CHECK(error->line >= 1 && error->line <= lines.size());
    return;
  }
  const SecretStore& store = std::get<SecretStore>(parsed);
  // A file that parsed holds exactly its "ID SECRET" lines, each retrievable, and has no
  // control character but tab on any line, comments included.
  std::size_t entries = 0;
  for (std::string_view line : lines) {
    for (char c : line) {
      const auto b = static_cast<std::uint8_t>(c);
      FUZZ_CHECK(c == '\t' || (b >= 0x20 && b != 0x7F));
    }
    const auto fields = fields_of(line);
    if (fields.empty() || fields[0][0] == '#') continue;
    FUZZ_CHECK(fields.size() == 2);
    FUZZ_CHECK(fields[0].size() <= kMaxIdBytes && fields[1].size() <= kMaxSecretBytes);
    ++entries;
    const std::optional<std::string> secret = store.lookup(fields[0]);
    FUZZ_CHECK(secret.has_value() && *secret == fields[1]);
  }
  FUZZ_CHECK(store.size() == entries);
  FUZZ_CHECK(!store.lookup("").has_value());  // an id is never empty
}

// The senders file (protocol/sender_keys.hpp): a file that parsed holds its lines' ids, each
// with the bytes its hex digits spell, and a SUBDIR only where a third field was given.
void check_senders(std::string_view text) {
  auto parsed = SenderKeyStore::parse(text);
  if (std::holds_alternative<SecretsParseError>(parsed)) return;
  const SenderKeyStore& store = std::get<SenderKeyStore>(parsed);
  std::string_view body = text;
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
  std::size_t entries = 0;
  for (std::size_t start = 0; start < body.size();) {
    std::size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto fields = fields_of(line);
    if (fields.empty() || fields[0][0] == '#') continue;
    FUZZ_CHECK(fields.size() == 2 || fields.size() == 3);
    const std::string_view hex = fields[1];
    FUZZ_CHECK(hex.size() % 2 == 0 && hex.size() >= 2 * kMinSenderKeyBytes &&
               hex.size() <= 2 * kMaxSenderKeyBytes);
    const SenderKey* key = store.find(fields[0]);
    FUZZ_CHECK(key != nullptr && key->key.size() * 2 == hex.size());
    for (std::size_t i = 0; i < key->key.size(); ++i) {
      const std::string digits(hex.substr(2 * i, 2));
      FUZZ_CHECK(static_cast<std::uint8_t>(key->key[i]) == std::stoul(digits, nullptr, 16));
    }
    FUZZ_CHECK(key->subdir == (fields.size() == 3 ? fields[2] : std::string_view{}));
    ++entries;
  }
  FUZZ_CHECK(store.size() == entries);
}

void check_constant_time_equal(std::string_view text) {
  const std::string_view a = text.substr(0, text.size() / 2);
  const std::string_view b = text.substr(text.size() / 2);
  FUZZ_CHECK(constant_time_equal(a, b) == (a == b));
  FUZZ_CHECK(constant_time_equal(a, a));
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// parse_size again, with the compiler's overflow builtins instead of pre-checked bounds.
std::optional<std::uint64_t> reference_size(std::string_view text) {
  std::size_t digits = 0;
  std::uint64_t value = 0;
  bool overflow = false;
  for (; digits < text.size() && text[digits] >= '0' && text[digits] <= '9'; ++digits) {
    overflow |= __builtin_mul_overflow(value, 10u, &value);
    overflow |= __builtin_add_overflow(value, static_cast<unsigned>(text[digits] - '0'), &value);
  }
  if (digits == 0 || overflow) return std::nullopt;

  std::string unit;
  for (char c : text.substr(digits)) unit += lower(c);
  static constexpr std::string_view kPrefixes = "kmgtp";
  unsigned exponent = 0;
  if (!unit.empty() && unit != "b") {
    const std::size_t prefix = kPrefixes.find(unit[0]);
    const std::string_view rest = std::string_view(unit).substr(1);
    if (prefix == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "ib")) {
      return std::nullopt;
    }
    exponent = static_cast<unsigned>(prefix + 1);
  }
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(value, std::uint64_t{1} << (10 * exponent), &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

void check_size(std::string_view text) {
  const std::optional<std::uint64_t> size = parse_size(text);
  FUZZ_CHECK(size == reference_size(text));
  if (!size) return;
  // format_size must not crash on any value, and plain digits read back unchanged.
  const std::string formatted = format_size(*size);
  FUZZ_CHECK(!formatted.empty() && formatted.back() == 'B');
  FUZZ_CHECK(parse_size(std::to_string(*size)) == size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_name(text, NameBytes::Printable);
  check_name(text, NameBytes::AnyButNul);
  check_escape_for_log(text);
  check_secrets(text);
  check_senders(text);
  check_constant_time_equal(text);
  check_size(text);
  return 0;
}
