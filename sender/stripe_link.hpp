#pragma once
// One file over several connections (docs/PROTOCOL.md 7.12), what a connection's entries ask
// of the command's stripe group (sender/transfer_run.cpp, which holds every connection): the
// lead asks whether a file is offered striped and reports it taken; a member's joined entry
// reports it settled. Everything runs on the run's one event loop.

#include <cstdint>
#include <optional>

#include "protocol/stripes.hpp"

namespace rdmax::sender {

class StripeLink {
 public:
  // This connection's place in the group, for its Open's extension.
  virtual proto::StripeGroup group() const = 0;
  // The lead, about the plan's entry `index` (a file to stripe): true, offer it striped;
  // false, offer it as any file; none, not yet (a member's answer to its Open is awaited).
  virtual std::optional<bool> offer_striped(std::uint32_t index) = 0;
  // The lead: its striped entry `entry` (the plan's `index`) was taken from `from` at
  // `slot_size`: the members that may join it are asked to.
  virtual void striped_taken(std::uint32_t index, std::uint32_t entry, std::uint64_t from,
                             std::uint32_t slot_size) = 0;
  // A member: its entry joined to the plan's `index` is settled (`good`: its part stored).
  virtual void joined_settled(std::uint32_t index, bool good) = 0;

 protected:
  ~StripeLink() = default;
};

}  // namespace rdmax::sender
