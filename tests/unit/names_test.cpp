#include "protocol/names.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>

namespace rdmax::proto {
void PrintTo(NameError e, std::ostream* os) {
  *os << to_string(e);
}
}  // namespace rdmax::proto

namespace {

using rdmax::proto::check_file_name;
using rdmax::proto::NameError;

TEST(FileName, AcceptsPlainNames) {
  for (const char* name :
       {"my file.txt", "données.bin", "日本語.txt", "a..b", "...", ".hidden", "-leading-dash",
        "trailing.", " spaced ", "x", "a:b", "emoji-😀.png", "U+10FFFF-\xF4\x8F\xBF\xBF"}) {
    EXPECT_EQ(check_file_name(name), std::nullopt) << name;
  }
}

TEST(FileName, RejectsEmpty) {
  EXPECT_EQ(check_file_name(""), NameError::Empty);
}

TEST(FileName, LimitIs255Bytes) {
  EXPECT_EQ(check_file_name(std::string(255, 'a')), std::nullopt);
  EXPECT_EQ(check_file_name(std::string(256, 'a')), NameError::TooLong);
  // Bytes, not characters: 85 three-byte characters fit, 86 do not.
  std::string cjk;
  for (int i = 0; i < 85; ++i) cjk += "語";
  EXPECT_EQ(check_file_name(cjk), std::nullopt);
  EXPECT_EQ(check_file_name(cjk + "語"), NameError::TooLong);
}

TEST(FileName, RejectsDotAndDotDotOnly) {
  EXPECT_EQ(check_file_name("."), NameError::DotOrDotDot);
  EXPECT_EQ(check_file_name(".."), NameError::DotOrDotDot);
  EXPECT_EQ(check_file_name("..."), std::nullopt);
  EXPECT_EQ(check_file_name("..a"), std::nullopt);
}

TEST(FileName, RejectsPathSeparators) {
  for (const char* name : {"/", "a/b", "../etc/passwd", "/abs", "dir/", "a\\b", "\\", "..\\x"}) {
    EXPECT_EQ(check_file_name(name), NameError::PathSeparator) << name;
  }
}

TEST(FileName, RejectsControlCharacters) {
  EXPECT_EQ(check_file_name(std::string("a\0b", 3)), NameError::ControlChar);
  EXPECT_EQ(check_file_name(std::string(1, '\0')), NameError::ControlChar);
  for (int c = 1; c < 0x20; ++c) {
    std::string name = "x";
    name.push_back(static_cast<char>(c));
    EXPECT_EQ(check_file_name(name), NameError::ControlChar) << c;
  }
  EXPECT_EQ(check_file_name("del\x7f"), NameError::ControlChar);
  EXPECT_EQ(check_file_name("new\nline"), NameError::ControlChar);
  EXPECT_EQ(check_file_name("tab\there"), NameError::ControlChar);
}

TEST(FileName, RejectsInvalidUtf8) {
  for (const char* name : {
           "\x80",              // lone continuation byte
           "a\xBF",             // continuation byte after ASCII
           "\xC3",              // truncated 2-byte sequence
           "\xC3(",             // bad continuation
           "\xE6\x97",          // truncated 3-byte sequence
           "\xF0\x9F\x98",      // truncated 4-byte sequence
           "\xC0\xAF",          // overlong '/'
           "\xC1\xBF",          // overlong
           "\xE0\x80\xAF",      // overlong 3-byte
           "\xE0\x9F\xBF",      // overlong 3-byte, highest
           "\xF0\x80\x80\xAF",  // overlong 4-byte
           "\xF0\x8F\xBF\xBF",  // overlong 4-byte, highest
           "\xED\xA0\x80",      // surrogate U+D800
           "\xED\xBF\xBF",      // surrogate U+DFFF
           "\xF4\x90\x80\x80",  // U+110000
           "\xF5\x80\x80\x80",  // lead byte beyond U+10FFFF
           "\xFE",              // never valid
           "\xFF",              // never valid
           "\xE6\x97\x41",      // ASCII where a continuation belongs
       }) {
    EXPECT_EQ(check_file_name(name), NameError::InvalidUtf8) << name;
  }
}

TEST(FileName, AcceptsUtf8BoundaryCodePoints) {
  for (const char* name : {
           "\xC2\x80",          // U+0080, smallest 2-byte
           "\xDF\xBF",          // U+07FF
           "\xE0\xA0\x80",      // U+0800, smallest 3-byte
           "\xED\x9F\xBF",      // U+D7FF, just below the surrogates
           "\xEE\x80\x80",      // U+E000, just above them
           "\xEF\xBF\xBF",      // U+FFFF
           "\xF0\x90\x80\x80",  // U+10000, smallest 4-byte
       }) {
    EXPECT_EQ(check_file_name(name), std::nullopt) << name;
  }
}

TEST(FileName, FirstOffendingByteDecides) {
  EXPECT_EQ(check_file_name("a/\x01"), NameError::PathSeparator);
  EXPECT_EQ(check_file_name("\x01/"), NameError::ControlChar);
  EXPECT_EQ(check_file_name("\xFF/"), NameError::InvalidUtf8);
}

TEST(FileName, EveryErrorHasAName) {
  for (auto e : {NameError::Empty, NameError::TooLong, NameError::DotOrDotDot,
                 NameError::PathSeparator, NameError::ControlChar, NameError::InvalidUtf8}) {
    EXPECT_STRNE(rdmax::proto::to_string(e), "UnknownNameError");
  }
}

}  // namespace

TEST(EscapeForLog, KeepsTextAndEscapesWhatCouldForgeLines) {
  using rdmax::proto::escape_for_log;
  EXPECT_EQ(escape_for_log("my file ü 日本.bin"), "my file ü 日本.bin");
  EXPECT_EQ(escape_for_log("a\nb"), "a\\x0ab");
  EXPECT_EQ(escape_for_log("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(escape_for_log("back\\slash"), "back\\x5cslash");
  EXPECT_EQ(escape_for_log("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_for_log("\xe6\x97"), "\\xe6\\x97");  // truncated UTF-8
  EXPECT_EQ(escape_for_log(""), "");
}
