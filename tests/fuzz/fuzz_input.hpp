#pragma once
// A fuzz input read as numbers: little-endian fields, and bytes missing at the end read as
// zero, so that every input means something. Shared by the ledger fuzz targets.

#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmax::fuzz {

class FuzzInput {
 public:
  explicit FuzzInput(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool empty() const { return bytes_.empty(); }
  std::uint8_t u8() {
    if (bytes_.empty()) return 0;
    const std::uint8_t b = bytes_[0];
    bytes_ = bytes_.subspan(1);
    return b;
  }
  std::uint64_t little_endian(int size) {
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i) v |= std::uint64_t{u8()} << (8 * i);
    return v;
  }
  std::uint16_t u16() { return static_cast<std::uint16_t>(little_endian(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(little_endian(4)); }
  std::uint64_t u64() { return little_endian(8); }
  // Mostly a number below `bound` (a real slot or entry, so that most calls hit one),
  // sometimes any value.
  std::uint32_t mostly_below(std::uint32_t bound) {
    const std::uint8_t b = u8();
    return b < 0xF0 ? b % bound : u32();
  }

 private:
  std::span<const std::uint8_t> bytes_;
};

}  // namespace rdmax::fuzz
