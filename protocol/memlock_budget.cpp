#include "protocol/memlock_budget.hpp"

#include <algorithm>

namespace rdmax::proto {

namespace {
// Bytes each connection may pin for its data source: its share of the limit less its
// control buffers, in whole pages. nullopt: no limit.
std::optional<std::uint64_t> data_share(const PinBudget& b) {
  if (!b.limit) return std::nullopt;
  const std::uint64_t share = *b.limit / std::max<std::uint32_t>(b.connections, 1);
  const std::uint64_t control = pinned_size(b.control_bytes, b.page_size);
  if (share <= control) return 0;
  const std::uint64_t page = std::max<std::uint64_t>(b.page_size, 1);
  return (share - control) / page * page;
}
}  // namespace

std::uint64_t pinned_size(std::uint64_t bytes, std::uint64_t page_size) {
  if (page_size == 0) return bytes;
  return (bytes + page_size - 1) / page_size * page_size;
}

std::uint64_t connection_pins(const PinBudget& b, std::uint32_t slot_size, std::uint32_t slots) {
  return pinned_size(b.control_bytes, b.page_size) +
         pinned_size(std::uint64_t{slot_size} * slots, b.page_size);
}

std::uint64_t limit_for(const PinBudget& b, std::uint32_t slot_size, std::uint32_t slots) {
  return connection_pins(b, slot_size, slots) * std::max<std::uint32_t>(b.connections, 1);
}

StagingFit fit_staging(const PinBudget& b, std::uint32_t slot_size, std::uint32_t wanted) {
  const auto share = data_share(b);
  if (!share || slot_size == 0) return {wanted, wanted};
  // Whole slots in the share's whole pages: a buffer of s slots pins
  // pinned_size(s x slot_size) <= share exactly when s x slot_size <= share.
  const std::uint64_t slots = *share / slot_size;
  return {static_cast<std::uint32_t>(std::min<std::uint64_t>(slots, wanted)), wanted};
}

std::optional<WindowFit> fit_file_windows(const PinBudget& b, std::uint32_t slot_size,
                                          std::uint32_t wanted, std::uint64_t preferred_chunks) {
  const std::uint64_t preferred = std::max<std::uint64_t>(preferred_chunks, wanted);
  const auto share = data_share(b);
  if (!share || slot_size == 0)
    return WindowFit{static_cast<std::uint32_t>(std::min<std::uint64_t>(preferred, UINT32_MAX)),
                     wanted};
  const std::uint64_t page = std::max<std::uint64_t>(b.page_size, 1);
  const std::uint64_t window_bytes = *share / kMaxPinnedWindows / page * page;
  const std::uint64_t chunks = std::min(preferred, window_bytes / slot_size);
  if (chunks == 0) return std::nullopt;
  const auto window = static_cast<std::uint32_t>(chunks);
  return WindowFit{window, std::min(wanted, window)};
}

std::uint32_t connections_that_fit(const PinBudget& b, std::uint32_t wanted,
                                   std::uint32_t slot_size) {
  wanted = std::max<std::uint32_t>(wanted, 1);
  if (!b.limit) return wanted;
  const std::uint64_t one = connection_pins(b, slot_size, 1);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(wanted, *b.limit / one));
}

}  // namespace rdmax::proto
