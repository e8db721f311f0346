#pragma once
// What the sender driver's tests share (sender_session_rig.hpp builds the rig on it): the
// names, and the check of a row (the driver's state, what it posted, the outcome it
// reports, how it leaves).

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "driver_harness.hpp"

namespace rdmax::test::sender_rig {

using S = proto::SenderState;
using E = proto::SenderEvent;
using O = proto::SenderOutcome;
using T = proto::MessageType;
using proto::ErrorCode;
using proto::VerdictCode;

inline constexpr std::uint32_t kSlot = 4096;
inline constexpr auto kLater = std::chrono::hours(1);  // past every deadline

// How a row leaves the connection: carrying on; Closing, rdma_disconnect once every posted
// SEND has completed; Done, finished.
enum class End { Open, Disconnects, Finished };

struct Want {
  S state;
  std::vector<Posted> posted;               // everything the row's event made it post, in order
  std::optional<O> outcome = std::nullopt;  // the outcome it reports, once decided
  End end = End::Open;
};

inline Posted error(ErrorCode code) {
  return {T::Error, static_cast<int>(code)};
}

// What a row asks of the driver after its step, for either driver's harness: the state,
// the messages posted since `from` (all in `version`), the outcome, and the way it ends.
template <typename Harness>
void check_row(Harness& h, const Want& want, std::size_t from, std::uint16_t version) {
  EXPECT_EQ(proto::to_string(h.state()), std::string(proto::to_string(want.state)));
  EXPECT_EQ(describe_sent(h.transport, from, want.posted), describe(want.posted));
  for (std::size_t i = from; i < h.transport.sent.size(); ++i)
    EXPECT_EQ(h.transport.sent[i].version, version);
  if (want.outcome) {
    EXPECT_EQ(proto::to_string(h.driver->outcome()), std::string(proto::to_string(*want.outcome)));
  }
  if (want.end == End::Disconnects) {
    if (h.transport.sent.size() > from) {
      EXPECT_FALSE(h.transport.disconnected) << "disconnected before its last SEND completed";
    }
    h.complete_sends();
    EXPECT_TRUE(h.transport.disconnected);
    EXPECT_EQ(h.state(), S::Closing);
  } else if (want.end == End::Finished) {
    EXPECT_TRUE(h.ended());
  }
}

}  // namespace rdmax::test::sender_rig
