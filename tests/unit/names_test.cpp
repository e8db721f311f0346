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
using rdmax::proto::NameBytes;
using rdmax::proto::NameError;

TEST(FileName, AcceptsPlainNames) {
  for (const char* name :
       {"my file.txt", "données.bin", "日本語.txt", "a..b", "...", ".hidden", "-leading-dash",
        "trailing.", " spaced ", "x", "a:b", "emoji-😀.png", "U+10FFFF-\xF4\x8F\xBF\xBF"}) {
    EXPECT_EQ(check_file_name(name, NameBytes::Printable), std::nullopt) << name;
  }
}

TEST(FileName, RejectsEmpty) {
  EXPECT_EQ(check_file_name("", NameBytes::Printable), NameError::Empty);
}

TEST(FileName, LimitIs255Bytes) {
  EXPECT_EQ(check_file_name(std::string(255, 'a'), NameBytes::Printable), std::nullopt);
  EXPECT_EQ(check_file_name(std::string(256, 'a'), NameBytes::Printable), NameError::TooLong);
  // Bytes, not characters: 85 three-byte characters fit, 86 do not.
  std::string cjk;
  for (int i = 0; i < 85; ++i) cjk += "語";
  EXPECT_EQ(check_file_name(cjk, NameBytes::Printable), std::nullopt);
  EXPECT_EQ(check_file_name(cjk + "語", NameBytes::Printable), NameError::TooLong);
}

TEST(FileName, RejectsDotAndDotDotOnly) {
  EXPECT_EQ(check_file_name(".", NameBytes::Printable), NameError::DotOrDotDot);
  EXPECT_EQ(check_file_name("..", NameBytes::Printable), NameError::DotOrDotDot);
  EXPECT_EQ(check_file_name("...", NameBytes::Printable), std::nullopt);
  EXPECT_EQ(check_file_name("..a", NameBytes::Printable), std::nullopt);
}

TEST(FileName, RejectsPathSeparators) {
  for (const char* name : {"/", "a/b", "../etc/passwd", "/abs", "dir/", "a\\b", "\\", "..\\x"}) {
    EXPECT_EQ(check_file_name(name, NameBytes::Printable), NameError::PathSeparator) << name;
  }
}

TEST(FileName, RejectsControlCharacters) {
  EXPECT_EQ(check_file_name(std::string("a\0b", 3), NameBytes::Printable), NameError::ControlChar);
  EXPECT_EQ(check_file_name(std::string(1, '\0'), NameBytes::Printable), NameError::ControlChar);
  for (int c = 1; c < 0x20; ++c) {
    std::string name = "x";
    name.push_back(static_cast<char>(c));
    EXPECT_EQ(check_file_name(name, NameBytes::Printable), NameError::ControlChar) << c;
  }
  EXPECT_EQ(check_file_name("del\x7f", NameBytes::Printable), NameError::ControlChar);
  EXPECT_EQ(check_file_name("new\nline", NameBytes::Printable), NameError::ControlChar);
  EXPECT_EQ(check_file_name("tab\there", NameBytes::Printable), NameError::ControlChar);
}

// A session's names (PROTOCOL.md 7.5) may hold every control byte but NUL: POSIX allows
// them, and a dataset with "new\nline" must arrive whole. The other rules stay.
TEST(FileName, ASessionNameMayHoldControlBytesButNotNul) {
  for (int c = 1; c < 0x20; ++c) {
    std::string name = "x";
    name.push_back(static_cast<char>(c));
    EXPECT_EQ(check_file_name(name, NameBytes::AnyButNul), std::nullopt) << c;
  }
  EXPECT_EQ(check_file_name("new\nline", NameBytes::AnyButNul), std::nullopt);
  EXPECT_EQ(check_file_name("del\x7f", NameBytes::AnyButNul), std::nullopt);
  EXPECT_EQ(check_file_name("esc\x1b[2J", NameBytes::AnyButNul), std::nullopt);
  EXPECT_EQ(check_file_name(std::string("a\0b", 3), NameBytes::AnyButNul), NameError::ControlChar);
  EXPECT_EQ(check_file_name("\n/x", NameBytes::AnyButNul), NameError::PathSeparator);
  EXPECT_EQ(check_file_name("..", NameBytes::AnyButNul), NameError::DotOrDotDot);
  EXPECT_EQ(check_file_name("\n\xff", NameBytes::AnyButNul), NameError::InvalidUtf8);
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
    EXPECT_EQ(check_file_name(name, NameBytes::Printable), NameError::InvalidUtf8) << name;
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
    EXPECT_EQ(check_file_name(name, NameBytes::Printable), std::nullopt) << name;
  }
}

TEST(FileName, FirstOffendingByteDecides) {
  EXPECT_EQ(check_file_name("a/\x01", NameBytes::Printable), NameError::PathSeparator);
  EXPECT_EQ(check_file_name("\x01/", NameBytes::Printable), NameError::ControlChar);
  EXPECT_EQ(check_file_name("\xFF/", NameBytes::Printable), NameError::InvalidUtf8);
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

namespace {

using rdmax::proto::escape_for_log;

// The UTF-8 encoding of code point c (no validation: the tests only pass valid ones).
std::string utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

// What escape_for_log must make of an escaped character: every byte as \xNN.
std::string escaped_bytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char b : bytes) {
    const auto c = static_cast<unsigned char>(b);
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  return out;
}

void expect_escaped(char32_t c) {
  const std::string ch = utf8(c);
  EXPECT_EQ(escape_for_log("a" + ch + "b"), "a" + escaped_bytes(ch) + "b")
      << "U+" << std::hex << static_cast<unsigned>(c);
}

void expect_kept(char32_t c) {
  const std::string ch = utf8(c);
  EXPECT_EQ(escape_for_log("a" + ch + "b"), "a" + ch + "b")
      << "U+" << std::hex << static_cast<unsigned>(c);
}

TEST(EscapeForLog, EscapesEveryC1Control) {
  for (char32_t c = 0x80; c <= 0x9F; ++c) expect_escaped(c);
  EXPECT_EQ(escape_for_log("\xC2\x85"), "\\xc2\\x85");  // NEL, a line break to some viewers
  EXPECT_EQ(escape_for_log("\xC2\x9B"
                           "31m"),
            "\\xc2\\x9b31m");  // CSI, the 8-bit ESC [
  expect_kept(0xA0);           // NO-BREAK SPACE: the first character after C1
  expect_kept(0xE9);           // é
  expect_kept(0x7E);           // ~, the last printable ASCII
}

TEST(EscapeForLog, EscapesBidiEmbeddingsAndOverrides) {
  for (char32_t c = 0x202A; c <= 0x202E; ++c) expect_escaped(c);
  // The classic spoof: RLO makes "exe.gpj" display as "jpg.exe".
  EXPECT_EQ(escape_for_log("invoice\xE2\x80\xAEgpj.exe"), "invoice\\xe2\\x80\\xaegpj.exe");
  expect_kept(0x2027);  // HYPHENATION POINT
  expect_kept(0x202F);  // NARROW NO-BREAK SPACE
}

TEST(EscapeForLog, EscapesBidiIsolates) {
  for (char32_t c = 0x2066; c <= 0x2069; ++c) expect_escaped(c);
  expect_kept(0x2065);
  expect_kept(0x206A);
}

TEST(EscapeForLog, EscapesDirectionalMarks) {
  expect_escaped(0x200E);  // LEFT-TO-RIGHT MARK
  expect_escaped(0x200F);  // RIGHT-TO-LEFT MARK
  expect_escaped(0x061C);  // ARABIC LETTER MARK
  expect_kept(0x061B);     // ARABIC SEMICOLON
  expect_kept(0x200C);     // ZERO WIDTH NON-JOINER: needed to spell Persian, for one
  expect_kept(0x200D);     // ZERO WIDTH JOINER: needed for emoji sequences
  expect_kept(0x2010);     // HYPHEN
}

TEST(EscapeForLog, EscapesLineAndParagraphSeparators) {
  expect_escaped(0x2028);
  expect_escaped(0x2029);
  EXPECT_EQ(escape_for_log("ok\xE2\x80\xA8"
                           "error: forged"),
            "ok\\xe2\\x80\\xa8error: forged");
}

TEST(EscapeForLog, KeepsPrintableUtf8OfEveryLength) {
  for (char32_t c :
       {0xA1, 0x7FF, 0x800, 0x4E2D, 0xD7FF, 0xE000, 0xFFFD, 0x10000, 0x1F600, 0x10FFFF}) {
    expect_kept(c);
  }
  // An emoji ZWJ sequence (family) stays one readable run.
  const std::string family =
      utf8(0x1F468) + utf8(0x200D) + utf8(0x1F469) + utf8(0x200D) + utf8(0x1F467);
  EXPECT_EQ(escape_for_log(family), family);
}

TEST(EscapeForLog, InvalidUtf8NextToAFormatCharacter) {
  // A truncated sequence is escaped byte by byte; the character after it is still judged.
  EXPECT_EQ(escape_for_log("\xE2\x80\xE2\x80\xAE"), "\\xe2\\x80\\xe2\\x80\\xae");
  EXPECT_EQ(escape_for_log("\xE2\x80\xC3\xA9"), "\\xe2\\x80\xC3\xA9");
}

}  // namespace

// Words for people, not the enum's name; in a path a '/' splits components instead.
TEST(FileName, DescribeSaysWhatIsWrongInWords) {
  using rdmax::proto::describe;
  EXPECT_EQ(describe(NameError::Empty), "is empty");
  EXPECT_EQ(describe(NameError::TooLong), "is longer than 255 bytes");
  EXPECT_EQ(describe(NameError::DotOrDotDot), "is \".\" or \"..\"");
  EXPECT_EQ(describe(NameError::PathSeparator), "contains a '/' or a backslash");
  EXPECT_EQ(describe(NameError::ControlChar), "contains a control character");
  EXPECT_EQ(describe(NameError::InvalidUtf8), "is not valid UTF-8");
}
