#pragma once
// One fetch command over several connections (docs/PROTOCOL.md 7.13, "Shares"): each
// connection's Fetch names its part of the share the command fetches, in the must-understand
// extension 0x8008, so that the server cuts the share again by the same rule and the parts
// together are the share, whatever the number of connections.

#include <cstdint>
#include <optional>

#include "protocol/wire.hpp"

namespace rdmax::proto {

struct FetchPart {
  std::uint32_t index = 0;
  std::uint32_t count = 1;  // 2..kMaxStripeMembers in the extension; 1: the whole share
  bool operator==(const FetchPart&) const = default;
};

// The extension for part `index` of `count` (count >= 2).
[[nodiscard]] HelloExtension fetch_part_extension(FetchPart part);
// The Fetch's part (the codec checked the extension's shape): the whole share without one.
[[nodiscard]] FetchPart fetch_part_of(const Fetch& fetch);

}  // namespace rdmax::proto
