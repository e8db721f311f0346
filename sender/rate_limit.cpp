#include "sender/rate_limit.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "protocol/sizes.hpp"

namespace rdmax {

namespace {

bool consume_suffix(std::string_view& text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  std::string_view tail = text.substr(text.size() - suffix.size());
  for (std::size_t k = 0; k < suffix.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(tail[k])) != suffix[k]) return false;
  text.remove_suffix(suffix.size());
  return true;
}

}  // namespace

std::optional<std::uint64_t> parse_rate(std::string_view text) {
  consume_suffix(text, "/s");
  const auto rate = proto::parse_size(text);
  if (!rate || *rate == 0) return std::nullopt;
  return rate;
}

TokenBucket::TokenBucket(std::uint64_t rate, std::uint64_t burst, Clock::time_point start)
    : rate_(std::max<std::uint64_t>(rate, 1)),
      burst_(std::max<std::uint64_t>(burst, 1)),
      capacity_(static_cast<double>(burst_) +
                static_cast<double>(rate_) * std::chrono::duration<double>(kWakeSlack).count()),
      last_(start) {}

void TokenBucket::refill(Clock::time_point now) {
  if (now <= last_) return;
  const double seconds = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(capacity_, tokens_ + seconds * static_cast<double>(rate_));
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
