#pragma once
// A progress meter for one phase of work (hashing a file, sending it): bytes, rate and
// ETA. On a terminal it redraws one status line in place ten times a second; in "lines"
// mode (asked for off a terminal) it prints a plain line every few seconds, which suits
// log files and CI output. Either way a finished phase leaves one summary line.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace rdmax {

enum class ProgressMode { Off, Terminal, Lines };

// Terminal when stderr is a terminal and the user did not ask for quiet; `requested`
// (--progress / --no-progress) overrides: on off a terminal means Lines.
[[nodiscard]] ProgressMode choose_progress_mode(std::optional<bool> requested, bool quiet);

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressBar(ProgressMode mode, std::string label, std::uint64_t total);
  ~ProgressBar();  // an unfinished bar is erased, not left half-drawn
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Cheap enough to call per chunk: draws only when the last draw is old enough.
  void update(std::uint64_t done);
  // A phase of many files: `done` of `total` settled, shown beside the bytes.
  void set_files(std::uint64_t done, std::uint64_t total);
  // Replaces the bar with the phase's summary line.
  void finish();
  // Erases the bar without a summary (the phase failed; the error says why).
  void abandon();

 private:
  void draw(Clock::time_point now);
  double current_rate(Clock::time_point now);

  ProgressMode mode_;
  std::string label_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  std::uint64_t files_done_ = 0;
  std::uint64_t files_total_ = 0;
  bool ended_ = false;
  Clock::time_point started_;
  Clock::time_point last_draw_{};
  std::deque<std::pair<Clock::time_point, std::uint64_t>> samples_;  // for a recent rate
};

}  // namespace rdmax
