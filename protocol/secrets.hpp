#pragma once

// The receiver's table of sender ids and their secrets, parsed from a text file:
//
//   # comment
//   alice   correct-horse-battery
//   bob	s3cret
//
// One "ID SECRET" pair per line, separated by spaces or tabs. Blank lines and lines whose
// first non-blank character is '#' are ignored; CRLF line ends are accepted. An id appears at
// most once, is at most kMaxIdBytes long and a secret at most kMaxSecretBytes, matching what
// the Id and Secret messages can carry.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rdmax::proto {

struct SecretsParseError {
  std::size_t line;  // 1-based
  std::string what;  // never contains a secret
};

// Compares without an early exit, so the time taken does not reveal how many leading bytes
// matched. The length of `expected` is not hidden; a length difference still compares unequal.
[[nodiscard]] bool constant_time_equal(std::string_view expected, std::string_view actual);

class SecretStore {
 public:
  [[nodiscard]] static std::variant<SecretStore, SecretsParseError> parse(std::string_view text);

  SecretStore() = default;
  ~SecretStore();  // wipes every stored id and secret
  // Move-only: each copy of a secret is one more thing to wipe.
  SecretStore(SecretStore&& other) noexcept;
  SecretStore& operator=(SecretStore&& other) noexcept;
  SecretStore(const SecretStore&) = delete;
  SecretStore& operator=(const SecretStore&) = delete;

  // The secret for id. Every stored id is compared in full, so timing does not depend on
  // which id matched or how much of one did. The caller owns (and should wipe) the copy.
  [[nodiscard]] std::optional<std::string> lookup(std::string_view id) const;

  [[nodiscard]] std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string id;
    std::string secret;
  };

  void wipe();

  std::vector<Entry> entries_;
};

}  // namespace rdmax::proto
