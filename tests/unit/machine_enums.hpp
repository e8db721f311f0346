#pragma once
// Every state and every event of both machines, for the tests that walk all pairs (the
// drivers' row tests and the machines' own tests), read from the enums themselves
// (protocol/enum_names.hpp): a new event joins every walk the moment it is written.

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <set>
#include <string>

#include "protocol/enum_names.hpp"
#include "protocol/receiver_machine.hpp"
#include "protocol/sender_machine.hpp"

namespace rdmax::test {

inline constexpr auto kAllReceiverStates = proto::enum_values<proto::ReceiverState>();
inline constexpr auto kAllReceiverEvents = proto::enum_values<proto::ReceiverEvent>();
inline constexpr auto kAllOpenChecks = proto::enum_values<proto::OpenCheck>();
inline constexpr auto kAllIdLookups = proto::enum_values<proto::IdLookup>();
inline constexpr auto kAllSessionResults = proto::enum_values<proto::WorkResult>();
inline constexpr auto kAllSenderStates = proto::enum_values<proto::SenderState>();
inline constexpr auto kAllSenderEvents = proto::enum_values<proto::SenderEvent>();
inline constexpr auto kAllSetupStates = proto::enum_values<proto::SetupState>();
inline constexpr auto kAllSetupEvents = proto::enum_values<proto::SetupEvent>();
inline constexpr auto kAllReceiverProofs = proto::enum_values<proto::ReceiverProof>();

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
