#include "protocol/sizes.hpp"

#include <array>
#include <cctype>
#include <limits>

namespace rdmax::proto {
namespace {

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Power of 1024 that unit stands for, or nullopt if it is not a unit.
std::optional<unsigned> unit_exponent(std::string_view unit) {
  if (unit.empty() || equals_ignoring_case(unit, "b")) return 0U;
  constexpr std::string_view kPrefixes = "kmgtp";
  const std::size_t prefix = kPrefixes.find(lower(unit[0]));
  if (prefix == std::string_view::npos) return std::nullopt;
  const std::string_view rest = unit.substr(1);
  if (rest.empty() || equals_ignoring_case(rest, "b") || equals_ignoring_case(rest, "ib")) {
    return static_cast<unsigned>(prefix + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::size_t i = 0;
  std::uint64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (i == 0) return std::nullopt;  // empty, sign, or no digits

  const auto exponent = unit_exponent(text.substr(i));
  if (!exponent) return std::nullopt;
  const unsigned shift = 10 * *exponent;
  if (shift > 0 && value > (kMax >> shift)) return std::nullopt;
  return value << shift;
}

std::string format_size(std::uint64_t bytes) {
  static constexpr std::array<const char*, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";

  std::size_t unit = 1;
  while (unit + 1 < kUnits.size() && (bytes >> (10 * (unit + 1))) != 0) ++unit;
  // Integer arithmetic, rounded to the nearest tenth. rem * 10 < 2^64 because the largest
  // unit shift is 60 bits.
  const unsigned shift = static_cast<unsigned>(10 * unit);
  std::uint64_t whole = bytes >> shift;
  const std::uint64_t rem = bytes & ((std::uint64_t{1} << shift) - 1);
  std::uint64_t tenths = (rem * 10 + (std::uint64_t{1} << (shift - 1))) >> shift;
  if (tenths == 10) {
    ++whole;
    tenths = 0;
  }
  // Rounding up may reach 1024 of this unit: show it as 1.0 of the next one instead.
  if (whole == 1024 && unit + 1 < kUnits.size()) {
    whole = 1;
    ++unit;
  }
  return std::to_string(whole) + "." + std::to_string(tenths) + " " + kUnits[unit];
}

}  // namespace rdmax::proto
