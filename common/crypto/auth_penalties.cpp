#include "common/crypto/auth_penalties.hpp"

#include <algorithm>

namespace rdmax {

std::chrono::seconds AuthPenalties::penalty_after(std::uint32_t failures) {
  if (failures == 0) return std::chrono::seconds{0};
  // 1, 2, 4 ... 64 s: shifts past 6 would only exceed the cap.
  const std::uint32_t shift = std::min<std::uint32_t>(failures - 1, 6);
  return std::min(std::chrono::seconds{std::int64_t{1} << shift}, kMaxPenalty);
}

std::chrono::seconds AuthPenalties::failed(const std::string& address, Clock::time_point now) {
  auto it = records_.find(address);
  if (it != records_.end() && now - it->second.last_failure >= kForgetAfter) {
    records_.erase(it);
    it = records_.end();
  }
  if (it == records_.end()) {
    if (records_.size() >= kMaxAddresses) {
      records_.erase(
          std::min_element(records_.begin(), records_.end(), [](const auto& a, const auto& b) {
            return a.second.last_failure < b.second.last_failure;
          }));
    }
    it = records_.emplace(address, Record{}).first;
  }
  Record& r = it->second;
  ++r.failures;
  r.last_failure = now;
  const std::chrono::seconds penalty = penalty_after(r.failures);
  r.refused_until = now + penalty;
  return penalty;
}

void AuthPenalties::succeeded(const std::string& address) {
  records_.erase(address);
}

std::optional<std::chrono::seconds> AuthPenalties::refused_for(const std::string& address,
                                                               Clock::time_point now) const {
  const auto it = records_.find(address);
  if (it == records_.end() || now >= it->second.refused_until) return std::nullopt;
  // Rounded up: "try again in 0 s" would be a lie.
  return std::chrono::ceil<std::chrono::seconds>(it->second.refused_until - now);
}

}  // namespace rdmax
