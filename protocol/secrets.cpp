#include "protocol/secrets.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "protocol/credential_lines.hpp"
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

}  // namespace

bool constant_time_equal(std::string_view expected, std::string_view actual) {
  return difference(expected, actual) == 0;
}

std::variant<SecretStore, SecretsParseError> SecretStore::parse(std::string_view text) {
  static constexpr std::array<std::string_view, 2> kFieldNames = {"the id", "the secret"};
  SecretStore store;
  // Reserve one entry per line up front: a reallocation would move short (SSO) strings and
  // leave unwiped copies of their bytes in the freed buffer.
  store.entries_.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  CredentialIds ids;

  auto error = read_credential_lines(
      text, kFieldNames,
      [&](std::size_t line_number,
          std::span<const std::string_view> fields) -> std::optional<std::string> {
        if (fields.size() == 1) return "id without a secret, expected \"ID SECRET\"";
        if (fields.size() > 2) {
          return "more than two fields, expected \"ID SECRET\" (a secret cannot contain "
                 "spaces or tabs, and a comment needs a line of its own)";
        }
        const std::string_view id = fields[0];
        const std::string_view secret = fields[1];
        if (auto bad_id = check_credential_id(id)) return bad_id;
        if (secret.size() > kMaxSecretBytes) {
          return "secret longer than " + std::to_string(kMaxSecretBytes) + " bytes";
        }
        if (auto duplicate = ids.add(id, line_number)) return duplicate;
        store.entries_.push_back(Entry{std::string(id), std::string(secret)});
        return std::nullopt;
      });
  if (error) return std::move(*error);
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
