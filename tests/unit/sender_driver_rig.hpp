#pragma once
// The sender's connection driver on a test rig: the recipes that bring a real
// SenderConnection over the fake transport into each state through real inputs, the inputs
// that raise each event, and the checks of what it did (its state, what it posted, the
// outcome it reports, how it leaves). Used by sender_driver_rows_test.cpp and
// sender_driver_ledger_test.cpp.

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

// The sender, its inputs, and the recipes that bring it into each state. The file is three
// chunks; the receiver offers two slots.
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
    EXPECT_TRUE(h.driver->finished());
  }
}

struct Rig {
  LogCapture log;  // first: it outlives the connection
  SenderHarness h;
  proto::Accept accept{0x10000, 0, kSlot, 2};

  Rig() { h.source(random_bytes(2 * kSlot + 100)); }

  // ---- Recipes: each ends in its state or fails ----
  void resolving_address() { h.start(); }
  void resolving_route() {
    h.start();
    h.driver->on_address_resolved();
    ASSERT_EQ(h.state(), S::ResolvingRoute);
  }
  void connecting() {
    resolving_route();
    h.driver->on_route_resolved();
    ASSERT_EQ(h.state(), S::Connecting);
  }
  void await_accept() {
    connecting();
    h.driver->on_established();
    ASSERT_EQ(h.state(), S::AwaitAccept);
  }
  void sending() {  // chunks 0 and 1 written, their SENDs in flight
    await_accept();
    h.receive(accept);
    h.receive(proto::Credit{0, 100});
    h.receive(proto::Credit{1, 101});
    ASSERT_EQ(h.state(), S::Sending);
    ASSERT_EQ(chunks().size(), 2u);
  }
  void sending_idle() {  // ... and acknowledged: no credit held
    sending();
    h.complete_sends();
    ASSERT_EQ(h.state(), S::Sending);
  }
  void last_chunk_out() {
    sending_idle();
    h.receive(proto::Credit{0, 200});
    ASSERT_EQ(chunks().size(), 3u);
  }
  void await_verdict() {
    last_chunk_out();
    h.complete_sends();
    ASSERT_EQ(h.state(), S::AwaitVerdict);
  }
  void await_secret() {
    h.settings.id = "alice";
    await_verdict();
    h.receive(proto::Verdict{VerdictCode::Good, sha256_of(h.bytes)});
    ASSERT_EQ(h.state(), S::AwaitSecret);
  }
  void closing() {  // rejected
    await_accept();
    h.receive(proto::Reject{proto::RejectReason::Exists, "exists"});
    ASSERT_EQ(h.state(), S::Closing);
  }
  void done() {
    closing();
    h.complete_sends();
    h.driver->on_disconnected();
    ASSERT_TRUE(h.driver->finished());
  }
  void reach(S s) {
    switch (s) {
      case S::ResolvingAddress:
        return resolving_address();
      case S::ResolvingRoute:
        return resolving_route();
      case S::Connecting:
        return connecting();
      case S::AwaitAccept:
        return await_accept();
      case S::Sending:
        return sending();
      case S::AwaitVerdict:
        return await_verdict();
      case S::AwaitSecret:
        return await_secret();
      default:
        FAIL() << "no recipe for " << proto::to_string(s);
    }
  }
  std::vector<proto::Chunk> chunks() const { return h.transport.sent_of<proto::Chunk>(); }

  // ---- The transport's and the owner's inputs ----
  bool has_transport() const { return h.cm.connects > 0 && !h.cm.fail_connect; }
  void transport_fails() {
    if (!has_transport()) return h.driver->on_cm_failure("the RDMA device was removed");
    h.transport.fail("completion error: transport retry counter exceeded");
    h.driver->poll();
  }
  void undecodable_message() {
    h.transport.deliver_bytes(test::undecodable(h.settings.version));
    h.driver->poll();
  }
  void poll_fails() {
    h.transport.fail_next_poll = true;
    h.driver->poll();
  }
  void tick_late() { h.driver->tick(Clock::now() + kLater); }

  void check(const Want& want, std::size_t from) { check_row(h, want, from, h.settings.version); }
};

using Step = void (*)(Rig&);

}  // namespace rdmax::test::sender_rig
