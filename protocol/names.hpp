#pragma once

// The rule for a file name a sender may ask the receiver to create. The receiver only ever
// writes inside its output directory, so a name must be one plain path component.

#include <optional>
#include <string>
#include <string_view>

namespace rdmax::proto {

enum class NameError {
  Empty,
  TooLong,        // more than kMaxNameBytes (255) bytes, the usual NAME_MAX
  DotOrDotDot,    // exactly "." or ".."
  PathSeparator,  // '/' or '\\'
  ControlChar,    // a byte below 0x20 (NUL included) or 0x7f
  InvalidUtf8,    // malformed, overlong, surrogate or above U+10FFFF
};

[[nodiscard]] const char* to_string(NameError error);

// nullopt if name is acceptable. Any valid UTF-8, spaces and a leading '-' are allowed.
// When a name has several problems, the first offending byte decides which is reported.
[[nodiscard]] std::optional<NameError> check_file_name(std::string_view name);

// A name or id from the network, made safe to log: control bytes, backslashes and
// invalid UTF-8 become \xNN escapes, so a peer cannot forge log lines or send terminal
// escape sequences. Valid UTF-8 text (spaces, accents, CJK) is kept as is.
[[nodiscard]] std::string escape_for_log(std::string_view text);

}  // namespace rdmax::proto
