#include "protocol/secrets.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "protocol/secure_wipe.hpp"
#include "text_contains.hpp"

namespace {

using rdmax::proto::constant_time_equal;
using rdmax::proto::SecretsParseError;
using rdmax::proto::SecretStore;

SecretStore parse_ok(std::string_view text) {
  auto result = SecretStore::parse(text);
  if (auto* error = std::get_if<SecretsParseError>(&result)) {
    ADD_FAILURE() << "line " << error->line << ": " << error->what;
    return SecretStore{};
  }
  return std::move(std::get<SecretStore>(result));
}

// The parse error, or nullopt (and a test failure) if the text parsed.
std::optional<SecretsParseError> parse_error(std::string_view text) {
  auto result = SecretStore::parse(text);
  if (auto* error = std::get_if<SecretsParseError>(&result)) return *error;
  ADD_FAILURE() << "parsed, but an error was expected: " << testing::PrintToString(text);
  return std::nullopt;
}

// The line of the parse error, or 0 if the text parsed.
std::size_t error_line(std::string_view text) {
  auto result = SecretStore::parse(text);
  if (auto* error = std::get_if<SecretsParseError>(&result)) {
    EXPECT_FALSE(error->what.empty());
    return error->line;
  }
  return 0;
}

using rdmax::test::contains;

// One test per rule of the format (protocol/secrets.hpp, docs/SECURITY.md).

TEST(SecretsFormat, IdAndSecretAreOneOrMoreSpacesOrTabsApart) {
  const auto store = parse_ok(
      "alice correct-horse\n"
      "bob\ts3cret\n"
      "carol   \t  spaced-out\n"
      "dave x");
  EXPECT_EQ(store.size(), 4U);
  EXPECT_EQ(store.lookup("alice"), "correct-horse");
  EXPECT_EQ(store.lookup("bob"), "s3cret");
  EXPECT_EQ(store.lookup("carol"), "spaced-out");
  EXPECT_EQ(store.lookup("dave"), "x");
}

TEST(SecretsFormat, LeadingAndTrailingBlanksAreIgnored) {
  const auto store = parse_ok("  alice one  \n\t bob\ttwo\t\ncarol three \t\r\n");
  EXPECT_EQ(store.size(), 3U);
  EXPECT_EQ(store.lookup("alice"), "one");
  EXPECT_EQ(store.lookup("bob"), "two");
  EXPECT_EQ(store.lookup("carol"), "three");
  EXPECT_EQ(store.lookup("  alice"), std::nullopt);
}

TEST(SecretsFormat, ASecretCannotContainSpacesOrTabs) {
  const auto error = parse_error("# ok\nalice correct horse\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->line, 2U);
  EXPECT_TRUE(contains(error->what, "more than two fields")) << error->what;
  EXPECT_TRUE(contains(error->what, "cannot contain spaces or tabs")) << error->what;
  EXPECT_EQ(error_line("alice correct\thorse\n"), 1U);
  EXPECT_EQ(error_line("alice a b c d e\n"), 1U);
}

TEST(SecretsFormat, AnIdNeedsASecret) {
  for (const char* text : {"alice\n", "alice   \n", "\talice\t\n", "alice"}) {
    const auto error = parse_error(text);
    ASSERT_TRUE(error) << text;
    EXPECT_EQ(error->line, 1U);
    EXPECT_TRUE(contains(error->what, "id without a secret")) << error->what;
  }
  EXPECT_EQ(error_line("# ok\n\nalice\n"), 3U);
}

TEST(SecretsFormat, CommentLinesStartWithAHashAfterOptionalBlanks) {
  const auto store = parse_ok(
      "# senders allowed to push files\n"
      "  # indented comment\n"
      "\t#tab-indented, no space after the hash\n"
      "#alice not-an-entry\n"
      "##\n"
      "bob two\n");
  EXPECT_EQ(store.size(), 1U);
  EXPECT_EQ(store.lookup("#alice"), std::nullopt);
  EXPECT_EQ(store.lookup("alice"), std::nullopt);
  EXPECT_EQ(store.lookup("bob"), "two");
}

TEST(SecretsFormat, NoCommentAfterTheFields) {
  // A trailing comment is a third field: an error, not silently part of the secret.
  const auto error = parse_error("alice one # trailing comment\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->line, 1U);
  EXPECT_TRUE(contains(error->what, "comment needs a line of its own")) << error->what;
  // '#' past the start of a line is an ordinary byte, in an id or a secret.
  const auto store = parse_ok("a#b c#d\nalice #one\n");
  EXPECT_EQ(store.lookup("a#b"), "c#d");
  EXPECT_EQ(store.lookup("alice"), "#one");
}

TEST(SecretsFormat, BlankLinesAreIgnored) {
  const auto store = parse_ok("\n\nalice one\n   \n\t\n \t \r\n\nbob two\n\n");
  EXPECT_EQ(store.size(), 2U);
  EXPECT_EQ(store.lookup("bob"), "two");
  EXPECT_EQ(error_line("\n\n \t\n\nalice\n"), 5U);  // blank lines still count
}

TEST(SecretsFormat, LinesEndWithLfOrCrlf) {
  const auto store = parse_ok("# c\r\nalice one\r\n\r\nbob two\ncarol three\r\ndave four\r");
  EXPECT_EQ(store.size(), 4U);
  EXPECT_EQ(store.lookup("alice"), "one");  // not "one\r"
  EXPECT_EQ(store.lookup("bob"), "two");
  EXPECT_EQ(store.lookup("carol"), "three");
  EXPECT_EQ(store.lookup("dave"), "four");  // one CR before the end of the text
  // The last line needs no LF.
  EXPECT_EQ(parse_ok("alice one").lookup("alice"), "one");
}

TEST(SecretsFormat, ALoneCarriageReturnIsAnError) {
  // Only one CR right before a line end is dropped; any other CR is a control character.
  // In particular a file with classic Mac (CR-only) line ends is one line, and an error
  // rather than one long comment.
  for (const char* text :
       {"alice one\r\r\n", "alice o\rne\n", "# c\ralice one\rbob two\r", "alice\rone\n"}) {
    const auto error = parse_error(text);
    ASSERT_TRUE(error) << testing::PrintToString(text);
    EXPECT_EQ(error->line, 1U);
    EXPECT_TRUE(contains(error->what, "carriage return")) << error->what;
  }
}

TEST(SecretsFormat, NoControlCharactersAnywhere) {
  for (int c = 0; c < 0x20; ++c) {
    if (c == '\t' || c == '\n' || c == '\r') continue;
    const std::string bad(1, static_cast<char>(c));
    EXPECT_EQ(error_line("# ok\nalice on" + bad + "e\n"), 2U) << c;
  }
  EXPECT_EQ(error_line("alice one\x7f\n"), 1U);
  EXPECT_EQ(error_line(std::string("alice o\0ne\n", 11)), 1U);
  EXPECT_EQ(error_line("alice one\fbob two\n"), 1U);  // form feed is no separator
  EXPECT_EQ(error_line("alice\vone\n"), 1U);          // nor is vertical tab
}

TEST(SecretsFormat, ControlCharacterErrorsNameTheFieldNotTheByte) {
  const auto in_id = parse_error("al\x01ice one\n");
  ASSERT_TRUE(in_id);
  EXPECT_TRUE(contains(in_id->what, "control character in the id")) << in_id->what;
  const auto in_secret = parse_error("  alice \t o\x1bne\n");
  ASSERT_TRUE(in_secret);
  EXPECT_TRUE(contains(in_secret->what, "control character in the secret")) << in_secret->what;
  const auto in_third = parse_error("alice one tw\x7fo\n");
  ASSERT_TRUE(in_third);
  EXPECT_TRUE(contains(in_third->what, "control character in a third field")) << in_third->what;
  // Comments are checked too: a NUL or an escape sequence there is as likely a broken file.
  const auto in_comment = parse_error("ok one\n  # a \x1b[2J comment\n");
  ASSERT_TRUE(in_comment);
  EXPECT_EQ(in_comment->line, 2U);
  EXPECT_TRUE(contains(in_comment->what, "control character in a comment")) << in_comment->what;
}

TEST(SecretsFormat, IdsAndSecretsAreBytesNotText) {
  // UTF-8 is neither required nor checked, and nothing is normalized: the bytes must match.
  const auto store = parse_ok(
      "caf\xe9 latin-1\n"                // not UTF-8
      "\xff\xfe \x80\x81\n"              // not text at all
      "caf\xc3\xa9 nfc\n"                // "café", precomposed é
      "cafe\xcc\x81 nfd\n"               // "café", e + combining acute
      "\xc2\xa0nbsp \xc2\x85-c1-byte\n"  // U+00A0 and U+0085 are not ASCII blanks or controls
  );
  EXPECT_EQ(store.size(), 5U);
  EXPECT_EQ(store.lookup("caf\xe9"), "latin-1");
  EXPECT_EQ(store.lookup("\xff\xfe"), "\x80\x81");
  EXPECT_EQ(store.lookup("caf\xc3\xa9"), "nfc");
  EXPECT_EQ(store.lookup("cafe\xcc\x81"), "nfd");
  EXPECT_EQ(store.lookup("\xc2\xa0nbsp"), "\xc2\x85-c1-byte");
}

TEST(SecretsFormat, AUtf8ByteOrderMarkAtTheStartIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  const auto store = parse_ok(bom + "alice one\nbob two\n");
  EXPECT_EQ(store.lookup("alice"), "one");
  EXPECT_EQ(parse_ok(bom + "# comment\n").size(), 0U);
  // Anywhere else it is three ordinary bytes.
  const auto later = parse_ok("alice one\n" + bom + "bob two\n");
  EXPECT_EQ(later.lookup("bob"), std::nullopt);
  EXPECT_EQ(later.lookup(bom + "bob"), "two");
}

TEST(SecretsFormat, IdIsAtMost256Bytes) {
  EXPECT_EQ(error_line(std::string(256, 'i') + " s"), 0U);
  const auto error = parse_error("# ok\n" + std::string(257, 'i') + " s");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->line, 2U);
  EXPECT_EQ(error->what, "id longer than 256 bytes");
  // Bytes, not characters: 128 two-byte characters fit, 129 do not.
  std::string accents;
  for (int i = 0; i < 128; ++i) accents += "\xc3\xa9";
  EXPECT_EQ(error_line(accents + " s"), 0U);
  EXPECT_EQ(error_line(accents + "\xc3\xa9 s"), 1U);
}

TEST(SecretsFormat, SecretIsAtMost1024Bytes) {
  const auto store = parse_ok("i " + std::string(1024, 's'));
  EXPECT_EQ(store.lookup("i"), std::string(1024, 's'));
  const auto error = parse_error("i " + std::string(1025, 's'));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->line, 1U);
  EXPECT_EQ(error->what, "secret longer than 1024 bytes");
}

TEST(SecretsFormat, DuplicateIdsAreAnErrorNamingBothLines) {
  const auto error = parse_error("alice one\nbob two\n# c\nalice three\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->line, 4U);
  EXPECT_EQ(error->what, "duplicate id, already on line 1");
  // Same secret or not, it is the id that counts.
  EXPECT_EQ(error_line("alice one\nalice one\n"), 2U);
}

TEST(SecretsFormat, IdsAreCaseSensitive) {
  const auto store = parse_ok("alice one\nAlice two\nALICE three\n");
  EXPECT_EQ(store.size(), 3U);
  EXPECT_EQ(store.lookup("alice"), "one");
  EXPECT_EQ(store.lookup("Alice"), "two");
  EXPECT_EQ(store.lookup("ALICE"), "three");
}

TEST(SecretsFormat, NoEntriesIsAnEmptyStoreThatDeniesEveryId) {
  // Allowed (the loader warns about it): rdma-recv then denies every id, as without --secrets.
  for (const char* text : {"", "\n", "# only a comment\n", "\r\n\t\n", "\xEF\xBB\xBF"}) {
    const auto store = parse_ok(text);
    EXPECT_EQ(store.size(), 0U) << testing::PrintToString(text);
    EXPECT_EQ(store.lookup("alice"), std::nullopt);
    EXPECT_EQ(store.lookup(""), std::nullopt);
    EXPECT_EQ(store.lookup("#"), std::nullopt);
  }
}

TEST(SecretsFormat, TheFirstProblemIsReported) {
  EXPECT_EQ(error_line("alice one\nbob\ncarol a b\nalice two\n"), 2U);
  EXPECT_EQ(error_line("alice one\ncarol a b\nbob\n"), 2U);
}

TEST(SecretsFormat, ErrorsNeverContainTheSecret) {
  const std::string secret = "S3cr3t-Value";
  for (const std::string& text : {
           "alice " + secret + " extra\n",
           "alice " + secret + "\x01\n",
           "alice " + secret + "\r\r\n",
           "alice " + secret + std::string(1025, 'x') + "\n",
           "alice " + secret + "\nalice " + secret + "\n",
           std::string(257, 'i') + " " + secret + "\n",
       }) {
    const auto error = parse_error(text);
    ASSERT_TRUE(error);
    EXPECT_FALSE(contains(error->what, secret)) << error->what;
    EXPECT_FALSE(contains(error->what, "S3cr")) << error->what;
  }
}

TEST(Secrets, LookupMissesPrefixesAndExtensions) {
  const auto store = parse_ok("alice one\nbob two\n");
  EXPECT_EQ(store.lookup("alic"), std::nullopt);
  EXPECT_EQ(store.lookup("alicee"), std::nullopt);
  EXPECT_EQ(store.lookup("a"), std::nullopt);
  EXPECT_EQ(store.lookup(""), std::nullopt);
  EXPECT_EQ(store.lookup(std::string("alice\0", 6)), std::nullopt);
  EXPECT_EQ(store.lookup("carol"), std::nullopt);
}

TEST(Secrets, LookupFindsFirstMiddleAndLast) {
  const auto store = parse_ok("a 1\nb 2\nc 3\n");
  EXPECT_EQ(store.lookup("a"), "1");
  EXPECT_EQ(store.lookup("b"), "2");
  EXPECT_EQ(store.lookup("c"), "3");
}

TEST(Secrets, MoveTransfersEntries) {
  auto a = parse_ok("alice one\n");
  SecretStore b = std::move(a);
  EXPECT_EQ(b.lookup("alice"), "one");
  SecretStore c = parse_ok("bob two\n");
  c = std::move(b);
  EXPECT_EQ(c.size(), 1U);
  EXPECT_EQ(c.lookup("alice"), "one");
  EXPECT_EQ(c.lookup("bob"), std::nullopt);
}

TEST(ConstantTimeEqual, ComparesContentAndLength) {
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
  EXPECT_FALSE(constant_time_equal("ab", "abc"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_FALSE(constant_time_equal(std::string("a\0", 2), "a"));
}

TEST(SecureWipe, ZeroesTheBytes) {
  std::string s = "top secret";
  rdmax::proto::secure_wipe(s.data(), s.size());
  EXPECT_EQ(s, std::string(10, '\0'));
}

}  // namespace
