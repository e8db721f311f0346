#include "protocol/secrets.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/secure_wipe.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {
namespace {

// Zero iff equal. Loops over all of `expected` whatever the content; the only branch is on
// the lengths, which are not secret.
std::size_t difference(std::string_view expected, std::string_view actual) {
  std::size_t diff = expected.size() ^ actual.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto got = i < actual.size() ? static_cast<unsigned char>(actual[i]) : 0U;
    diff |= static_cast<unsigned char>(expected[i]) ^ got;
  }
  return diff;
}

// All ones if diff == 0, else zero; computed without a branch on diff.
std::size_t equal_mask(std::size_t diff) {
  const std::size_t nonzero = (diff | (0 - diff)) >> (sizeof(std::size_t) * CHAR_BIT - 1);
  return nonzero - 1;
}

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// C0 controls and DEL; tab is a separator, not a control here.
bool is_control(char c) {
  const auto b = static_cast<unsigned char>(c);
  return (b < 0x20 && c != '\t') || b == 0x7F;
}

// Splits on runs of spaces and tabs. Stops after three tokens: more than two is an error anyway.
std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (out.size() < 3) {
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

// The error for the first control character in line, if any. It says which field holds the
// character but not which byte it is or where: that would be part of a secret.
std::optional<std::string> control_character_error(std::string_view line) {
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
    where = fields == 1 ? "the id" : fields == 2 ? "the secret" : "a third field";
  }
  return "control character in " + where +
         " (bytes 0x00-0x1f and 0x7f are not allowed; tab only separates fields)";
}

}  // namespace

bool constant_time_equal(std::string_view expected, std::string_view actual) {
  return difference(expected, actual) == 0;
}

std::variant<SecretStore, SecretsParseError> SecretStore::parse(std::string_view text) {
  SecretStore store;
  // Reserve one entry per line up front: a reallocation would move short (SSO) strings and
  // leave unwiped copies of their bytes in the freed buffer.
  store.entries_.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  std::vector<std::size_t> entry_lines;  // where each entry was, for "duplicate id" errors
  entry_lines.reserve(store.entries_.capacity());

  if (text.starts_with(kUtf8ByteOrderMark)) text.remove_prefix(kUtf8ByteOrderMark.size());
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    if (auto error = control_character_error(line)) {
      return SecretsParseError{line_number, std::move(*error)};
    }
    const auto fields = tokens(line);
    if (fields.empty() || fields[0].front() == '#') continue;
    if (fields.size() == 1) {
      return SecretsParseError{line_number, "id without a secret, expected \"ID SECRET\""};
    }
    if (fields.size() > 2) {
      return SecretsParseError{line_number,
                               "more than two fields, expected \"ID SECRET\" (a secret cannot "
                               "contain spaces or tabs, and a comment needs a line of its own)"};
    }
    const std::string_view id = fields[0];
    const std::string_view secret = fields[1];
    if (id.size() > kMaxIdBytes) {
      return SecretsParseError{line_number,
                               "id longer than " + std::to_string(kMaxIdBytes) + " bytes"};
    }
    if (secret.size() > kMaxSecretBytes) {
      return SecretsParseError{line_number,
                               "secret longer than " + std::to_string(kMaxSecretBytes) + " bytes"};
    }
    for (std::size_t i = 0; i < store.entries_.size(); ++i) {
      if (store.entries_[i].id == id) {
        return SecretsParseError{line_number,
                                 "duplicate id, already on line " + std::to_string(entry_lines[i])};
      }
    }
    store.entries_.push_back(Entry{std::string(id), std::string(secret)});
    entry_lines.push_back(line_number);
  }
  return store;
}

SecretStore::~SecretStore() {
  wipe();
}

SecretStore::SecretStore(SecretStore&& other) noexcept : entries_(std::move(other.entries_)) {
  other.entries_.clear();  // a moved-from vector is only "valid but unspecified"
}

SecretStore& SecretStore::operator=(SecretStore&& other) noexcept {
  if (this != &other) {
    wipe();
    entries_ = std::move(other.entries_);
    other.entries_.clear();
  }
  return *this;
}

void SecretStore::wipe() {
  for (Entry& e : entries_) {
    secure_wipe(e.id.data(), e.id.size());
    secure_wipe(e.secret.data(), e.secret.size());
  }
  entries_.clear();
}

std::optional<std::string> SecretStore::lookup(std::string_view id) const {
  std::size_t found = entries_.size();  // "none"
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const std::size_t mask = equal_mask(difference(entries_[i].id, id));
    found = (i & mask) | (found & ~mask);
  }
  if (found == entries_.size()) return std::nullopt;
  return entries_[found].secret;
}

}  // namespace rdmax::proto
