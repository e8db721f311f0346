#include "sender/progress_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "protocol/sizes.hpp"

namespace rdmax {
namespace {

constexpr unsigned kLabelWidth = 8;
constexpr unsigned kMinBar = 10;
constexpr unsigned kMaxBar = 40;

std::string padded_label(std::string_view label) {
  std::string text(label);
  if (text.size() < kLabelWidth) text.resize(kLabelWidth, ' ');
  return text;
}

std::string rate_text(double rate) {
  if (!(rate > 0) || !std::isfinite(rate)) return "--- /s";
  return proto::format_size(static_cast<std::uint64_t>(rate)) + "/s";
}

std::string bar(unsigned width, std::uint64_t done, std::uint64_t total) {
  const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const auto filled = static_cast<unsigned>(std::clamp(fraction, 0.0, 1.0) * width);
  std::string text = "[";
  text.append(filled, '=');
  if (filled < width) {
    text.push_back('>');
    text.append(width - filled - 1, ' ');
  }
  text.push_back(']');
  return text;
}

}  // namespace

std::string format_eta(double seconds) {
  // Beyond 100 hours an estimate says nothing useful.
  if (!std::isfinite(seconds) || seconds < 0 || seconds >= 100 * 3600.0) return "--:--";
  const auto total = static_cast<unsigned long>(std::lround(seconds));
  const unsigned long h = total / 3600, m = total / 60 % 60, s = total % 60;
  char text[32];
  if (h > 0)
    std::snprintf(text, sizeof text, "%lu:%02lu:%02lu", h, m, s);
  else
    std::snprintf(text, sizeof text, "%lu:%02lu", m, s);
  return text;
}

std::string format_progress_line(const ProgressSnapshot& s, unsigned width) {
  const std::uint64_t done = std::min(s.done, s.total);
  const unsigned percent = s.total == 0 ? 100u : static_cast<unsigned>(done * 100 / s.total);
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3u%%", percent);
  const std::string bytes = proto::format_size(done) + " / " + proto::format_size(s.total);
  const std::string counts = s.files_total == 0
                                 ? bytes
                                 : std::to_string(std::min(s.files_done, s.files_total)) + "/" +
                                       std::to_string(s.files_total) + " files  " + bytes;
  const std::string rate = rate_text(s.rate);
  const double eta_s = s.rate > 0 ? static_cast<double>(s.total - done) / s.rate : -1;
  const std::string eta = "ETA " + format_eta(eta_s);

  // Try the full line, then drop the ETA, then the rate; the bar takes what is left.
  const std::string label = padded_label(s.label);
  // With files, their count goes last: the bytes say more about the time left.
  const std::string tails[] = {"  " + counts + "  " + rate + "  " + eta,
                               "  " + counts + "  " + rate, "  " + counts, "  " + bytes, ""};
  for (const std::string& tail : tails) {
    const std::size_t fixed = label.size() + 1 + 2 + 1 + std::string_view(pct).size() + tail.size();
    if (fixed + kMinBar > width) continue;
    const auto bar_width = static_cast<unsigned>(std::min<std::size_t>(kMaxBar, width - fixed));
    return label + " " + bar(bar_width, done, s.total) + " " + pct + tail;
  }
  // Narrower than any bar: label and percentage, cut to the width.
  std::string text = label + " " + pct;
  if (text.size() > width) text.resize(width);
  return text;
}

std::string format_progress_summary(std::string_view label, std::uint64_t bytes, double seconds,
                                    std::uint64_t files) {
  char time[32];
  std::snprintf(time, sizeof time, "%.1fs", seconds);
  std::string text = padded_label(label) + " ";
  if (files > 0) text += std::to_string(files) + (files == 1 ? " file, " : " files, ");
  text += proto::format_size(bytes) + " in " + time;
  if (seconds > 0) text += " (" + rate_text(static_cast<double>(bytes) / seconds) + ")";
  return text;
}

}  // namespace rdmax
