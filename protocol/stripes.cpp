#include "protocol/stripes.hpp"

#include <algorithm>

namespace rdmax::proto {

HelloExtension stripe_group_extension(const StripeGroup& group) {
  std::string value(reinterpret_cast<const char*>(group.token.data()), group.token.size());
  for (const std::uint16_t v : {group.member, group.members}) {
    value.push_back(static_cast<char>(v & 0xFF));
    value.push_back(static_cast<char>(v >> 8));
  }
  return {kExtensionStripeGroup, std::move(value)};
}

std::optional<StripeGroup> stripe_group_of(const Open& open) {
  for (const auto& e : open.extensions) {
    if (e.type != kExtensionStripeGroup || e.value.size() != kStripeGroupValueBytes) continue;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(e.value.data());
    StripeGroup group;
    std::copy_n(bytes, kStripeTokenBytes, group.token.begin());
    auto u16_at = [&](std::size_t at) {
      return static_cast<std::uint16_t>(bytes[at] | bytes[at + 1] << 8);
    };
    group.member = u16_at(kStripeTokenBytes);
    group.members = u16_at(kStripeTokenBytes + 2);
    return group;
  }
  return std::nullopt;
}

StripeClaims::StripeClaims(std::uint64_t size, std::uint32_t chunk_size, std::uint64_t from)
    : size_(size), chunk_size_(chunk_size), from_(std::min(from, size)) {}

bool StripeClaims::claim(std::uint64_t offset, std::uint32_t length) {
  if (chunk_size_ == 0 || offset % chunk_size_ != 0 || offset < from_ || offset >= size_)
    return false;
  if (length != std::min<std::uint64_t>(chunk_size_, size_ - offset)) return false;
  if (!claimed_.insert(offset).second) return false;
  claimed_bytes_ += length;
  return true;
}

}  // namespace rdmax::proto
