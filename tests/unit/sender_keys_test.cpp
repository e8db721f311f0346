#include "protocol/sender_keys.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "protocol/names.hpp"
#include "text_contains.hpp"

namespace {

using rdmax::proto::decode_key_hex;
using rdmax::proto::parse_key_file;
using rdmax::proto::SecretsParseError;
using rdmax::proto::SenderKey;
using rdmax::proto::SenderKeyStore;

// 32 bytes as `openssl rand -hex 32` prints them, and the bytes they stand for.
constexpr std::string_view kHex =
    "6f1c0e9a55d2b3c47e8a1f0d9b2c6e4a7f3d1b8c5e9a0f2d4c6b8e1a3f5d7c9b";
const std::string kBytes =
    "\x6f\x1c\x0e\x9a\x55\xd2\xb3\xc4\x7e\x8a\x1f\x0d\x9b\x2c\x6e\x4a"
    "\x7f\x3d\x1b\x8c\x5e\x9a\x0f\x2d\x4c\x6b\x8e\x1a\x3f\x5d\x7c\x9b";
// The shortest key, 128 bits, in upper case.
constexpr std::string_view kShortHex = "A3F09C1B7E5D2A4C8B6E0F1D3A5C7E9B";
const std::string kShortBytes = "\xa3\xf0\x9c\x1b\x7e\x5d\x2a\x4c\x8b\x6e\x0f\x1d\x3a\x5c\x7e\x9b";

std::string line(std::string_view id, std::string_view hex, std::string_view rest = "") {
  std::string out = std::string(id) + " " + std::string(hex);
  if (!rest.empty()) out += " " + std::string(rest);
  return out + "\n";
}

SenderKeyStore parse_ok(std::string_view text) {
  auto result = SenderKeyStore::parse(text);
  if (auto* error = std::get_if<SecretsParseError>(&result)) {
    ADD_FAILURE() << "line " << error->line << ": " << error->what;
    return SenderKeyStore{};
  }
  return std::move(std::get<SenderKeyStore>(result));
}

// The parse error (line and text), or a test failure if the text parsed.
SecretsParseError parse_error(std::string_view text) {
  auto result = SenderKeyStore::parse(text);
  if (auto* error = std::get_if<SecretsParseError>(&result)) return *error;
  ADD_FAILURE() << "parsed, but an error was expected: " << testing::PrintToString(text);
  return SecretsParseError{0, ""};
}

SecretsParseError key_file_error(std::string_view text) {
  auto result = parse_key_file(text);
  if (auto* error = std::get_if<SecretsParseError>(&result)) return *error;
  ADD_FAILURE() << "parsed, but an error was expected: " << testing::PrintToString(text);
  return SecretsParseError{0, ""};
}

// What decode_key_hex says about hex, or "" if it decoded.
std::string key_error(std::string_view hex) {
  std::string key;
  auto error = decode_key_hex(hex, key);
  if (!error) return "";
  EXPECT_TRUE(key.empty());
  return *error;
}

using rdmax::test::contains;

TEST(SenderKeysFormat, IdKeyAndAnOptionalSubdirectory) {
  const auto store = parse_ok(line("alice", kHex) + line("bob", kShortHex, "rig/raw"));
  ASSERT_EQ(store.size(), 2U);
  const SenderKey* alice = store.find("alice");
  ASSERT_NE(alice, nullptr);
  EXPECT_EQ(alice->id, "alice");
  EXPECT_EQ(alice->key, kBytes);
  EXPECT_EQ(alice->subdir, "");
  const SenderKey* bob = store.find("bob");
  ASSERT_NE(bob, nullptr);
  EXPECT_EQ(bob->key, kShortBytes);
  EXPECT_EQ(bob->subdir, "rig/raw");
}

TEST(SenderKeysFormat, TheSecretsFileLineRules) {
  // BOM, CRLF, comments (indented too), blank lines, tabs and runs of blanks.
  const std::string text = "\xEF\xBB\xBF# senders\r\n\r\n  # indented\n \t\n\talice \t " +
                           std::string(kHex) + "\t \r\nbob " + std::string(kShortHex) +
                           " bob-files\r\ncarol " + std::string(kHex);
  const auto store = parse_ok(text);
  ASSERT_EQ(store.size(), 3U);
  EXPECT_EQ(store.find("alice")->key, kBytes);
  EXPECT_EQ(store.find("bob")->subdir, "bob-files");  // not "bob-files\r"
  EXPECT_EQ(store.find("carol")->key, kBytes);        // the last line needs no LF
  EXPECT_EQ(store.find("# senders"), nullptr);
}

TEST(SenderKeysFormat, HexDigitsInEitherCase) {
  std::string upper(kHex);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string mixed(kHex);
  for (std::size_t i = 0; i < mixed.size(); i += 2) {
    mixed[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(mixed[i])));
  }
  const auto store = parse_ok(line("lower", kHex) + line("upper", upper) + line("mixed", mixed));
  EXPECT_EQ(store.find("lower")->key, kBytes);
  EXPECT_EQ(store.find("upper")->key, kBytes);
  EXPECT_EQ(store.find("mixed")->key, kBytes);
}

TEST(SenderKeysFormat, NoEntriesIsAnEmptyStore) {
  for (const char* text : {"", "\n", "# alice 00\n", "\xEF\xBB\xBF"}) {
    const auto store = parse_ok(text);
    EXPECT_EQ(store.size(), 0U) << testing::PrintToString(text);
    EXPECT_EQ(store.find("alice"), nullptr);
    EXPECT_EQ(store.find(""), nullptr);
  }
}

TEST(SenderKeysFormat, FieldCountErrors) {
  auto error = parse_error("# senders\n\nalice\n");
  EXPECT_EQ(error.line, 3U);
  EXPECT_EQ(error.what, "id without a key, expected \"ID KEY [SUBDIR]\"");

  error = parse_error(line("alice", kHex) + line("bob", kHex, "sub # a comment"));
  EXPECT_EQ(error.line, 2U);
  EXPECT_EQ(error.what,
            "more than three fields, expected \"ID KEY [SUBDIR]\" (a subdirectory cannot contain "
            "spaces or tabs, and a comment needs a line of its own)");
}

TEST(SenderKeysFormat, IdIsAtMost256Bytes) {
  EXPECT_EQ(parse_ok(line(std::string(256, 'i'), kHex)).size(), 1U);
  const auto error = parse_error("\n" + line(std::string(257, 'i'), kHex));
  EXPECT_EQ(error.line, 2U);
  EXPECT_EQ(error.what, "id longer than 256 bytes");
}

TEST(SenderKeysFormat, DuplicateIdsAreAnErrorButCaseCounts) {
  const auto error =
      parse_error(line("alice", kHex) + "# c\n" + line("bob", kHex) + line("alice", kShortHex));
  EXPECT_EQ(error.line, 4U);
  EXPECT_EQ(error.what, "duplicate id, already on line 1");
  const auto store = parse_ok(line("alice", kHex) + line("Alice", kShortHex));
  EXPECT_EQ(store.size(), 2U);
  EXPECT_EQ(store.find("Alice")->key, kShortBytes);
}

TEST(SenderKeysFormat, ControlCharacterErrorsNameTheField) {
  const std::string hex(kHex);
  struct Case {
    std::string text;
    std::string field;
  };
  for (const Case& c : {
           Case{"al\x01ice " + hex + "\n", "the id"},
           Case{"alice " + hex.substr(0, 10) + "\x1b" + hex.substr(10) + "\n", "the key"},
           Case{"alice " + hex +
                    " su\x7f"
                    "b\n",
                "the subdirectory"},
           Case{"alice " + hex + " sub extra\x02\n", "a fourth field"},
           Case{"# a \x1b[2J comment\n", "a comment"},
       }) {
    const auto error = parse_error(c.text);
    EXPECT_EQ(error.line, 1U);
    EXPECT_EQ(error.what, "control character in " + c.field +
                              " (bytes 0x00-0x1f and 0x7f are not allowed; tab only separates "
                              "fields)");
  }
  const auto lone_cr = parse_error(line("alice", kHex) + "bob " + hex + "\r\r\n");
  EXPECT_EQ(lone_cr.line, 2U);
  EXPECT_TRUE(contains(lone_cr.what, "carriage return")) << lone_cr.what;
}

TEST(SenderKeysFormat, KeyErrors) {
  struct Case {
    std::string key;
    std::string what;
  };
  const std::string hex(kHex);
  const std::string too_short =
      "a key needs at least 128 bits: 32 hex digits, as `openssl rand -hex 32` prints 64";
  for (const Case& c : {
           Case{hex.substr(0, 6) + "g" + hex.substr(7), "key is not hex digits (character 7)"},
           Case{"0x" + hex, "key is not hex digits (character 2)"},
           Case{"bxwOmlXSs9R7sM8a2+vC5oHn1KZ0ux4cJq3Ym9Gv0xE=",  // openssl rand -base64 32
                "key is not hex digits (character 2)"},
           Case{hex.substr(0, 30), too_short},
           Case{hex.substr(0, 31), too_short},
           Case{"ab", too_short},
           Case{hex + hex + "00", "key longer than 128 hex digits (512 bits)"},
           Case{hex + hex + "0", "key longer than 128 hex digits (512 bits)"},
           Case{hex.substr(0, 33), "key has an odd number of hex digits: each byte is two digits"},
           Case{hex + "1", "key has an odd number of hex digits: each byte is two digits"},
       }) {
    EXPECT_EQ(key_error(c.key), c.what) << c.key;
    const auto error = parse_error("# c\n" + line("alice", c.key));
    EXPECT_EQ(error.line, 2U);
    EXPECT_EQ(error.what, c.what);
  }
}

TEST(SenderKeysFormat, KeysOf128To512Bits) {
  const std::string hex(kHex);
  std::string key;
  EXPECT_EQ(decode_key_hex(kShortHex, key), std::nullopt);
  EXPECT_EQ(key.size(), 16U);
  EXPECT_EQ(decode_key_hex(hex + hex, key), std::nullopt);
  EXPECT_EQ(key, kBytes + kBytes);  // what it held before is replaced
  EXPECT_EQ(decode_key_hex(hex.substr(0, 34), key), std::nullopt);
  EXPECT_EQ(key, kBytes.substr(0, 17));
  EXPECT_EQ(decode_key_hex("zz", key), "key is not hex digits (character 1)");
  EXPECT_EQ(key, "");  // an error leaves no earlier key behind
}

TEST(SenderKeysFormat, SubdirectoryIsARelativePathBeneathDir) {
  struct Case {
    std::string subdir;
    std::string reason;
  };
  for (const Case& c : {
           Case{"..", "component 1 is \".\" or \"..\""},
           Case{".", "component 1 is \".\" or \"..\""},
           Case{"/abs", "the path is absolute (starts with '/')"},
           Case{"/", "the path is absolute (starts with '/')"},
           Case{"a/../b", "component 2 is \".\" or \"..\""},
           Case{"a/", "component 2 is empty (\"//\" or a trailing '/')"},
           Case{"a//b", "component 2 is empty (\"//\" or a trailing '/')"},
           Case{"a\\b", "component 1 contains a backslash"},
           Case{"caf\xe9", "component 1 is not valid UTF-8"},
       }) {
    const auto error = parse_error(line("alice", kHex) + line("bob", kHex, c.subdir));
    EXPECT_EQ(error.line, 2U) << c.subdir;
    EXPECT_EQ(error.what, "subdirectory '" + rdmax::proto::escape_for_log(c.subdir) +
                              "' is not a relative path beneath --dir: " + c.reason);
  }
  EXPECT_EQ(parse_error(line("bob", kHex, "../x")).what,
            "subdirectory '../x' is not a relative path beneath --dir: component 1 is \".\" or "
            "\"..\"");
  const auto store = parse_ok(line("a", kHex, "x") + line("b", kHex, "deep/er/still") +
                              line("d", kHex, "caf\xc3\xa9") + line("e", kHex, ".hidden/..x"));
  EXPECT_EQ(store.size(), 4U);
  EXPECT_EQ(store.find("b")->subdir, "deep/er/still");
  EXPECT_EQ(store.find("d")->subdir, "caf\xc3\xa9");
  EXPECT_EQ(store.find("e")->subdir, ".hidden/..x");
}

// The partial files' area (DIR/.rdmax-partial) holds every sender's interrupted files.
TEST(SenderKeysFormat, TheReceiversOwnAreaIsNoSubdirectory) {
  for (const std::string subdir : {".rdmax-partial", ".rdmax-partial/x"})
    EXPECT_EQ(parse_error(line("bob", kHex, subdir)).what,
              "subdirectory '" + subdir +
                  "' is the receiver's own (partial files of interrupted transfers)");
  EXPECT_EQ(parse_ok(line("bob", kHex, "x/.rdmax-partial")).find("bob")->subdir,
            "x/.rdmax-partial");
}

TEST(SenderKeysFormat, TheFirstProblemIsReported) {
  EXPECT_EQ(parse_error(line("alice", kHex) + "bob\n" + line("alice", "zz")).line, 2U);
  EXPECT_EQ(parse_error(line("alice", "zz") + "bob\x01 " + std::string(kHex) + "\n").line, 1U);
}

TEST(SenderKeysFormat, ErrorsNeverContainTheKey) {
  const std::string hex(kHex);
  const std::string bad = hex.substr(0, 40) + "q" + hex.substr(41);
  for (const std::string& text : {
           "alice " + hex + " sub extra\n",
           "alice " + hex + "\x01\n",
           "alice " + hex + "\r\r\n",
           "alice " + bad + "\n",
           "alice " + hex + "0\n",
           "alice " + hex + hex + "00\n",
           "alice " + hex + "\nalice " + hex + "\n",
           "alice " + hex + " ../up\n",
           std::string(257, 'i') + " " + hex + "\n",
       }) {
    const auto error = parse_error(text);
    EXPECT_FALSE(error.what.empty());
    for (std::size_t i = 0; i + 8 <= hex.size(); i += 8) {
      EXPECT_FALSE(contains(error.what, hex.substr(i, 8))) << error.what;
    }
  }
}

TEST(SenderKeys, FindComparesWholeIds) {
  const auto store =
      parse_ok(line("alice", kHex) + line("bob", kShortHex) + line("carol", kHex, "c"));
  EXPECT_EQ(store.find("alice")->key, kBytes);
  EXPECT_EQ(store.find("bob")->key, kShortBytes);
  EXPECT_EQ(store.find("carol")->subdir, "c");
  const std::string_view unknowns[] = {
      "alic", "alicee", "a", "", "ALICE", "dave", std::string_view("alice\0", 6)};
  for (std::string_view unknown : unknowns) {
    EXPECT_EQ(store.find(unknown), nullptr) << unknown;
  }
  EXPECT_EQ(SenderKeyStore{}.find("alice"), nullptr);
}

TEST(SenderKeys, MovesLeaveNothingBehind) {
  auto store = parse_ok(line("alice", kHex, "sub"));
  SenderKeyStore moved = std::move(store);
  ASSERT_NE(moved.find("alice"), nullptr);
  EXPECT_EQ(moved.find("alice")->subdir, "sub");

  SenderKey key;
  key.id = "alice";
  key.key = kBytes;
  key.subdir = "sub";
  SenderKey other = std::move(key);
  EXPECT_EQ(other.id, "alice");
  EXPECT_EQ(other.key, kBytes);
  EXPECT_EQ(key.id, "");  // moved out, and the buffer left behind wiped
  EXPECT_EQ(key.key, "");
  EXPECT_EQ(key.subdir, "");
  SenderKey third;
  third.id = "bob";
  third = std::move(other);
  EXPECT_EQ(third.id, "alice");
  EXPECT_EQ(other.key, "");
}

TEST(KeyFile, OneIdAndKey) {
  auto result = parse_key_file("\xEF\xBB\xBF# my key\r\n\r\n  alice\t" + std::string(kHex) +
                               "  \r\n# done\n");
  ASSERT_TRUE(std::holds_alternative<SenderKey>(result));
  const auto& key = std::get<SenderKey>(result);
  EXPECT_EQ(key.id, "alice");
  EXPECT_EQ(key.key, kBytes);
  EXPECT_EQ(key.subdir, "");
}

TEST(KeyFile, ExactlyOneLine) {
  for (const char* text : {"", "\n\n", "# alice 00\n", "\xEF\xBB\xBF"}) {
    const auto error = key_file_error(text);
    EXPECT_EQ(error.line, 1U);
    EXPECT_EQ(error.what,
              "no \"ID KEY\" line: the file is empty or holds only blank and comment lines");
  }
  const auto two = key_file_error("# c\n" + line("alice", kHex) + "\n" + line("bob", kHex));
  EXPECT_EQ(two.line, 4U);
  EXPECT_EQ(
      two.what,
      "more than one \"ID KEY\" line (the first is line 2): a key file holds one sender's key");
}

TEST(KeyFile, Errors) {
  auto error = key_file_error("alice\n");
  EXPECT_EQ(error.line, 1U);
  EXPECT_EQ(error.what, "id without a key, expected \"ID KEY\"");
  error = key_file_error("# c\n" + line("alice", kHex, "sub"));
  EXPECT_EQ(error.line, 2U);
  EXPECT_EQ(error.what,
            "more than two fields, expected \"ID KEY\" (a key cannot contain spaces or tabs, and a "
            "comment needs a line of its own)");
  error = key_file_error(line("alice", kHex.substr(0, 20)));
  EXPECT_EQ(error.what,
            "a key needs at least 128 bits: 32 hex digits, as `openssl rand -hex 32` prints 64");
  error = key_file_error(line(std::string(257, 'i'), kHex));
  EXPECT_EQ(error.what, "id longer than 256 bytes");
  error = key_file_error("alice " + std::string(kHex) + " x\x01\n");
  EXPECT_EQ(error.what,
            "control character in a third field (bytes 0x00-0x1f and 0x7f are not allowed; tab "
            "only separates fields)");
  EXPECT_FALSE(contains(error.what, std::string(kHex.substr(0, 8))));
}

}  // namespace
