#pragma once
// How fuzz_machines reads a byte as one of a driver's own inputs (not a received message),
// shared with make_seeds.cpp.
//  - The receiver: a ReceiverEvent (with findings, checks_of), or one of the WorkResult
//    values past them (the driver takes those only InSession).
//  - The sender: during the set-up a SetupEvent (modulo their count); after it, a
//    SenderEvent (with a Proof's finding, proof_of), or one of the two values past them: every
//    entry settled, all good or not (proto::session_settled, which the driver asks only InSession).
// Bytes from 0xF0 up pass through unchanged as out-of-range values, as a driver bug would
// produce.

#include <cstdint>

#include "protocol/receiver_machine.hpp"
#include "protocol/sender_machine.hpp"

namespace rdmax::fuzz {

inline constexpr std::uint8_t kFirstRawEventByte = 0xF0;

inline constexpr unsigned kReceiverEvents =
    static_cast<unsigned>(proto::ReceiverEvent::ShuttingDown) + 1;
inline constexpr unsigned kSessionResults =
    static_cast<unsigned>(proto::WorkResult::EntrySettled) + 1;
inline constexpr unsigned kReceiverLocalInputs = kReceiverEvents + kSessionResults;
constexpr std::uint8_t result_byte(proto::WorkResult r) {
  return static_cast<std::uint8_t>(kReceiverEvents + static_cast<unsigned>(r));
}
// A receiver event's findings come from how many times the inputs' count goes into the byte
// (0 to 3 in every record tag, which is below 0x80): the Open's check for GotOpen and GotProof,
// the Id's look-up for GotId, and where the entries stand for GotId and GotBye, one value
// further round (so that a known Id meets unsettled entries, and so on; the other events
// ignore them).
constexpr proto::ReceiverChecks checks_of(std::uint8_t byte) {
  const unsigned finding = (byte / kReceiverLocalInputs) % 4;
  return {static_cast<proto::OpenCheck>(finding), static_cast<proto::IdLookup>(finding),
          static_cast<proto::SessionEnd>((finding + 1) % 4)};
}
// The byte that reads as `event` with what was found (an OpenCheck or IdLookup value).
template <typename Finding>
constexpr std::uint8_t event_byte(proto::ReceiverEvent event, Finding finding) {
  return static_cast<std::uint8_t>(static_cast<unsigned>(event) +
                                   kReceiverLocalInputs * static_cast<unsigned>(finding));
}

inline constexpr unsigned kSetupEvents = static_cast<unsigned>(proto::SetupEvent::Interrupted) + 1;
inline constexpr unsigned kSenderEvents = static_cast<unsigned>(proto::SenderEvent::GotProof) + 1;
inline constexpr std::uint8_t kSettledAllGood = kSenderEvents;
inline constexpr std::uint8_t kSettledWithFailures = kSenderEvents + 1;
inline constexpr unsigned kSenderLocalInputs = kSenderEvents + 2;
// The receiver's Proof as the sender driver found it, the same way.
constexpr proto::ReceiverProof proof_of(std::uint8_t byte) {
  return static_cast<proto::ReceiverProof>((byte / kSenderLocalInputs) % 4);
}

}  // namespace rdmax::fuzz
