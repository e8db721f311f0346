#pragma once
// One file over several connections (docs/PROTOCOL.md 7.12), the pure parts both sides share:
// the stripe-group extension an Open carries (which command's connections belong together),
// and the receiver's record of which chunks of a striped file some member connection has
// claimed, so that each chunk is written once in the group, whichever connection carries it.

#include <array>
#include <cstdint>
#include <optional>
#include <set>

#include "protocol/wire.hpp"

namespace rdmax::proto {

using StripeToken = std::array<std::uint8_t, kStripeTokenBytes>;

// kExtensionStripeGroup's value: a random token per command, this connection's place in it.
struct StripeGroup {
  StripeToken token{};
  std::uint16_t member = 0;   // 0: the lead, which offers the striped files
  std::uint16_t members = 0;  // 2..kMaxStripeMembers
  bool operator==(const StripeGroup&) const = default;
};

[[nodiscard]] HelloExtension stripe_group_extension(const StripeGroup& group);
// The Open's stripe group, if it carries one (the codec checked its shape).
[[nodiscard]] std::optional<StripeGroup> stripe_group_of(const Open& open);

// The chunks of one striped file claimed so far by the FileChunks of any member connection
// (the lead's entry and every entry joined to it): a chunk starts on the grid of the slot
// size and is claimed once. Resume's prefix is claimed from the start.
class StripeClaims {
 public:
  StripeClaims(std::uint64_t size, std::uint32_t chunk_size, std::uint64_t from);
  // Claims the chunk at `offset` of `length` bytes: false, and nothing changes, when it is
  // off the grid, not the chunk's whole length, past the end, or claimed already.
  [[nodiscard]] bool claim(std::uint64_t offset, std::uint32_t length);
  // Every byte of the file is claimed (the lead's FileDone may come).
  bool all_claimed() const { return claimed_bytes_ == size_ - from_; }
  // Chunks claimed and still being stored, on any connection of the group: the file is
  // verified only once none is.
  void store_started() { ++storing_; }
  void store_ended() {
    if (storing_ > 0) --storing_;
  }
  bool stores_running() const { return storing_ > 0; }
  std::uint64_t size() const { return size_; }
  std::uint32_t chunk_size() const { return chunk_size_; }

 private:
  std::uint64_t size_;
  std::uint32_t chunk_size_;
  std::uint64_t from_;
  std::uint64_t claimed_bytes_ = 0;
  std::uint64_t storing_ = 0;
  std::set<std::uint64_t> claimed_;  // offsets; at most size / chunk_size of them
};

}  // namespace rdmax::proto
