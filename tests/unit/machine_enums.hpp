#pragma once
// Every state and every event of both machines, for the tests that walk all pairs (the
// machines' own tests and the drivers' row tests). One list each, so a new event is added
// in one place; the static_asserts catch a list that falls behind its enum.

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <set>
#include <string>

#include "protocol/receiver_machine.hpp"
#include "protocol/sender_machine.hpp"

namespace rdmax::test {

inline constexpr std::array kAllReceiverStates{
    proto::ReceiverState::AwaitOpen, proto::ReceiverState::Authenticating,
    proto::ReceiverState::InSession, proto::ReceiverState::AwaitId,
    proto::ReceiverState::Closing,   proto::ReceiverState::Closed};

inline constexpr std::array kAllReceiverEvents{
    proto::ReceiverEvent::GotOpen,         proto::ReceiverEvent::GotProof,
    proto::ReceiverEvent::GotId,           proto::ReceiverEvent::GotOffer,
    proto::ReceiverEvent::GotChunk,        proto::ReceiverEvent::GotFileDone,
    proto::ReceiverEvent::GotContinue,     proto::ReceiverEvent::GotFileAbort,
    proto::ReceiverEvent::GotBye,          proto::ReceiverEvent::GotError,
    proto::ReceiverEvent::GotUnexpected,   proto::ReceiverEvent::ProtocolViolation,
    proto::ReceiverEvent::LocalFailure,    proto::ReceiverEvent::Timeout,
    proto::ReceiverEvent::TransportFailed, proto::ReceiverEvent::Disconnected,
    proto::ReceiverEvent::ShuttingDown};

inline constexpr std::array kAllOpenChecks{proto::OpenCheck::NotChecked, proto::OpenCheck::Accepted,
                                           proto::OpenCheck::Rejected,
                                           proto::OpenCheck::NeedsProof};

inline constexpr std::array kAllIdLookups{proto::IdLookup::NotLookedUp, proto::IdLookup::Known,
                                          proto::IdLookup::Unknown,
                                          proto::IdLookup::AttemptsExhausted};

inline constexpr std::array kAllSessionResults{
    proto::SessionResult::EntryTaken,   proto::SessionResult::EntryResumed,
    proto::SessionResult::EntryHave,    proto::SessionResult::EntryHeld,
    proto::SessionResult::EntryRefused, proto::SessionResult::ChunkStored,
    proto::SessionResult::EntrySettled};

inline constexpr std::array kAllSenderStates{
    proto::SenderState::Connecting,  proto::SenderState::AwaitAccept, proto::SenderState::InSession,
    proto::SenderState::AwaitSecret, proto::SenderState::Closing,     proto::SenderState::Done};

inline constexpr std::array kAllSenderEvents{
    proto::SenderEvent::Established,       proto::SenderEvent::ConnectFailed,
    proto::SenderEvent::GotAccept,         proto::SenderEvent::GotReject,
    proto::SenderEvent::GotRejectVersion,  proto::SenderEvent::GotCredit,
    proto::SenderEvent::GotWorking,        proto::SenderEvent::GotSecret,
    proto::SenderEvent::GotDenied,         proto::SenderEvent::GotError,
    proto::SenderEvent::GotErrorGaveUp,    proto::SenderEvent::GotUnexpected,
    proto::SenderEvent::ProtocolViolation, proto::SenderEvent::LocalFailure,
    proto::SenderEvent::Timeout,           proto::SenderEvent::TransportFailed,
    proto::SenderEvent::Disconnected,      proto::SenderEvent::Interrupted,
    proto::SenderEvent::GotTake,           proto::SenderEvent::GotRefuse,
    proto::SenderEvent::GotFileVerdict,    proto::SenderEvent::GotResume,
    proto::SenderEvent::GotHave,           proto::SenderEvent::GotHolds,
    proto::SenderEvent::GotChallenge,      proto::SenderEvent::GotRejectAuth,
    proto::SenderEvent::GotProof};

inline constexpr std::array kAllSetupStates{proto::SetupState::ResolvingAddress,
                                            proto::SetupState::ResolvingRoute};

inline constexpr std::array kAllSetupEvents{
    proto::SetupEvent::AddressResolved, proto::SetupEvent::RouteResolved, proto::SetupEvent::Failed,
    proto::SetupEvent::Interrupted};

inline constexpr std::array kAllReceiverProofs{
    proto::ReceiverProof::NotDue, proto::ReceiverProof::Good, proto::ReceiverProof::Wrong,
    proto::ReceiverProof::Missing};

// The enums are dense from 0: the last value + 1 is the count.
static_assert(static_cast<std::size_t>(proto::ReceiverState::Closed) + 1 ==
              kAllReceiverStates.size());
static_assert(static_cast<std::size_t>(proto::ReceiverEvent::ShuttingDown) + 1 ==
              kAllReceiverEvents.size());
static_assert(static_cast<std::size_t>(proto::OpenCheck::NeedsProof) + 1 == kAllOpenChecks.size());
static_assert(static_cast<std::size_t>(proto::IdLookup::AttemptsExhausted) + 1 ==
              kAllIdLookups.size());
static_assert(static_cast<std::size_t>(proto::SessionResult::EntrySettled) + 1 ==
              kAllSessionResults.size());
static_assert(static_cast<std::size_t>(proto::SenderState::Done) + 1 == kAllSenderStates.size());
static_assert(static_cast<std::size_t>(proto::SenderEvent::GotProof) + 1 ==
              kAllSenderEvents.size());
static_assert(static_cast<std::size_t>(proto::SetupState::ResolvingRoute) + 1 ==
              kAllSetupStates.size());
static_assert(static_cast<std::size_t>(proto::SetupEvent::Interrupted) + 1 ==
              kAllSetupEvents.size());
static_assert(static_cast<std::size_t>(proto::ReceiverProof::Missing) + 1 ==
              kAllReceiverProofs.size());

// Every enumerator of `all` has a name of its own (the logs and the tests' names use them).
template <typename Enum, std::size_t N>
void expect_distinct_names(const std::array<Enum, N>& all) {
  std::set<std::string> names;
  for (Enum v : all) {
    const std::string name = to_string(v);
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name, "?");
    EXPECT_TRUE(names.insert(name).second) << name << " is used twice";
  }
}

}  // namespace rdmax::test
