#include "receiver/space_reservations.hpp"

#include <algorithm>
#include <utility>

namespace rdmax::receiver {

SpaceReservations::Hold::Hold(Hold&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

SpaceReservations::Hold& SpaceReservations::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    release_all();
    owner_ = std::exchange(other.owner_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void SpaceReservations::Hold::release(std::uint64_t written) noexcept {
  const std::uint64_t n = std::min(written, bytes_);
  if (n == 0 || owner_ == nullptr) return;
  bytes_ -= n;
  owner_->reserved_.fetch_sub(n, std::memory_order_relaxed);
}

std::optional<SpaceReservations::Hold> SpaceReservations::admit(
    std::uint64_t needed, const std::function<std::uint64_t()>& free_bytes,
    const std::function<bool()>& make) {
  const std::lock_guard lock(admitting_);
  // Releases may lower reserved_ meanwhile: that only makes this check stricter than it
  // had to be, never looser.
  if (!fits(free_bytes(), needed, reserved())) return std::nullopt;
  if (make()) return Hold{};  // preallocated: the free space counts it already
  reserved_.fetch_add(needed, std::memory_order_relaxed);
  return Hold{this, needed};
}

}  // namespace rdmax::receiver
