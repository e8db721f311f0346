#pragma once

// The line rules shared by every credentials file: the receiver's secrets file
// (protocol/secrets.hpp, whose comment is the full statement of them) and senders file, and
// the sender's key file (protocol/sender_keys.hpp). One reader, so the files cannot drift
// apart in what counts as a comment, a line end or a separator.
//
// - A UTF-8 byte order mark at the very start is skipped.
// - Lines end with LF; one CR right before the LF (or the end of the text) is dropped.
// - Lines that are empty, all spaces and tabs, or whose first other character is '#' are
//   skipped; '#' elsewhere is an ordinary byte.
// - Fields are separated by runs of spaces and tabs.
// - No control characters anywhere (0x00-0x1F but tab, and 0x7F), comments included.
// What the fields mean, and how many a line needs, is the caller's.

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/secrets.hpp"  // SecretsParseError

namespace rdmax::proto {

// What a reader does with the fields of one line (views into the text, at most one more than
// there are field names, so the caller can tell "too many"): an error text for that line,
// or nullopt to go on. line_number is 1-based.
using CredentialFieldsHandler = std::function<std::optional<std::string>(
    std::size_t line_number, std::span<const std::string_view> fields)>;

// Reads text line by line, calling on_fields for each line that holds fields, in order, and
// stops at the first problem: a control character, or an error on_fields returned. The
// error names the line; a control character's error names the field it is in by
// field_names (e.g. {"the id", "the secret"}; a field past those is "a third field" for
// two names) or "a comment", never the byte or where it is: that would be part of a secret.
[[nodiscard]] std::optional<SecretsParseError> read_credential_lines(
    std::string_view text, std::span<const std::string_view> field_names,
    const CredentialFieldsHandler& on_fields);

// "id longer than 256 bytes", or nullopt for an id the Id message can carry. The rest of
// the id rule (not empty, no blank or control byte, no leading '#') holds for any first
// field read_credential_lines hands over.
[[nodiscard]] std::optional<std::string> check_credential_id(std::string_view id);

// The ids a file has listed so far, for "duplicate id" errors. Holds views into the text
// being read (which must outlive it), so it adds no copy of an id to wipe.
class CredentialIds {
 public:
  // Records id as listed on line_number, or, if it was listed before, the error for that.
  [[nodiscard]] std::optional<std::string> add(std::string_view id, std::size_t line_number);

 private:
  struct Seen {
    std::string_view id;
    std::size_t line_number;
  };
  std::vector<Seen> seen_;
};

}  // namespace rdmax::proto
