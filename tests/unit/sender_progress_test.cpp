#include <gtest/gtest.h>

#include <limits>

#include "sender/progress_format.hpp"

namespace rdmax {
namespace {

TEST(ProgressFormat, EtaReadsAsClockTime) {
  EXPECT_EQ(format_eta(0), "0:00");
  EXPECT_EQ(format_eta(7.4), "0:07");
  EXPECT_EQ(format_eta(754), "12:34");
  EXPECT_EQ(format_eta(3723), "1:02:03");
  EXPECT_EQ(format_eta(-1), "--:--");
  EXPECT_EQ(format_eta(1e12), "--:--");
  EXPECT_EQ(format_eta(std::numeric_limits<double>::infinity()), "--:--");
}

TEST(ProgressFormat, FullLineHasBarPercentCountsRateAndEta) {
  const std::uint64_t mib = 1 << 20;
  const std::string line = format_progress_line({"hashing", 64 * mib, 256 * mib, 32.0 * mib}, 100);
  const std::string bar = "[" + std::string(10, '=') + ">" + std::string(29, ' ') + "]";
  EXPECT_EQ(line, "hashing  " + bar + "  25%  64.0 MiB / 256.0 MiB  32.0 MiB/s  ETA 0:06");
  EXPECT_LE(line.size(), 100u);
}

TEST(ProgressFormat, UnknownRateShowsNoEta) {
  const std::string line = format_progress_line({"sending", 0, 1 << 20, 0}, 120);
  EXPECT_NE(line.find("  0%"), std::string::npos);
  EXPECT_NE(line.find("--- /s"), std::string::npos);
  EXPECT_NE(line.find("ETA --:--"), std::string::npos);
}

TEST(ProgressFormat, NarrowTerminalsDropEtaThenRateButNeverOverflow) {
  const std::uint64_t mib = 1 << 20;
  const ProgressSnapshot s{"sending", 100 * mib, 200 * mib, 10.0 * mib};
  for (unsigned width = 1; width <= 120; ++width) {
    const std::string line = format_progress_line(s, width);
    ASSERT_LE(line.size(), width) << "width " << width << ": '" << line << "'";
  }
  EXPECT_EQ(format_progress_line(s, 50).find("ETA"), std::string::npos);
  EXPECT_NE(format_progress_line(s, 50).find(" 50%"), std::string::npos);
  EXPECT_NE(format_progress_line(s, 62).find("MiB/s"), std::string::npos);
}

TEST(ProgressFormat, DoneBeyondTotalIsClampedAndEmptyTotalIsComplete) {
  EXPECT_NE(format_progress_line({"hashing", 10, 5, 1}, 100).find("100%"), std::string::npos);
  const std::string empty = format_progress_line({"hashing", 0, 0, 0}, 100);
  EXPECT_NE(empty.find("100%"), std::string::npos);
  EXPECT_EQ(empty.find('>'), std::string::npos);  // a full bar
}

TEST(ProgressFormat, ManyFilesShowTheirCountAndDropItBeforeTheBytes) {
  const std::uint64_t mib = 1 << 20;
  ProgressSnapshot s{"sending", 64 * mib, 256 * mib, 32.0 * mib};
  s.files_done = 12;
  s.files_total = 1004;
  const std::string full = format_progress_line(s, 120);
  EXPECT_NE(full.find("  25%  12/1004 files  64.0 MiB / 256.0 MiB  32.0 MiB/s  ETA 0:06"),
            std::string::npos)
      << full;
  // Narrower: the ETA, the rate, then the file count go; the bytes stay longest.
  bool saw_bytes_without_files = false;
  for (unsigned width = 1; width <= 120; ++width) {
    const std::string line = format_progress_line(s, width);
    ASSERT_LE(line.size(), width) << "width " << width << ": '" << line << "'";
    if (line.find("64.0 MiB / 256.0 MiB") != std::string::npos &&
        line.find("files") == std::string::npos)
      saw_bytes_without_files = true;
  }
  EXPECT_TRUE(saw_bytes_without_files);
  s.files_done = 2000;  // never more than the total
  EXPECT_NE(format_progress_line(s, 120).find("1004/1004 files"), std::string::npos);
}

TEST(ProgressFormat, SummaryGivesBytesTimeAndRate) {
  EXPECT_EQ(format_progress_summary("sending", 256u << 20, 4.0),
            "sending  256.0 MiB in 4.0s (64.0 MiB/s)");
  EXPECT_EQ(format_progress_summary("hashing", 0, 0), "hashing  0 B in 0.0s");
  EXPECT_EQ(format_progress_summary("sending", 256u << 20, 4.0, 1004),
            "sending  1004 files, 256.0 MiB in 4.0s (64.0 MiB/s)");
  EXPECT_EQ(format_progress_summary("sending", 0, 0, 1), "sending  1 file, 0 B in 0.0s");
}

}  // namespace
}  // namespace rdmax
