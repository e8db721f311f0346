#include "protocol/secrets.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "protocol/secure_wipe.hpp"

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

// The line of the parse error, or 0 if the text parsed.
std::size_t error_line(std::string_view text) {
  auto result = SecretStore::parse(text);
  if (auto* error = std::get_if<SecretsParseError>(&result)) {
    EXPECT_FALSE(error->what.empty());
    return error->line;
  }
  return 0;
}

TEST(Secrets, ParsesPairsCommentsAndBlankLines) {
  const auto store = parse_ok(
      "# senders allowed to push files\n"
      "\n"
      "alice correct-horse\n"
      "   \t \n"
      "  # indented comment\n"
      "bob\ts3cret\n"
      "carol   \t  spaced-out   \n"
      "#no space after hash\n"
      "dave x");
  EXPECT_EQ(store.size(), 4U);
  EXPECT_EQ(store.lookup("alice"), "correct-horse");
  EXPECT_EQ(store.lookup("bob"), "s3cret");
  EXPECT_EQ(store.lookup("carol"), "spaced-out");
  EXPECT_EQ(store.lookup("dave"), "x");
}

TEST(Secrets, ToleratesCrlf) {
  const auto store = parse_ok("# c\r\nalice one\r\n\r\nbob two\r\n");
  EXPECT_EQ(store.size(), 2U);
  EXPECT_EQ(store.lookup("alice"), "one");
  EXPECT_EQ(store.lookup("bob"), "two");
}

TEST(Secrets, EmptyTextIsAnEmptyStore) {
  for (const char* text : {"", "\n", "# only a comment\n", "\r\n\t\n"}) {
    const auto store = parse_ok(text);
    EXPECT_EQ(store.size(), 0U) << text;
    EXPECT_EQ(store.lookup("alice"), std::nullopt);
    EXPECT_EQ(store.lookup(""), std::nullopt);
  }
}

TEST(Secrets, HashInsideATokenIsNotAComment) {
  const auto store = parse_ok("a#b c#d\n");
  EXPECT_EQ(store.lookup("a#b"), "c#d");
}

TEST(Secrets, RejectsDuplicateIds) {
  EXPECT_EQ(error_line("alice one\nbob two\nalice three\n"), 3U);
}

TEST(Secrets, IdsAreCaseSensitive) {
  const auto store = parse_ok("alice one\nAlice two\n");
  EXPECT_EQ(store.lookup("alice"), "one");
  EXPECT_EQ(store.lookup("Alice"), "two");
}

TEST(Secrets, RejectsWrongFieldCounts) {
  EXPECT_EQ(error_line("alice\n"), 1U);
  EXPECT_EQ(error_line("# ok\nalice   \n"), 2U);
  EXPECT_EQ(error_line("alice one two\n"), 1U);
  EXPECT_EQ(error_line("alice one # trailing comment\n"), 1U);
}

TEST(Secrets, RejectsControlCharacters) {
  EXPECT_EQ(error_line("alice on\x01e\n"), 1U);
  EXPECT_EQ(error_line("alice one\r\r\n"), 1U);  // only one CR before LF is a line end
  EXPECT_EQ(error_line(std::string("alice o\0ne\n", 11)), 1U);
}

TEST(Secrets, EnforcesLengthLimits) {
  EXPECT_EQ(error_line(std::string(256, 'i') + " " + std::string(1024, 's')), 0U);
  EXPECT_EQ(error_line(std::string(257, 'i') + " s"), 1U);
  EXPECT_EQ(error_line("i " + std::string(1025, 's')), 1U);
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
