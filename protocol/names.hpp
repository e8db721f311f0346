#pragma once

// The rule for a file name a sender may ask the receiver to create. The receiver only ever
// writes inside its output directory, so a name must be one plain path component.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/enum_names.hpp"

namespace rdmax::proto {

enum class NameError {
  Empty,
  TooLong,        // more than kMaxNameBytes (255) bytes, the usual NAME_MAX
  DotOrDotDot,    // exactly "." or ".."
  PathSeparator,  // '/' or '\\'
  ControlChar,    // a byte below 0x20 or 0x7f (NameBytes::Printable), or NUL (any rule)
  InvalidUtf8,    // malformed, overlong, surrogate or above U+10FFFF
};

// The problem in words for the person who chose the name, e.g. "is \".\" or \"..\"";
// to_string gives the enum's name, which suits logs of protocol errors instead.
[[nodiscard]] std::string describe(NameError error);

// Which control bytes a name may hold (docs/PROTOCOL.md 3.1 and 7.5).
enum class NameBytes : std::uint8_t {
  Printable,  // none (0x00-0x1F, 0x7F): a Hello's file name, and rdma-send --name
  AnyButNul,  // all but NUL: a version-2 session's path components. POSIX file systems
              // allow them and real datasets hold them ("new\nline"); every program of ours
              // shows such a name escaped (escape_for_log), never raw.
};

// nullopt if name is acceptable. Any valid UTF-8, spaces and a leading '-' are allowed.
// When a name has several problems, the first offending byte decides which is reported.
[[nodiscard]] std::optional<NameError> check_file_name(std::string_view name, NameBytes bytes);

// A name or id from the network, made safe to log: each byte of the following becomes a
// \xNN escape, so a peer cannot forge log lines, send terminal escape sequences or make a
// line read differently from what it holds:
//   - C0 controls (0x00-0x1F), DEL (0x7F) and the backslash (so an escape is unambiguous);
//   - invalid UTF-8 (each offending byte);
//   - C1 controls U+0080-U+009F (NEL and the 8-bit CSI among them);
//   - bidirectional controls: U+061C ALM, U+200E LRM, U+200F RLM, the embeddings and
//     overrides U+202A-U+202E and the isolates U+2066-U+2069, which reorder what follows;
//   - U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR, which some viewers break on.
// Every other valid UTF-8 character (spaces, accents, CJK, emoji, joiners) is kept as is.
[[nodiscard]] std::string escape_for_log(std::string_view text);

// A path or name for a message to people: escape_for_log's text between single quotes.
[[nodiscard]] std::string quoted_for_log(std::string_view text);

}  // namespace rdmax::proto
