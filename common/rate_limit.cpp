#include "common/rate_limit.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>

namespace rdmax {

namespace {

struct Unit {
  std::string_view name;
  std::uint64_t factor;
};

// Longest names first, so "Mi" wins over "M".
constexpr std::array<Unit, 8> kUnits{{{"ki", 1ull << 10},
                                      {"mi", 1ull << 20},
                                      {"gi", 1ull << 30},
                                      {"ti", 1ull << 40},
                                      {"k", 1'000ull},
                                      {"m", 1'000'000ull},
                                      {"g", 1'000'000'000ull},
                                      {"t", 1'000'000'000'000ull}}};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool consume(std::string_view& text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix) return false;
  text.remove_prefix(prefix.size());
  return true;
}

}  // namespace

std::optional<std::uint64_t> parse_rate(std::string_view text) {
  std::size_t digits = 0;
  std::uint64_t value = 0;
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    const auto digit = static_cast<std::uint64_t>(text[digits] - '0');
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++digits;
  }
  if (digits == 0 || value == 0) return std::nullopt;
  const std::string unit_text = lower(text.substr(digits));
  std::string_view rest = unit_text;
  std::uint64_t factor = 1;
  for (const Unit& unit : kUnits) {
    if (consume(rest, unit.name)) {
      factor = unit.factor;
      break;
    }
  }
  consume(rest, "b");
  consume(rest, "/s");
  if (!rest.empty()) return std::nullopt;
  if (value > kMax / factor) return std::nullopt;
  return value * factor;
}

TokenBucket::TokenBucket(std::uint64_t rate, std::uint64_t burst, Clock::time_point start)
    : rate_(std::max<std::uint64_t>(rate, 1)),
      burst_(std::max<std::uint64_t>(burst, 1)),
      last_(start) {}

void TokenBucket::refill(Clock::time_point now) {
  if (now <= last_) return;
  const double seconds = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + seconds * static_cast<double>(rate_));
  last_ = now;
}

double TokenBucket::need(std::uint64_t bytes) const {
  return static_cast<double>(std::min(bytes, burst_));
}

bool TokenBucket::ready(std::uint64_t bytes, Clock::time_point now) {
  refill(now);
  return tokens_ + 0.5 >= need(bytes);  // half a byte: rounding, not a rate
}

TokenBucket::Clock::time_point TokenBucket::ready_at(std::uint64_t bytes, Clock::time_point now) {
  if (ready(bytes, now)) return now;
  const double seconds = (need(bytes) - tokens_) / static_cast<double>(rate_);
  // Rounded up to the next microsecond, so that a caller woken then finds the bucket ready.
  const auto wait = std::chrono::microseconds(static_cast<std::int64_t>(std::ceil(seconds * 1e6)));
  return now + std::chrono::duration_cast<Clock::duration>(wait);
}

void TokenBucket::take(std::uint64_t bytes, Clock::time_point now) {
  refill(now);
  tokens_ -= static_cast<double>(bytes);
}

}  // namespace rdmax
