#pragma once

// The receiver's table of sender ids and their secrets, parsed from a text file:
//
//   # comment
//   alice   correct-horse-battery
//   bob	s3cret
//
// The format (docs/SECURITY.md, "The secrets file", is the user's version of this):
// - Bytes, compared as bytes: UTF-8 is neither required nor checked. A UTF-8 byte order mark
//   at the very start is skipped.
// - Lines end with LF; one CR right before the LF (or the end of the text) is dropped, so
//   CRLF files work. A last line without LF counts.
// - A line that is empty, all spaces and tabs, or whose first other character is '#' is
//   ignored. There are no comments after a secret: '#' elsewhere is an ordinary byte.
// - Any other line is an id, one or more spaces or tabs, a secret; spaces and tabs before
//   and after are ignored. Neither field can contain a space or a tab: one field is an
//   error, three or more are too.
// - An id is 1..kMaxIdBytes bytes and does not start with '#'; a secret is
//   1..kMaxSecretBytes bytes (what the Id and Secret messages can carry).
// - No control characters anywhere, comments included: bytes 0x00-0x1F other than tab,
//   and 0x7F (a lone CR is one).
// - An id appears once; ids are case-sensitive.
// - No entries at all is valid: an empty store, which denies every id.
// The first problem found stops the parse; its error names the line, and never the bytes of
// a secret.

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
