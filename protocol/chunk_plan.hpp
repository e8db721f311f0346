#pragma once

// How a file is cut into chunks: chunk i covers [offset(i), offset(i) + length(i)).
// Every chunk is chunk_size bytes except possibly the last; an empty file has no chunks.

#include <cstdint>

namespace rdmax::proto {

struct ChunkPlan {
  std::uint64_t file_size = 0;
  std::uint32_t chunk_size = 0;  // must be > 0; a zero chunk size yields an empty plan

  [[nodiscard]] constexpr std::uint64_t chunk_count() const {
    if (chunk_size == 0) return 0;
    // Not (file_size + chunk_size - 1) / chunk_size: that overflows near 2^64.
    return file_size / chunk_size + (file_size % chunk_size != 0 ? 1 : 0);
  }

  // Offsets of valid indices are < file_size, so the product cannot overflow.
  [[nodiscard]] constexpr std::uint64_t offset(std::uint64_t index) const {
    return index < chunk_count() ? index * chunk_size : file_size;
  }

  // 0 for an index past the end.
  [[nodiscard]] constexpr std::uint32_t length(std::uint64_t index) const {
    if (index >= chunk_count()) return 0;
    const std::uint64_t left = file_size - index * chunk_size;
    return left < chunk_size ? static_cast<std::uint32_t>(left) : chunk_size;
  }
};

}  // namespace rdmax::proto
