#include "sender/progress_bar.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "common/cli/status_line.hpp"
#include "sender/progress_format.hpp"

namespace rdmax {
namespace {

constexpr auto kTerminalInterval = std::chrono::milliseconds(100);
constexpr auto kLinesInterval = std::chrono::seconds(2);
// The rate shown is over the last few seconds, not since the start: it follows a link
// that speeds up or stalls, and the ETA follows the rate.
constexpr auto kRateWindow = std::chrono::seconds(3);
constexpr unsigned kLinesWidth = 80;

unsigned terminal_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= 20) return size.ws_col - 1;
  return kLinesWidth - 1;  // the last column would make some terminals wrap
}

double seconds(ProgressBar::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

ProgressMode choose_progress_mode(std::optional<bool> requested, bool quiet) {
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  if (requested) {
    if (!*requested) return ProgressMode::Off;
    return terminal ? ProgressMode::Terminal : ProgressMode::Lines;
  }
  return terminal && !quiet ? ProgressMode::Terminal : ProgressMode::Off;
}

ProgressBar::ProgressBar(ProgressMode mode, std::string label, std::uint64_t total)
    : mode_(mode), label_(std::move(label)), total_(total), started_(Clock::now()) {
  samples_.emplace_back(started_, 0);
  if (mode_ == ProgressMode::Terminal) draw(started_);
}

ProgressBar::~ProgressBar() {
  abandon();
}

void ProgressBar::update(std::uint64_t done) {
  done_ = done;
  if (mode_ == ProgressMode::Off || ended_) return;
  const auto now = Clock::now();
  const auto interval =
      mode_ == ProgressMode::Terminal ? Clock::duration(kTerminalInterval) : kLinesInterval;
  if (now - last_draw_ >= interval) draw(now);
}

void ProgressBar::set_files(std::uint64_t done, std::uint64_t total) {
  files_done_ = done;
  files_total_ = total;
}

double ProgressBar::current_rate(Clock::time_point now) {
  samples_.emplace_back(now, done_);
  while (samples_.size() > 2 && now - samples_[1].first >= kRateWindow) samples_.pop_front();
  const auto& [t0, d0] = samples_.front();
  const double dt = seconds(now - t0);
  // Under a quarter second the rate is mostly noise.
  return dt >= 0.25 ? static_cast<double>(done_ - d0) / dt : 0;
}

void ProgressBar::draw(Clock::time_point now) {
  last_draw_ = now;
  const ProgressSnapshot snapshot{label_,      done_,       total_, current_rate(now),
                                  files_done_, files_total_};
  if (mode_ == ProgressMode::Terminal) {
    status_line::set(format_progress_line(snapshot, terminal_width()));
  } else if (mode_ == ProgressMode::Lines && now != started_) {
    std::string line = format_progress_line(snapshot, kLinesWidth) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

void ProgressBar::finish() {
  if (mode_ == ProgressMode::Off || ended_) return;
  ended_ = true;
  const std::string summary =
      format_progress_summary(label_, done_, seconds(Clock::now() - started_), files_total_);
  if (mode_ == ProgressMode::Terminal) {
    status_line::finish_with(summary);
  } else {
    std::fprintf(stderr, "%s\n", summary.c_str());
  }
}

void ProgressBar::abandon() {
  if (mode_ == ProgressMode::Off || ended_) return;
  ended_ = true;
  if (mode_ == ProgressMode::Terminal) status_line::clear();
}

}  // namespace rdmax
