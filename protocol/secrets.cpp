#include "protocol/secrets.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

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

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

bool has_control_char(std::string_view line) {
  return std::any_of(line.begin(), line.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return (b < 0x20 && c != '\t') || b == 0x7F;
  });
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

}  // namespace

bool constant_time_equal(std::string_view expected, std::string_view actual) {
  return difference(expected, actual) == 0;
}

std::variant<SecretStore, SecretsParseError> SecretStore::parse(std::string_view text) {
  SecretStore store;
  // Reserve one entry per line up front: a reallocation would move short (SSO) strings and
  // leave unwiped copies of their bytes in the freed buffer.
  store.entries_.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);

  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    const auto fields = tokens(line);
    if (fields.empty() || fields[0].front() == '#') continue;
    if (has_control_char(line)) return SecretsParseError{line_number, "control character in line"};
    if (fields.size() == 1) return SecretsParseError{line_number, "missing secret after id"};
    if (fields.size() > 2) {
      return SecretsParseError{line_number, "too many fields, expected \"ID SECRET\""};
    }
    const std::string_view id = fields[0];
    const std::string_view secret = fields[1];
    if (id.size() > kMaxIdBytes) {
      return SecretsParseError{line_number, "id longer than " + std::to_string(kMaxIdBytes)};
    }
    if (secret.size() > kMaxSecretBytes) {
      return SecretsParseError{line_number,
                               "secret longer than " + std::to_string(kMaxSecretBytes)};
    }
    for (const Entry& e : store.entries_) {
      if (e.id == id) return SecretsParseError{line_number, "duplicate id"};
    }
    store.entries_.push_back(Entry{std::string(id), std::string(secret)});
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
