#pragma once

// Byte counts as people type and read them. Suffixes are always binary (K = 1024), whether
// written "4K", "4KB" or "4KiB" (rates too, rdma-send --bwlimit): a chunk or buffer size is a power
// of two in practice, and a decimal reading of "K" would silently misalign it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmax::proto {

// Accepts decimal digits followed by an optional case-insensitive unit: B, or K/M/G/T/P
// optionally followed by "B" or "iB". Rejects empty input, signs, whitespace, fractions,
// unknown units and values that do not fit in 64 bits.
[[nodiscard]] std::optional<std::uint64_t> parse_size(std::string_view text);

// "512 B" below 1 KiB, otherwise one decimal in the largest fitting unit: "16.0 MiB".
[[nodiscard]] std::string format_size(std::uint64_t bytes);

}  // namespace rdmax::proto
