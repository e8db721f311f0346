#pragma once
// Slowing down key guessing (rdma-recv --senders, docs/SECURITY.md): after the k-th failed
// authentication in a row from one address, that address is refused in the CM event itself
// (no queue pair, no memory) for min(2^(k-1), 64) seconds. A success from the address, or
// 15 minutes without a failure, forgets it. Other addresses are not affected.
//
// Keyed by the address without its port (address_text): a new source port is the same
// guesser. Bounded: at most kMaxAddresses are remembered; past that, the address whose last
// failure is oldest is forgotten first.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace rdmax {

class AuthPenalties {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kMaxPenalty{64};
  static constexpr std::chrono::minutes kForgetAfter{15};
  static constexpr std::size_t kMaxAddresses = 4096;

  // A failed authentication from `address` at `now`: returns the penalty it now serves.
  std::chrono::seconds failed(const std::string& address, Clock::time_point now);
  void succeeded(const std::string& address);
  // How long `address` is still refused at `now`; nullopt when it may try.
  [[nodiscard]] std::optional<std::chrono::seconds> refused_for(const std::string& address,
                                                                Clock::time_point now) const;

  // The penalty after `failures` failures in a row.
  [[nodiscard]] static std::chrono::seconds penalty_after(std::uint32_t failures);

 private:
  struct Record {
    std::uint32_t failures = 0;
    Clock::time_point last_failure{};
    Clock::time_point refused_until{};
  };
  std::map<std::string, Record> records_;
};

}  // namespace rdmax
