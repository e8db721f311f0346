#include "protocol/credential_lines.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <utility>

#include "protocol/wire.hpp"

namespace rdmax::proto {
namespace {

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// C0 controls and DEL; tab is a separator, not a control here.
bool is_control(char c) {
  const auto b = static_cast<unsigned char>(c);
  return (b < 0x20 && c != '\t') || b == 0x7F;
}

// Splits on runs of spaces and tabs. Stops after `limit` tokens: any more are an error anyway.
std::vector<std::string_view> tokens(std::string_view line, std::size_t limit) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (out.size() < limit) {
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i == line.size()) break;
    const std::size_t start = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    out.push_back(line.substr(start, i - start));
  }
  return out;
}

bool is_comment(std::string_view line) {
  const std::size_t first = line.find_first_not_of(" \t");
  return first != std::string_view::npos && line[first] == '#';
}

// The name of the first field past the named ones, for every field past them: such a line
// is wrong whatever else is in it, and this is what the secrets file has always said.
std::string extra_field_name(std::size_t named) {
  static constexpr std::array<std::string_view, 6> kOrdinals = {"first",  "second", "third",
                                                                "fourth", "fifth",  "sixth"};
  return "a " + std::string(kOrdinals.at(named)) + " field";
}

// The error for the first control character in line, if any. It says which field holds the
// character but not which byte it is or where: that would be part of a secret.
std::optional<std::string> control_character_error(std::string_view line,
                                                   std::span<const std::string_view> names) {
  const auto it = std::find_if(line.begin(), line.end(), is_control);
  if (it == line.end()) return std::nullopt;
  if (*it == '\r') {
    return "carriage return inside the line: lines end with LF or CRLF (not a lone CR)";
  }
  std::string where = "a comment";
  if (!is_comment(line)) {
    // The control character is not blank, so it is inside a field: count the fields that
    // start at or before it.
    const auto at = static_cast<std::size_t>(std::distance(line.begin(), it));
    std::size_t fields = 0;
    for (std::size_t i = 0; i <= at; ++i) {
      if (!is_blank(line[i]) && (i == 0 || is_blank(line[i - 1]))) ++fields;
    }
    where =
        fields <= names.size() ? std::string(names[fields - 1]) : extra_field_name(names.size());
  }
  return "control character in " + where +
         " (bytes 0x00-0x1f and 0x7f are not allowed; tab only separates fields)";
}

}  // namespace

std::optional<SecretsParseError> read_credential_lines(
    std::string_view text, std::span<const std::string_view> field_names,
    const CredentialFieldsHandler& on_fields) {
  if (text.starts_with(kUtf8ByteOrderMark)) text.remove_prefix(kUtf8ByteOrderMark.size());
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    if (auto error = control_character_error(line, field_names)) {
      return SecretsParseError{line_number, std::move(*error)};
    }
    const auto fields = tokens(line, field_names.size() + 1);
    if (fields.empty() || fields[0].front() == '#') continue;
    if (auto error = on_fields(line_number, fields)) {
      return SecretsParseError{line_number, std::move(*error)};
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_credential_id(std::string_view id) {
  if (id.size() > kMaxIdBytes) return "id longer than " + std::to_string(kMaxIdBytes) + " bytes";
  return std::nullopt;
}

std::optional<std::string> CredentialIds::add(std::string_view id, std::size_t line_number) {
  for (const Seen& s : seen_) {
    if (s.id == id) return "duplicate id, already on line " + std::to_string(s.line_number);
  }
  seen_.push_back(Seen{id, line_number});
  return std::nullopt;
}

}  // namespace rdmax::proto
