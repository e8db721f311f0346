#include "protocol/sizes.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>

namespace {

using rdmax::proto::format_size;
using rdmax::proto::parse_size;

constexpr std::uint64_t kKi = 1024;
constexpr std::uint64_t kMi = kKi * 1024;
constexpr std::uint64_t kGi = kMi * 1024;
constexpr std::uint64_t kTi = kGi * 1024;
constexpr std::uint64_t kPi = kTi * 1024;

TEST(ParseSize, PlainNumbers) {
  EXPECT_EQ(parse_size("0"), 0U);
  EXPECT_EQ(parse_size("123"), 123U);
  EXPECT_EQ(parse_size("007"), 7U);
  EXPECT_EQ(parse_size("512B"), 512U);
  EXPECT_EQ(parse_size("512b"), 512U);
  EXPECT_EQ(parse_size("18446744073709551615"), UINT64_MAX);
}

TEST(ParseSize, BinarySuffixesInEverySpelling) {
  EXPECT_EQ(parse_size("4K"), 4 * kKi);
  EXPECT_EQ(parse_size("4k"), 4 * kKi);
  EXPECT_EQ(parse_size("4KB"), 4 * kKi);
  EXPECT_EQ(parse_size("4KiB"), 4 * kKi);
  EXPECT_EQ(parse_size("4kib"), 4 * kKi);
  EXPECT_EQ(parse_size("16M"), 16 * kMi);
  EXPECT_EQ(parse_size("16MiB"), 16 * kMi);
  EXPECT_EQ(parse_size("16mb"), 16 * kMi);
  EXPECT_EQ(parse_size("1G"), kGi);
  EXPECT_EQ(parse_size("1GiB"), kGi);
  EXPECT_EQ(parse_size("2T"), 2 * kTi);
  EXPECT_EQ(parse_size("2TiB"), 2 * kTi);
  EXPECT_EQ(parse_size("3P"), 3 * kPi);
  EXPECT_EQ(parse_size("0G"), 0U);
}

TEST(ParseSize, RejectsGarbage) {
  for (const char* text :
       {"",     "-1", "+1",  " 1",  "1 ",    "1 K", "K",   "KiB", "1.5M", "1,000",
        "0x10", "1Q", "1Ki", "1iB", "1KiBB", "1KK", "1e3", "one", "1E",   "4\n"}) {
    EXPECT_EQ(parse_size(text), std::nullopt) << '"' << text << '"';
  }
}

TEST(ParseSize, RejectsOverflow) {
  EXPECT_EQ(parse_size("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_size("99999999999999999999999"), std::nullopt);
  EXPECT_EQ(parse_size("16383P"), 16383 * kPi);
  EXPECT_EQ(parse_size("16384P"), std::nullopt);
  EXPECT_EQ(parse_size("17179869183G"), 17179869183 * kGi);
  EXPECT_EQ(parse_size("17179869184G"), std::nullopt);
  EXPECT_EQ(parse_size("18446744073709551615K"), std::nullopt);
}

TEST(FormatSize, BytesBelowOneKiB) {
  EXPECT_EQ(format_size(0), "0 B");
  EXPECT_EQ(format_size(1), "1 B");
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_size(1023), "1023 B");
}

TEST(FormatSize, OneDecimalInTheLargestUnit) {
  EXPECT_EQ(format_size(kKi), "1.0 KiB");
  EXPECT_EQ(format_size(1536), "1.5 KiB");
  EXPECT_EQ(format_size(16 * kMi), "16.0 MiB");
  EXPECT_EQ(format_size(kGi + kGi / 4), "1.3 GiB");  // 1.25 rounds half up
  EXPECT_EQ(format_size(2 * kTi), "2.0 TiB");
  EXPECT_EQ(format_size(3 * kPi), "3.0 PiB");
  EXPECT_EQ(format_size(kPi * 1024), "1.0 EiB");
  EXPECT_EQ(format_size(UINT64_MAX), "16.0 EiB");
}

TEST(FormatSize, RoundingCarriesIntoTheNextUnit) {
  EXPECT_EQ(format_size(kKi + 1023), "2.0 KiB");  // 1.999 KiB
  EXPECT_EQ(format_size(kMi - 1), "1.0 MiB");     // would be "1024.0 KiB"
  EXPECT_EQ(format_size(kGi - 1), "1.0 GiB");
}

}  // namespace
