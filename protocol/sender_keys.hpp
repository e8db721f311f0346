#pragma once

// Sender keys (issue 23): the receiver's senders file, `rdma-recv --senders FILE`,
//
//   # id      key (openssl rand -hex 32)                                        subdirectory
//   alice     6f1c0e9a55d2b3c47e8a1f0d9b2c6e4a7f3d1b8c5e9a0f2d4c6b8e1a3f5d7c9b
//   lab-rig   A3F09C1B7E5D2A4C8B6E0F1D3A5C7E9B                                  rig/raw
//
// and the sender's key file, `rdma-send --key-file FILE`, one `ID KEY` line.
//
// The line rules are the secrets file's (protocol/secrets.hpp, protocol/credential_lines.hpp):
// LF or CRLF, blank and '#' comment lines skipped, fields separated by spaces and tabs, no
// control characters, an id of 1..kMaxIdBytes bytes that does not start with '#', ids
// unique and case-sensitive. Errors name the line and never hold a key's digits.
// - KEY is kMinSenderKeyBytes..kMaxSenderKeyBytes bytes written as hex digits (either case),
//   as `openssl rand -hex 32` prints them; the raw bytes are kept.
// - SUBDIR, when present, is where that sender's files go beneath --dir: a relative path by
//   check_relative_path (protocol/paths.hpp), so no "..", no leading '/', no empty component
//   (nor a trailing '/'). No control byte can reach it (the line rules refuse them), so it
//   also meets NameBytes::Printable. Without it the sender has all of --dir. It cannot hold
//   a space or a tab.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/secrets.hpp"  // SecretsParseError

namespace rdmax::proto {

inline constexpr std::size_t kMinSenderKeyBytes = 16;  // 128 bits
inline constexpr std::size_t kMaxSenderKeyBytes = 64;

// One sender's credentials. Every copy of a key is one more thing to wipe, so a SenderKey
// is move-only, and a move wipes the whole buffer of the strings it leaves behind (a short
// string's bytes live in the object itself and a move copies them).
struct SenderKey {
  std::string id;
  std::string key;     // the decoded raw bytes
  std::string subdir;  // empty: the whole --dir; else a relative path beneath it

  SenderKey() = default;
  ~SenderKey();  // wipes id, key and subdir
  SenderKey(SenderKey&& other) noexcept;
  SenderKey& operator=(SenderKey&& other) noexcept;
  SenderKey(const SenderKey&) = delete;
  SenderKey& operator=(const SenderKey&) = delete;
};

// The receiver's senders file, `ID KEY [SUBDIR]` lines. Like SecretStore: move-only, and
// every key is wiped when the store goes (each SenderKey wipes itself).
class SenderKeyStore {
 public:
  // The first problem found stops the parse. No entries at all is valid: a store that
  // knows no sender (the loader warns about it).
  [[nodiscard]] static std::variant<SenderKeyStore, SecretsParseError> parse(std::string_view text);

  SenderKeyStore() = default;
  SenderKeyStore(SenderKeyStore&&) noexcept = default;
  SenderKeyStore& operator=(SenderKeyStore&&) noexcept = default;
  SenderKeyStore(const SenderKeyStore&) = delete;
  SenderKeyStore& operator=(const SenderKeyStore&) = delete;

  // The entry for id, comparing every stored id in full, so the time taken does not depend
  // on which id matched or how much of one did (as SecretStore::lookup); nullptr if unknown.
  // Valid as long as the store is.
  [[nodiscard]] const SenderKey* find(std::string_view id) const;

  [[nodiscard]] std::size_t size() const { return keys_.size(); }

 private:
  std::vector<SenderKey> keys_;
};

// rdma-send's key file: exactly one `ID KEY` line (blank and comment lines allowed). Errors:
// no such line, more than one, a third field, and those of the id and the key.
[[nodiscard]] std::variant<SenderKey, SecretsParseError> parse_key_file(std::string_view text);

// Decodes the hex digits of a key into `key` (what it held is wiped first): 32..128 digits,
// an even number of them, upper or lower case. Decoding into the caller's string leaves no
// temporary copy of the key behind. Returns nullopt once `key` holds the bytes; otherwise
// what is wrong, without any of the digits (and `key` is left empty), e.g. "key is not hex
// digits (character 7)".
[[nodiscard]] std::optional<std::string> decode_key_hex(std::string_view hex, std::string& key);

}  // namespace rdmax::proto
