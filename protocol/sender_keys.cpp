#include "protocol/sender_keys.hpp"

#include <array>
#include <span>
#include <utility>

#include "protocol/credential_lines.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"
#include "protocol/receiver_rules.hpp"
#include "protocol/secure_wipe.hpp"

namespace rdmax::proto {
namespace {

// Wipes all of s's buffer, not only its current size: a string emptied by a move (or a
// shorter assignment) can keep earlier bytes past its end.
void wipe_string(std::string& s) noexcept {
  s.resize(s.capacity());  // within the capacity: no allocation, so no throw
  secure_wipe(s.data(), s.size());
  s.clear();
}

void wipe_fields(SenderKey& k) noexcept {
  wipe_string(k.id);
  wipe_string(k.key);
  wipe_string(k.subdir);
}

// The value of a hex digit, or -1.
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The id and key fields of a line into `entry`, or what is wrong with them.
std::optional<std::string> read_id_and_key(std::span<const std::string_view> fields,
                                           SenderKey& entry) {
  if (auto bad_id = check_credential_id(fields[0])) return bad_id;
  if (auto bad_key = decode_key_hex(fields[1], entry.key)) return bad_key;
  entry.id.assign(fields[0]);
  return std::nullopt;
}

}  // namespace

SenderKey::~SenderKey() {
  wipe_fields(*this);
}

SenderKey::SenderKey(SenderKey&& other) noexcept
    : id(std::move(other.id)), key(std::move(other.key)), subdir(std::move(other.subdir)) {
  wipe_fields(other);
}

SenderKey& SenderKey::operator=(SenderKey&& other) noexcept {
  if (this != &other) {
    wipe_fields(*this);
    id = std::move(other.id);
    key = std::move(other.key);
    subdir = std::move(other.subdir);
    wipe_fields(other);
  }
  return *this;
}

std::variant<SenderKeyStore, SecretsParseError> SenderKeyStore::parse(std::string_view text) {
  static constexpr std::array<std::string_view, 3> kFieldNames = {"the id", "the key",
                                                                  "the subdirectory"};
  SenderKeyStore store;
  CredentialIds ids;
  auto error = read_credential_lines(
      text, kFieldNames,
      [&](std::size_t line_number,
          std::span<const std::string_view> fields) -> std::optional<std::string> {
        if (fields.size() == 1) return "id without a key, expected \"ID KEY [SUBDIR]\"";
        if (fields.size() > 3) {
          return "more than three fields, expected \"ID KEY [SUBDIR]\" (a subdirectory cannot "
                 "contain spaces or tabs, and a comment needs a line of its own)";
        }
        SenderKey entry;
        if (auto bad = read_id_and_key(fields, entry)) return bad;
        if (fields.size() == 3) {
          const std::string_view subdir = fields[2];
          if (const auto problem = check_relative_path(subdir)) {
            return "subdirectory " + quoted_for_log(subdir) +
                   " is not a relative path beneath --dir: " + describe(*problem);
          }
          // The partial files' area is the receiver's own: a sender written there would
          // reach other senders' kept partials.
          if (reserved_by_receiver(subdir))
            return "subdirectory " + quoted_for_log(subdir) +
                   " is the receiver's own (partial files of interrupted transfers)";
          entry.subdir.assign(subdir);
        }
        if (auto duplicate = ids.add(fields[0], line_number)) return duplicate;
        // No reserve needed, unlike SecretStore: a reallocation moves entries with
        // SenderKey's move, which wipes what it leaves behind.
        store.keys_.push_back(std::move(entry));
        return std::nullopt;
      });
  if (error) return std::move(*error);
  return store;
}

const SenderKey* SenderKeyStore::find(std::string_view id) const {
  std::size_t found = keys_.size();  // "none"
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    // All ones for the match, else zero: which entry matched picks no branch.
    const std::size_t mask = 0 - static_cast<std::size_t>(constant_time_equal(keys_[i].id, id));
    found = (i & mask) | (found & ~mask);
  }
  return found == keys_.size() ? nullptr : &keys_[found];
}

std::variant<SenderKey, SecretsParseError> parse_key_file(std::string_view text) {
  static constexpr std::array<std::string_view, 2> kFieldNames = {"the id", "the key"};
  SenderKey entry;
  std::size_t entry_line = 0;  // 0: none yet
  auto error = read_credential_lines(
      text, kFieldNames,
      [&](std::size_t line_number,
          std::span<const std::string_view> fields) -> std::optional<std::string> {
        if (entry_line != 0) {
          return "more than one \"ID KEY\" line (the first is line " + std::to_string(entry_line) +
                 "): a key file holds one sender's key";
        }
        if (fields.size() == 1) return "id without a key, expected \"ID KEY\"";
        if (fields.size() > 2) {
          return "more than two fields, expected \"ID KEY\" (a key cannot contain spaces or "
                 "tabs, and a comment needs a line of its own)";
        }
        if (auto bad = read_id_and_key(fields, entry)) return bad;
        entry_line = line_number;
        return std::nullopt;
      });
  if (error) return std::move(*error);
  if (entry_line == 0) {
    return SecretsParseError{
        1, "no \"ID KEY\" line: the file is empty or holds only blank and comment lines"};
  }
  return entry;
}

std::optional<std::string> decode_key_hex(std::string_view hex, std::string& key) {
  wipe_string(key);
  for (std::size_t i = 0; i < hex.size(); ++i) {
    if (hex_value(hex[i]) < 0) {
      return "key is not hex digits (character " + std::to_string(i + 1) + ")";
    }
  }
  // Lengths after the digits: a base64 key is "not hex", whatever its length.
  if (hex.size() < 2 * kMinSenderKeyBytes) {
    return "a key needs at least " + std::to_string(8 * kMinSenderKeyBytes) +
           " bits: " + std::to_string(2 * kMinSenderKeyBytes) +
           " hex digits, as `openssl rand -hex 32` prints 64";
  }
  if (hex.size() > 2 * kMaxSenderKeyBytes) {
    return "key longer than " + std::to_string(2 * kMaxSenderKeyBytes) + " hex digits (" +
           std::to_string(8 * kMaxSenderKeyBytes) + " bits)";
  }
  if (hex.size() % 2 != 0) {
    return "key has an odd number of hex digits: each byte is two digits";
  }
  key.reserve(hex.size() / 2);  // all at once: a reallocation would free an unwiped copy
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    key.push_back(static_cast<char>(hex_value(hex[i]) * 16 + hex_value(hex[i + 1])));
  }
  return std::nullopt;
}

}  // namespace rdmax::proto
