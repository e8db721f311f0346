#pragma once
// How fuzz_machines reads a byte as one of the sender driver's own inputs, shared with
// make_seeds.cpp. During the set-up a byte is a SetupEvent (modulo their count); after it, a
// SenderEvent, or one of the two values past them: every entry settled, all good or not
// (proto::session_settled, which the driver asks only in InSession).

#include <cstdint>

#include "protocol/sender_machine.hpp"

namespace rdmax::fuzz {

inline constexpr unsigned kSetupEvents = static_cast<unsigned>(proto::SetupEvent::Interrupted) + 1;
inline constexpr unsigned kSenderEvents = static_cast<unsigned>(proto::SenderEvent::GotProof) + 1;
inline constexpr std::uint8_t kSettledAllGood = kSenderEvents;
inline constexpr std::uint8_t kSettledWithFailures = kSenderEvents + 1;
inline constexpr unsigned kSenderLocalInputs = kSenderEvents + 2;

}  // namespace rdmax::fuzz
