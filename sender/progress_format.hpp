#pragma once
// The text of a progress line, kept apart from the terminal so that it can be tested:
//   "hashing  [=======>            ]  38%  97.0 MiB / 256.0 MiB  52.3 MiB/s  ETA 0:03"
// with many files the counts start with them ("12/1004 files  97.0 MiB / 256.0 MiB"),
// and, once a phase ends, its summary:
//   "hashing  256.0 MiB in 4.9s (52.3 MiB/s)"   "sending  1004 files, 256.0 MiB in ..."

#include <cstdint>
#include <string>
#include <string_view>

namespace rdmax {

struct ProgressSnapshot {
  std::string_view label;  // "hashing", "sending"
  std::uint64_t done = 0;
  std::uint64_t total = 0;
  double rate = 0;  // bytes per second; 0 while unknown
  // A command of many files (rdma-send -r): files settled of files_total; 0 = one file.
  std::uint64_t files_done = 0;
  std::uint64_t files_total = 0;
};

// "0:07", "12:34", "1:02:03"; "--:--" for an unknown or absurd duration.
[[nodiscard]] std::string format_eta(double seconds);

// One line no wider than `width` columns (the bar shrinks first, then the ETA and rate
// are dropped), without a newline or carriage return.
[[nodiscard]] std::string format_progress_line(const ProgressSnapshot& snapshot, unsigned width);

// The line a finished phase leaves behind; `files` > 0 names the number of files.
[[nodiscard]] std::string format_progress_summary(std::string_view label, std::uint64_t bytes,
                                                  double seconds, std::uint64_t files = 0);

}  // namespace rdmax
