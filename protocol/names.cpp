#include "protocol/names.hpp"

#include <cstddef>
#include <cstdint>

#include "protocol/wire.hpp"

namespace rdmax::proto {
namespace {

bool is_continuation(std::uint8_t b) {
  return (b & 0xC0) == 0x80;
}

// Length of the well-formed UTF-8 sequence starting at name[i] (a non-ASCII lead byte), or 0.
// The allowed second-byte ranges follow the Unicode well-formed table (Unicode 15, table 3-7):
// they are what excludes overlong forms, UTF-16 surrogates and code points above U+10FFFF.
std::size_t utf8_sequence_length(std::string_view name, std::size_t i) {
  const auto lead = static_cast<std::uint8_t>(name[i]);
  std::size_t length = 0;
  std::uint8_t second_min = 0x80;
  std::uint8_t second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong
    if (lead == 0xED) second_max = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong
    if (lead == 0xF4) second_max = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // stray continuation byte, overlong C0/C1, or F5..FF
  }
  if (name.size() - i < length) return 0;
  const auto second = static_cast<std::uint8_t>(name[i + 1]);
  if (second < second_min || second > second_max) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (!is_continuation(static_cast<std::uint8_t>(name[i + k]))) return 0;
  }
  return length;
}

// The code point of a well-formed sequence (as utf8_sequence_length accepted it).
char32_t code_point(std::string_view sequence) {
  const auto lead = static_cast<std::uint8_t>(sequence[0]);
  char32_t value = sequence.size() == 2   ? lead & 0x1Fu
                   : sequence.size() == 3 ? lead & 0x0Fu
                                          : lead & 0x07u;
  for (std::size_t k = 1; k < sequence.size(); ++k) {
    value = (value << 6) | (static_cast<std::uint8_t>(sequence[k]) & 0x3Fu);
  }
  return value;
}

// Valid characters that can still forge or disguise a log line (see escape_for_log).
bool misleads_in_log(char32_t c) {
  return (c >= 0x80 && c <= 0x9F)          // C1 controls
         || c == 0x061C                    // ARABIC LETTER MARK
         || c == 0x200E || c == 0x200F     // LEFT-TO-RIGHT / RIGHT-TO-LEFT MARK
         || c == 0x2028 || c == 0x2029     // LINE / PARAGRAPH SEPARATOR
         || (c >= 0x202A && c <= 0x202E)   // LRE, RLE, PDF, LRO, RLO
         || (c >= 0x2066 && c <= 0x2069);  // LRI, RLI, FSI, PDI
}

}  // namespace

std::string describe(NameError error) {
  switch (error) {
    case NameError::Empty:
      return "is empty";
    case NameError::TooLong:
      return "is longer than " + std::to_string(kMaxNameBytes) + " bytes";
    case NameError::DotOrDotDot:
      return "is \".\" or \"..\"";
    case NameError::PathSeparator:
      return "contains a '/' or a backslash";
    case NameError::ControlChar:
      return "contains a control character";
    case NameError::InvalidUtf8:
      return "is not valid UTF-8";
  }
  return "is not a plain name";
}

std::optional<NameError> check_file_name(std::string_view name, NameBytes bytes) {
  if (name.empty()) return NameError::Empty;
  if (name.size() > kMaxNameBytes) return NameError::TooLong;
  if (name == "." || name == "..") return NameError::DotOrDotDot;

  for (std::size_t i = 0; i < name.size();) {
    const auto b = static_cast<std::uint8_t>(name[i]);
    if (b < 0x80) {
      if (b == 0 || (bytes == NameBytes::Printable && (b < 0x20 || b == 0x7F)))
        return NameError::ControlChar;
      if (b == '/' || b == '\\') return NameError::PathSeparator;
      ++i;
      continue;
    }
    const std::size_t length = utf8_sequence_length(name, i);
    if (length == 0) return NameError::InvalidUtf8;
    i += length;
  }
  return std::nullopt;
}

std::string quoted_for_log(std::string_view text) {
  return "'" + escape_for_log(text) + "'";
}

std::string escape_for_log(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&](char byte) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto c = static_cast<unsigned char>(byte);
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F || c == '\\') {
        escape(text[i]);
      } else {
        out += text[i];
      }
      ++i;
      continue;
    }
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {  // invalid: escape this byte, look for a character at the next one
      escape(text[i]);
      ++i;
      continue;
    }
    const std::string_view sequence = text.substr(i, length);
    if (misleads_in_log(code_point(sequence))) {
      for (char byte : sequence) escape(byte);
    } else {
      out += sequence;
    }
    i += length;
  }
  return out;
}

}  // namespace rdmax::proto
