// Every row of the sender's transition table (protocol/sender_machine.cpp), driven through
// the real Connection, the sender's one driver, over the fake transport
// (sender_session_rig.hpp). Each row is brought about by real inputs (CM events, messages,
// send completions, ticks, signals, injected failures); the driver's recorded steps prove the
// row's (state, event) was taken, and what it did is checked from outside: its state, what
// it posted, the outcome it reports and how it leaves. This is the one layer that pins the
// transitions (tests/fuzz/fuzz_machines.cpp checks the machines' invariants along any
// sequence, the absorbing Closing and Done among them): every (state, event) pair of
// an open state, of both machines (the set-up's and the connection's), is raised by a real
// input here, and both ends of a session (session_settled) too. Whole sessions are driven in
// sender_driver_session_test.cpp, and linked to the receiver in session_link_test.cpp.

#include <gtest/gtest.h>

#include "common/digest/merkle.hpp"

#include <csignal>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "protocol/enum_names.hpp"
#include "sender_session_rig.hpp"
#include "table_rows.hpp"

namespace rdmax::test::sender_rig {
namespace {

using Rig = SessionRig;
using Step = SessionStep;

// A row of the table (table_rows.hpp).
using At = RowAt<S, E>;
using Row = TableRow<S, E, Step, Want>;

bool connected(S s) {
  return s == S::AwaitAccept || s == S::InSession || s == S::AwaitSecret;
}

constexpr std::array kOpenStates{S::Connecting, S::AwaitAccept, S::InSession, S::AwaitSecret};

// ---- The connection's rows (the Accept or its refusal, the id) ----

std::vector<Row> protocol_rows() {
  return {
      // The receiver refused the session: every entry ends unsent, as the connection did.
      {{S::AwaitAccept, E::GotReject, ""},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) {
         r.h.receive(proto::Reject{proto::RejectReason::NoMemory, "full"});
       },
       {S::Closing, {}, O::Rejected, End::Disconnects},
       [](Rig& r) {
         r.h.complete_sends();
         r.h.driver->on_disconnected();
         EXPECT_EQ(r.h.status(0), Status::NotSent);
         EXPECT_EQ(r.h.plan.results[0].outcome, O::Rejected);
       }},
      // A command of one file: the refusal is the file's (a version-1 receiver's Reject of
      // its Hello reaches the driver this way too).
      {{S::AwaitAccept, E::GotReject, "OneFile"},
       [](Rig& r) {
         r.h.plan.entries.pop_back();
         r.h.plan.results.pop_back();
         r.await_accept();
       },
       [](Rig& r) {
         r.h.receive(proto::Reject{proto::RejectReason::Exists, "there"});
       },
       {S::Closing, {}, O::Rejected, End::Disconnects},
       [](Rig& r) {
         EXPECT_EQ(r.h.status(0), Status::Refused);
         EXPECT_EQ(r.h.plan.results[0].detail, "Exists: there");
       }},
      {{S::AwaitAccept, E::GotRejectVersion, ""},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) {  // a version-1 receiver answers in version 1
         r.h.receive(proto::Reject{proto::RejectReason::UnsupportedVersion, ""}, proto::kVersion1);
       },
       {S::Closing, {}, O::VersionUnsupported, End::Disconnects}},
      {{S::AwaitAccept, E::GotWorking, ""},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) {
         r.h.receive(proto::Working{proto::WorkPhase::Storing, 0});
       },
       {S::AwaitAccept, {}}},
      {{S::AwaitSecret, E::GotDenied, ""},
       [](Rig& r) { r.await_secret(); },
       [](Rig& r) { r.h.receive(proto::Denied{2}); },
       {S::Closing, {}, O::Denied, End::Disconnects}},
      // Sender keys (PROTOCOL.md 7.8). Our proof covers the Open as sent and the nonce.
      {{S::AwaitAccept, E::GotChallenge, ""},
       [](Rig& r) {
         r.h.with_key();
         r.await_accept();
       },
       [](Rig& r) { r.h.receive(r.challenge); },
       {S::AwaitAccept, {{T::Proof}}},
       [](Rig& r) {
         const auto claim = proto::sender_key_claim(r.open_sent());
         ASSERT_TRUE(claim);
         EXPECT_EQ(claim->id, "alice");
         EXPECT_EQ(r.h.transport.sent_of<proto::Proof>().at(0).mac,
                   auth_proof(proto::ProofRole::Sender, r.h.key.key, r.open_sent(), r.challenge));
       }},
      // The receiver proved the key: the Accept starts the session as without keys.
      {{S::AwaitAccept, E::GotAccept, "AfterTheReceiverProvedTheKey"},
       [](Rig& r) { r.receiver_proven(); },
       [](Rig& r) { r.h.receive(r.accept); },
       {S::InSession, {{T::Offer}, {T::Offer}}}},
      {{S::AwaitAccept, E::GotRejectAuth, "NoKey"},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) {
         r.h.receive(proto::Reject{proto::RejectReason::AuthRequired, "key"});
       },
       {S::Closing, {}, O::AuthFailed, End::Disconnects}},
      {{S::AwaitAccept, E::GotRejectAuth, "OurProofRefused"},
       [](Rig& r) { r.proving(); },
       [](Rig& r) {
         r.h.receive(proto::Reject{proto::RejectReason::AuthFailed, ""});
       },
       {S::Closing, {}, O::AuthFailed, End::Disconnects}},
      // Not a byte of data to a receiver that does not prove it holds our key.
      {{S::AwaitAccept, E::GotAccept, "WithoutTheReceiversProof"},
       [](Rig& r) { r.proving(); },
       [](Rig& r) { r.h.receive(r.accept); },
       {S::Closing, {error(ErrorCode::AuthFailed)}, O::AuthFailed, End::Disconnects},
       [](Rig& r) { EXPECT_TRUE(r.offers().empty()); }},
      {{S::AwaitAccept, E::GotAccept, "ToAKeyNeverChallenged"},
       [](Rig& r) {
         r.h.with_key();
         r.await_accept();
       },
       [](Rig& r) { r.h.receive(r.accept); },
       {S::Closing, {error(ErrorCode::AuthFailed)}, O::AuthFailed, End::Disconnects}},
      {{S::AwaitAccept, E::GotProof, "Wrong"},
       [](Rig& r) { r.proving(); },
       [](Rig& r) {
         proto::Proof wrong = r.receiver_proof();
         wrong.mac[5] ^= 1;
         r.h.receive(wrong);
       },
       {S::Closing, {error(ErrorCode::AuthFailed)}, O::AuthFailed, End::Disconnects}},
      // Our own proof sent back (a reflecting receiver): another label, another proof.
      {{S::AwaitAccept, E::GotProof, "OurOwnReflected"},
       [](Rig& r) { r.proving(); },
       [](Rig& r) { r.h.receive(r.h.transport.sent_of<proto::Proof>().at(0)); },
       {S::Closing, {error(ErrorCode::AuthFailed)}, O::AuthFailed, End::Disconnects}},
      // The receiver's Proof checked good: noted, for the Accept (the row above it).
      {{S::AwaitAccept, E::GotProof, "Good"},
       [](Rig& r) { r.proving(); },
       [](Rig& r) { r.h.receive(r.receiver_proof()); },
       {S::AwaitAccept, {}}},
      // A Proof nobody asked for: we claimed no key, or it came a second time.
      {{S::AwaitAccept, E::GotProof, "NoKeyClaimed"},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) { r.h.receive(proto::Proof{}); },
       {S::Closing, {error(ErrorCode::ProtocolViolation)}, O::ProtocolError, End::Disconnects}},
      {{S::AwaitAccept, E::GotProof, "Twice"},
       [](Rig& r) { r.receiver_proven(); },
       [](Rig& r) { r.h.receive(r.receiver_proof()); },
       {S::Closing, {error(ErrorCode::ProtocolViolation)}, O::ProtocolError, End::Disconnects}},
      // One file over several connections (PROTOCOL.md 7.12): our Open named our place in the
      // group; the receiver's Stripes right before its Accept is noted for the session.
      {{S::AwaitAccept, E::GotStripes, "BeforeTheAccept"},
       [](Rig& r) {
         r.h.with_stripes();
         r.await_accept();
       },
       [](Rig& r) { r.h.receive(proto::Stripes{64}); },
       {S::AwaitAccept, {}},
       [](Rig& r) {
         const auto open = r.h.transport.sent_of<proto::Open>().at(0);
         EXPECT_EQ(proto::stripe_group_of(open), (proto::StripeGroup{{7}, 1, 2}));
         r.h.receive(r.accept);
         EXPECT_TRUE(r.h.driver->striping());
       }},
  };
}

// ---- The aborts ----

// What an abort does: before a connection exists the sender finishes at once; connected,
// it says why (unless the receiver did) and disconnects.
Want abort_want(S s, E e) {
  if (!connected(s)) {
    const O o = e == E::Interrupted                             ? O::Interrupted
                : e == E::GotError || e == E::ProtocolViolation ? O::ProtocolError
                : e == E::GotErrorGaveUp                        ? O::ConnectionLost
                                                                : O::ConnectFailed;
    return {S::Done, {}, o, End::Finished};
  }
  switch (e) {
    case E::Disconnected:
    case E::TransportFailed:
      return {S::Done, {}, O::ConnectionLost, End::Finished};
    case E::Timeout:
      return {S::Closing, {error(ErrorCode::Timeout)}, O::ConnectionLost, End::Disconnects};
    case E::Interrupted:
      return {S::Closing, {error(ErrorCode::ShuttingDown)}, O::Interrupted, End::Disconnects};
    case E::GotError:
      return {S::Closing, {}, O::ProtocolError, End::Disconnects};
    case E::GotErrorGaveUp:
      return {S::Closing, {}, O::ConnectionLost, End::Disconnects};
    case E::ProtocolViolation:
      return {
          S::Closing, {error(ErrorCode::ProtocolViolation)}, O::ProtocolError, End::Disconnects};
    default:  // LocalFailure
      return {S::Closing, {error(ErrorCode::Internal)}, O::LocalFailure, End::Disconnects};
  }
}

// From every open state (InSession's other ways in are session_abort_rows, below).
std::vector<Row> abort_rows() {
  const std::vector<std::pair<E, Step>> aborts{
      {E::ConnectFailed, [](Rig& r) { r.h.driver->on_connect_failed("REJECTED"); }},
      {E::Disconnected, [](Rig& r) { r.h.driver->on_disconnected(); }},
      {E::TransportFailed, [](Rig& r) { r.transport_fails(); }},
      {E::Timeout, [](Rig& r) { r.tick_late(); }},
      {E::Interrupted, [](Rig& r) { r.h.driver->interrupt(SIGINT); }},
      {E::GotError,
       [](Rig& r) {
         r.h.receive(proto::Error{ErrorCode::Internal, "gave up"});
       }},
      {E::GotErrorGaveUp,
       [](Rig& r) {
         r.h.receive(proto::Error{ErrorCode::Timeout, "timed out waiting for data"});
       }},
      {E::ProtocolViolation, [](Rig& r) { r.undecodable_message(); }},
      {E::LocalFailure, [](Rig& r) { r.poll_fails(); }},
  };
  const std::map<S, Step> reach{
      {S::Connecting, [](Rig& r) { r.reach(S::Connecting); }},
      {S::AwaitAccept, [](Rig& r) { r.reach(S::AwaitAccept); }},
      {S::InSession, [](Rig& r) { r.credited(); }},
      {S::AwaitSecret, [](Rig& r) { r.reach(S::AwaitSecret); }},
  };
  const Step unsettled_lost = [](Rig& r) {  // what was not settled ends as the connection did
    EXPECT_EQ(r.h.status(0), Status::NotSent);
    EXPECT_EQ(r.h.plan.results[0].outcome, O::ConnectionLost);
  };
  std::vector<Row> rows;
  for (S s : kOpenStates) {
    for (const auto& [e, inject] : aborts) {
      if (connected(s) && e == E::ConnectFailed) continue;        // not an abort once connected
      if (s == S::InSession && e == E::GotErrorGaveUp) continue;  // session_abort_rows'
      const bool lost = s == S::InSession && e == E::Disconnected;
      rows.push_back(
          {{s, e, ""}, reach.at(s), inject, abort_want(s, e), lost ? unsettled_lost : nullptr});
    }
  }
  const Want local{S::Closing, {error(ErrorCode::Internal)}, O::LocalFailure, End::Disconnects};
  const Want cannot_connect{S::Done, {}, O::ConnectFailed, End::Finished};
  std::vector<Row> more{
      // LocalFailure through the failures of the driver's own actions, not only a poll.
      {{S::Connecting, E::LocalFailure, "ConnectFails"},
       [](Rig& r) {
         r.resolving_route();
         r.h.cm.fail_connect = true;
       },
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::RouteResolved); },
       cannot_connect},
      {{S::AwaitAccept, E::LocalFailure, "OpenPostFails"},
       [](Rig& r) {
         r.connecting();
         r.h.transport.fail_one_send_after = 0;
       },
       [](Rig& r) { r.h.driver->on_established(); },
       local},
      {{S::InSession, E::LocalFailure, "StagingRegistrationFails"},
       [](Rig& r) {
         r.await_accept();
         r.h.transport.fail_registration_after = 0;
       },
       [](Rig& r) { r.h.receive(r.accept); },
       local},
      {{S::AwaitSecret, E::LocalFailure, "IdPostFails"},
       [](Rig& r) {
         r.h.settings.id = "alice";
         r.all_but_last_settled();
         r.h.transport.fail_one_send_after = 0;
       },
       [](Rig& r) {
         r.h.receive(proto::FileVerdict{1, VerdictCode::Good, {}});
       },
       local},
      {{S::InSession, E::ProtocolViolation, "SlotTooLarge"},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) {
         r.h.receive(proto::Accept{0x10000, 0, 16u << 20, 2});
       },
       abort_want(S::InSession, E::ProtocolViolation)},
      {{S::AwaitAccept, E::ProtocolViolation, "OtherVersion"},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) { r.h.receive(r.accept, proto::kVersion1); },
       abort_want(S::AwaitAccept, E::ProtocolViolation)},
      // rdma_cm answers each look-up once, during the set-up: one answered again after it is
      // out of order, as an illegal input is; in Closing it changes nothing.
      {{S::Connecting, E::ProtocolViolation, "AddressResolvedAgain"},
       [](Rig& r) { r.connecting(); },
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::AddressResolved); },
       abort_want(S::Connecting, E::ProtocolViolation)},
      {{S::AwaitAccept, E::ProtocolViolation, "RouteResolvedAgain"},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::RouteResolved); },
       abort_want(S::AwaitAccept, E::ProtocolViolation)},
      {{S::Closing, E::ProtocolViolation, "AddressResolvedAgain"},
       [](Rig& r) { r.closing(); },
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::AddressResolved); },
       {S::Closing, {}, O::Rejected, End::Disconnects}},
  };
  rows.insert(rows.end(), more.begin(), more.end());
  return rows;
}

// ---- Closing and Done ----

std::vector<Row> closing_rows() {
  const Step closing = [](Rig& r) { r.closing(); };
  const Step done = [](Rig& r) { r.done(); };
  const Want ends{S::Done, {}, O::Rejected, End::Finished};
  const Want stays{S::Closing, {}, O::Rejected, End::Disconnects};  // the first outcome stands
  return {
      {{S::Closing, E::Disconnected, ""},
       closing,
       [](Rig& r) { r.h.driver->on_disconnected(); },
       ends},
      {{S::Closing, E::TransportFailed, ""}, closing, [](Rig& r) { r.transport_fails(); }, ends},
      {{S::Closing, E::Timeout, ""}, closing, [](Rig& r) { r.tick_late(); }, ends},
      {{S::Closing, E::GotAnswer, "Credit"},
       closing,
       [](Rig& r) {
         r.h.receive(proto::Credit{0, 1});
       },
       stays},
      {{S::Closing, E::GotError, ""},
       closing,
       [](Rig& r) {
         r.h.receive(proto::Error{ErrorCode::Internal, ""});
       },
       stays},
      {{S::Closing, E::ProtocolViolation, ""},
       closing,
       [](Rig& r) { r.undecodable_message(); },
       stays},
      // A failure of our own on the way out ends it at once (its step was cut short).
      {{S::Closing, E::LocalFailure, ""}, closing, [](Rig& r) { r.poll_fails(); }, ends},
      {{S::Closing, E::Interrupted, ""},
       closing,
       [](Rig& r) { r.h.driver->interrupt(SIGTERM); },
       stays},
      {{S::Closing, E::ConnectFailed, ""},
       closing,
       [](Rig& r) { r.h.driver->on_connect_failed("CONNECT_ERROR"); },
       stays},
      {{S::Done, E::GotAccept, ""}, done, [](Rig& r) { r.h.receive(r.accept); }, ends},
      {{S::Done, E::Interrupted, ""}, done, [](Rig& r) { r.h.driver->interrupt(SIGINT); }, ends},
      {{S::Done, E::Timeout, ""}, done, [](Rig& r) { r.tick_late(); }, ends},
      {{S::Done, E::Disconnected, ""}, done, [](Rig& r) { r.h.driver->on_disconnected(); }, ends},
  };
}

// ---- An input out of place: every message and CM event, in every open state it can arrive
// in where it is not allowed ----

struct Misplaced {
  S state;
  std::string name;
  E event;
  std::function<void(Rig&)> inject;
};

std::ostream& operator<<(std::ostream& out, const Misplaced& m) {
  return out << m.name << " in " << proto::to_string(m.state);
}

std::vector<Misplaced> misplaced_inputs() {
  using V = VerdictCode;
  using R = proto::RejectReason;
  const std::vector<std::tuple<std::string, E, proto::Message>> messages{
      {"Hello", E::GotUnexpected, proto::Hello{10, {}, 0, "x"}},
      {"Chunk", E::GotUnexpected, proto::Chunk{0, kSlot, 0}},
      {"Done", E::GotUnexpected, proto::Done{1}},
      {"Id", E::GotUnexpected, proto::Id{"alice"}},
      {"Bye", E::GotUnexpected, proto::Bye{}},
      // A session's verdicts are FileVerdicts (version 1's edge translates a Verdict).
      {"Verdict", E::GotUnexpected, proto::Verdict{V::Good, {}}},
      {"Open", E::GotUnexpected, proto::Open{proto::DigestAlgorithm::WholeFileSha256, 0, 0, 1, 1}},
      {"Offer", E::GotUnexpected, proto::Offer{0, proto::EntryKind::File, 0644, 1, 0, 0, {}, "x"}},
      {"FileChunk", E::GotUnexpected, proto::FileChunk{0, 0, 0, 1}},
      {"FileDone", E::GotUnexpected, proto::FileDone{0, 1}},
      {"Accept", E::GotAccept, proto::Accept{0x20000, 0, kSlot, 2}},
      {"Reject", E::GotReject, proto::Reject{R::Exists, ""}},
      {"RejectVersion", E::GotRejectVersion, proto::Reject{R::UnsupportedVersion, ""}},
      {"Secret", E::GotSecret, proto::Secret{"s"}},
      {"Denied", E::GotDenied, proto::Denied{1}},
      {"Working", E::GotWorking, proto::Working{proto::WorkPhase::Storing, 0}},
      {"Challenge", E::GotChallenge, proto::Challenge{}},
      {"RejectAuth", E::GotRejectAuth, proto::Reject{R::AuthFailed, ""}},
      {"Proof", E::GotProof, proto::Proof{}},
      // The answers about an entry: InSession's alone.
      {"Credit", E::GotAnswer, proto::Credit{1, 77}},
      {"Resume", E::GotAnswer, proto::Resume{0, kSlot}},
      {"Have", E::GotAnswer, proto::Have{0, {}}},
      {"Take", E::GotAnswer, proto::Take{0}},
      {"Refuse", E::GotAnswer, proto::Refuse{0, R::Exists, ""}},
      {"FileVerdict", E::GotAnswer, proto::FileVerdict{0, V::Good, {}}},
      {"Holds", E::GotAnswer, proto::Holds{0, 1, {}}},
      // Expected only right before the Accept, and only where our Open asked (7.12): the
      // harness asks before it delivers (without, a Stripes is GotUnexpected everywhere).
      {"Stripes", E::GotStripes, proto::Stripes{2}},
  };
  // AwaitAccept's Proof has rows of its own (good, wrong, not asked for); InSession's answers
  // theirs (session_protocol_rows).
  const std::set<std::pair<S, E>> legal{
      {S::AwaitAccept, E::GotProof},      {S::AwaitAccept, E::GotChallenge},
      {S::AwaitAccept, E::GotRejectAuth}, {S::AwaitAccept, E::GotAccept},
      {S::AwaitAccept, E::GotReject},     {S::AwaitAccept, E::GotRejectVersion},
      {S::AwaitAccept, E::GotWorking},    {S::AwaitSecret, E::GotSecret},
      {S::AwaitSecret, E::GotDenied},     {S::AwaitSecret, E::GotWorking},
      {S::InSession, E::GotAnswer},       {S::InSession, E::GotWorking},
      {S::AwaitAccept, E::GotStripes}};
  std::vector<Misplaced> out;
  // A receiver's message can arrive once the queue pair exists: from Connecting on.
  for (S s : kOpenStates) {
    for (const auto& [name, event, message] : messages)
      if (!legal.contains({s, event})) {
        // Only a version-1 refusal means "speaks only version 1" (PROTOCOL 7.1, 7.2).
        const std::uint16_t version = name == "RejectVersion" ? proto::kVersion1 : proto::kVersion2;
        out.push_back({s, name, event, [m = message, version](Rig& r) {
                         if (std::holds_alternative<proto::Stripes>(m)) r.h.with_stripes();
                         r.h.receive(m, version);
                       }});
      }
    if (s != S::Connecting)
      out.push_back(
          {s, "Established", E::Established, [](Rig& r) { r.h.driver->on_established(); }});
    if (connected(s))
      out.push_back({s, "ConnectFailed", E::ConnectFailed,
                     [](Rig& r) { r.h.driver->on_connect_failed("CONNECT_ERROR"); }});
  }
  return out;
}

class SenderDriverIllegal : public ::testing::TestWithParam<Misplaced> {
 protected:
  Rig r;
};

// Connected: Error(ProtocolViolation), then the disconnect; before that: finished at once.
// A protocol error either way.
TEST_P(SenderDriverIllegal, IsAProtocolError) {
  const Misplaced& m = GetParam();
  ASSERT_NO_FATAL_FAILURE(r.reach(m.state));
  const std::size_t sent = r.h.transport.sent.size();
  const std::size_t stepped = r.steps().size();
  m.inject(r);
  EXPECT_TRUE(took(r.steps(), stepped, proto::to_string(m.state), proto::to_string(m.event)))
      << steps_since(r.steps(), stepped);
  if (!connected(m.state)) {
    r.check({S::Done, {}, O::ProtocolError, End::Finished}, sent);
    return;
  }
  r.check({S::Closing, {error(ErrorCode::ProtocolViolation)}, O::ProtocolError, End::Disconnects},
          sent);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).text,
            std::string("unexpected ") + proto::to_string(m.event));
}

std::string misplaced_name(const ::testing::TestParamInfo<Misplaced>& p) {
  return p.param.name + "_in_" + proto::to_string(p.param.state);
}

INSTANTIATE_TEST_SUITE_P(Inputs, SenderDriverIllegal, ::testing::ValuesIn(misplaced_inputs()),
                         misplaced_name);

// ---- The session's rows: InSession and its entries (PROTOCOL.md 7.5) ----

std::vector<Row> session_protocol_rows() {
  const Posted chunk{T::FileChunk}, offer{T::Offer};
  const Step credited = [](Rig& r) { r.credited(); };
  const Step last_good = [](Rig& r) { r.h.receive(proto::FileVerdict{1, VerdictCode::Good, {}}); };
  return {
      {{S::Connecting, E::Established, "Session"},
       [](Rig& r) { r.connecting(); },
       [](Rig& r) { r.h.driver->on_established(); },
       {S::AwaitAccept, {{T::Open}}},
       [](Rig& r) {
         const auto open = r.h.transport.sent_of<proto::Open>().at(0);
         EXPECT_EQ(open.entry_count, 2u);
         EXPECT_EQ(open.total_bytes, 2 * kSlot + 100 + 100u);
         EXPECT_EQ(open.digest_algorithm, proto::DigestAlgorithm::WholeFileSha256);
       }},
      {{S::AwaitAccept, E::GotAccept, "Session"},
       [](Rig& r) { r.await_accept(); },
       [](Rig& r) { r.h.receive(r.accept); },
       {S::InSession, {offer, offer}},
       [](Rig& r) {  // as planned, and nothing written before a Take and a credit
         const auto offers = r.offers();
         EXPECT_EQ(offers[0].path, "a.bin");
         EXPECT_EQ(offers[0].mode, 0640);
         EXPECT_EQ(offers[0].size, 2 * kSlot + 100u);
         EXPECT_EQ(offers[0].digest, sha256_of(r.h.contents[0]));
         EXPECT_EQ(offers[1].path, "d/b.bin");
         EXPECT_EQ(offers[1].entry, 1u);
         EXPECT_EQ(r.h.transport.live_regions(), 1u);
         EXPECT_TRUE(r.h.transport.writes.empty());
       }},
      {{S::InSession, E::GotWorking, ""},
       credited,
       [](Rig& r) {
         r.h.receive(proto::Working{proto::WorkPhase::Storing, 0});
       },
       {S::InSession, {}}},
      // The Take sends the file's chunks into every credited slot.
      // Resume (PROTOCOL.md 7.6): entry 0 taken from its second chunk; entry 1 in place.
      {{S::InSession, E::GotAnswer, "Resume"},
       [](Rig& r) {
         r.h.plan.algorithm = proto::DigestAlgorithm::FsVeritySha256;
         r.credited();
       },
       [](Rig& r) {
         r.h.receive(proto::Resume{0, kSlot});
       },
       {S::InSession, {chunk, chunk}},
       [](Rig& r) {
         EXPECT_EQ(r.chunks().at(0), (proto::FileChunk{0, 0, kSlot, kSlot}));
         EXPECT_EQ(r.chunks().at(1), (proto::FileChunk{0, 1, 2 * kSlot, 100}));
         EXPECT_EQ(r.h.plan.results.at(0).resumed_from, kSlot);
       }},
      // The digest at the end (PROTOCOL.md 7.9): the receiver holds a file of entry 0's size;
      // ours is hashed on the pool, then Continue says where it goes on (here: from 0).
      {{S::InSession, E::GotAnswer, "Holds"},
       [](Rig& r) {
         r.h.with_digest_at_end();
         r.credited();
       },
       [](Rig& r) {
         r.h.receive(proto::Holds{0, r.h.contents[0].size(), proto::Digest{}});
       },
       {S::InSession, {}},
       [](Rig& r) {
         EXPECT_EQ(r.offers().at(0).digest_at_end, true);
         ASSERT_TRUE(
             r.h.settle_hashing([&] { return !r.h.transport.sent_of<proto::Continue>().empty(); }));
         EXPECT_EQ(r.h.transport.sent_of<proto::Continue>().at(0), (proto::Continue{0, 0}));
       }},
      {{S::InSession, E::GotAnswer, "Have"},
       credited,
       [](Rig& r) {
         r.h.receive(proto::Have{1, r.offers().at(1).digest});
       },
       {S::InSession, {}},
       [](Rig& r) {
         EXPECT_TRUE(r.h.plan.results.at(1).identical);
         EXPECT_EQ(r.h.plan.results.at(1).status, sender::EntryResult::Status::Good);
       }},
      {{S::InSession, E::GotAnswer, "Take"},
       credited,
       [](Rig& r) { r.h.receive(proto::Take{0}); },
       {S::InSession, {chunk, chunk}},
       [](Rig& r) {
         EXPECT_EQ(r.chunks().at(0), (proto::FileChunk{0, 0, 0, kSlot}));
         EXPECT_EQ(r.chunks().at(1), (proto::FileChunk{0, 1, kSlot, kSlot}));
         EXPECT_EQ(r.h.transport.writes.at(1).rkey, 101u);
         EXPECT_EQ(r.h.transport.writes.at(1).remote_addr, r.accept.region_addr + kSlot);
         EXPECT_EQ(r.h.transport.writes.at(1).bytes,
                   std::vector<std::uint8_t>(r.h.contents[0].begin() + kSlot,
                                             r.h.contents[0].begin() + 2 * kSlot));
       }},
      {{S::InSession, E::GotAnswer, "Credit"},
       [](Rig& r) {
         r.in_session();
         r.h.receive(proto::Take{1});
       },
       [](Rig& r) {
         r.h.receive(proto::Credit{1, 300});
       },
       {S::InSession, {chunk}},
       [](Rig& r) {
         EXPECT_EQ(r.chunks().at(0), (proto::FileChunk{1, 1, 0, 100}));
         EXPECT_EQ(r.h.transport.writes.at(0).rkey, 300u);
       }},
      {{S::InSession, E::GotAnswer, "Refuse"},
       credited,
       [](Rig& r) {
         r.h.receive(proto::Refuse{1, proto::RejectReason::Exists, "there"});
       },
       {S::InSession, {}},
       [](Rig& r) {
         EXPECT_EQ(r.h.status(1), Status::Refused);
         EXPECT_EQ(r.h.plan.results[1].outcome, O::Rejected);
         EXPECT_EQ(r.h.status(0), Status::NotSent);
       }},
      {{S::InSession, E::GotAnswer, "FileVerdict"},
       [](Rig& r) { r.second_done(); },
       last_good,
       {S::InSession, {}},
       [](Rig& r) {
         EXPECT_EQ(r.h.status(1), Status::Good);
         EXPECT_EQ(r.h.plan.results[1].bytes, 100u);
       }},
      // The receiver keeps sending Working until our Id reaches it: one may cross the Id.
      {{S::AwaitSecret, E::GotWorking, "Session"},
       [](Rig& r) { r.await_secret(); },
       [](Rig& r) {
         r.h.receive(proto::Working{proto::WorkPhase::Storing, 0});
       },
       {S::AwaitSecret, {}},
       [](Rig& r) {
         r.h.receive(proto::Secret{"s3cret"});
         EXPECT_EQ(r.h.driver->outcome(), O::Success);
       }},
      {{S::AwaitSecret, E::GotSecret, "Session"},
       [](Rig& r) { r.await_secret(); },
       [](Rig& r) { r.h.receive(proto::Secret{"s3cret"}); },
       {S::Closing, {}, O::Success, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.driver->secret(), "s3cret"); }},
  };
}

std::vector<Row> session_abort_rows() {
  const Step credited = [](Rig& r) { r.credited(); };
  const Want violation = abort_want(S::InSession, E::ProtocolViolation);
  std::vector<Row> rows{
      {{S::InSession, E::TransportFailed, "CmEvent"},
       credited,
       [](Rig& r) { r.h.driver->on_cm_failure("the RDMA device was removed"); },
       abort_want(S::InSession, E::TransportFailed)},
      {{S::InSession, E::GotErrorGaveUp, ""},
       credited,
       [](Rig& r) {
         r.h.receive(proto::Error{ErrorCode::ShuttingDown, "receiver shutting down"});
       },
       abort_want(S::InSession, E::GotErrorGaveUp)},
      // The session's rules (the SendLedger), checked before anything is done.
      {{S::InSession, E::ProtocolViolation, "TakeOfAnEntryNotOffered"},
       credited,
       [](Rig& r) { r.h.receive(proto::Take{7}); },
       violation},
      {{S::InSession, E::ProtocolViolation, "SecondTake"},
       [](Rig& r) {
         r.credited();
         r.h.receive(proto::Take{1});
       },
       [](Rig& r) { r.h.receive(proto::Take{1}); },
       violation},
      {{S::InSession, E::ProtocolViolation, "GoodVerdictBeforeFileDone"},
       credited,
       [](Rig& r) {
         r.h.receive(proto::FileVerdict{0, VerdictCode::Good, {}});
       },
       violation},
      {{S::InSession, E::ProtocolViolation, "CreditOutOfRange"},
       credited,
       [](Rig& r) {
         r.h.receive(proto::Credit{2, 1});
       },
       violation},
      // A file that shrank since the hashing pass cannot be read: our own failure.
      {{S::InSession, E::LocalFailure, "FileShrank"},
       [](Rig& r) {
         r.credited();
         std::filesystem::resize_file(r.h.plan.entries[0].local_path, 10);
       },
       [](Rig& r) { r.h.receive(proto::Take{0}); },
       abort_want(S::InSession, E::LocalFailure)},
      {{S::InSession, E::LocalFailure, "OfferPostFails"},
       [](Rig& r) {
         r.await_accept();
         r.h.transport.fail_one_send_after = 0;
       },
       [](Rig& r) { r.h.receive(r.accept); },
       abort_want(S::InSession, E::LocalFailure)},
  };
  return rows;
}

std::vector<Row> all_rows() {
  std::vector<Row> rows = protocol_rows();
  for (auto& part : {abort_rows(), closing_rows(), session_protocol_rows(), session_abort_rows()})
    rows.insert(rows.end(), part.begin(), part.end());
  return rows;
}

class SenderDriverRows : public ::testing::TestWithParam<Row> {
 protected:
  Rig r;
};

TEST_P(SenderDriverRows, DriverCarriesOutTheRow) {
  const Row& row = GetParam();
  // Once Done, messages, ticks and DISCONNECTED are not even dispatched.
  drive_row(
      r, row.reach, row.inject,
      row.at.state == S::Done ? std::nullopt : std::optional(step_of(row.at.state, row.at.event)),
      row.want, row.also);
}

INSTANTIATE_TEST_SUITE_P(Table, SenderDriverRows, ::testing::ValuesIn(all_rows()), row_name<Row>);

// ---- The end of a session: every entry settled (proto::session_settled) ----

// Not an event of every state: pump() asks it in InSession, once every entry is settled.
struct Settled {
  const char* name;
  Step reach;
  Step inject;
  Want want;
  Step also = nullptr;
};

std::vector<Settled> settled_rows() {
  const Step last_good = [](Rig& r) { r.h.receive(proto::FileVerdict{1, VerdictCode::Good, {}}); };
  return {
      {"AllGood",
       [](Rig& r) { r.all_but_last_settled(); },
       last_good,
       {S::Closing, {{T::Bye}}, O::Success, End::Disconnects}},
      {"AllGoodWithId",
       [](Rig& r) {
         r.h.settings.id = "alice";
         r.all_but_last_settled();
       },
       last_good,
       {S::AwaitSecret, {{T::Id}}},
       [](Rig& r) { EXPECT_EQ(r.h.transport.sent_of<proto::Id>().at(0).id, "alice"); }},
      // No Id after a failure: the receiver gives the secret only for a session all good.
      {"SomeFailedWithId",
       [](Rig& r) {
         r.h.settings.id = "alice";
         r.all_but_last_settled();
       },
       [](Rig& r) {
         r.h.receive(proto::FileVerdict{1, VerdictCode::HashMismatch, {}});
       },
       {S::Closing, {{T::Bye}}, O::SomeFailed, End::Disconnects},
       [](Rig& r) {
         EXPECT_EQ(r.h.status(0), Status::Good);
         EXPECT_EQ(r.h.status(1), Status::Failed);
         EXPECT_EQ(r.h.plan.results[1].outcome, O::HashMismatch);
       }},
      {"Refused",
       [](Rig& r) {
         r.h.plan.entries.pop_back();
         r.h.plan.results.pop_back();
         r.in_session();
       },
       [](Rig& r) {
         r.h.receive(proto::Refuse{0, proto::RejectReason::NoSpace, ""});
       },
       {S::Closing, {{T::Bye}}, O::SomeFailed, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.plan.results[0].outcome, O::Rejected); }},
      // The lead of several connections settles when the others finish, not at an answer.
      {"WhenTheOthersFinish",
       [](Rig& r) {
         r.h.lead_of_several = true;
         r.all_but_last_settled();
         r.h.receive(proto::FileVerdict{1, VerdictCode::Good, {}});
         ASSERT_EQ(r.h.state(), S::InSession);
       },
       [](Rig& r) { r.h.driver->others_finished(1); },
       {S::Closing, {{T::Bye}}, O::SomeFailed, End::Disconnects}},
  };
}

class SenderDriverSettled : public ::testing::TestWithParam<Settled> {
 protected:
  Rig r;
};

TEST_P(SenderDriverSettled, EndsTheSession) {
  const Settled& row = GetParam();
  drive_row(r, row.reach, row.inject, StepName{"InSession", "all settled"}, row.want, row.also);
}

INSTANTIATE_TEST_SUITE_P(Session, SenderDriverSettled, ::testing::ValuesIn(settled_rows()),
                         [](const ::testing::TestParamInfo<Settled>& p) { return p.param.name; });

// ---- The set-up's rows: every (state, event) pair ----

using SetupRow = TableRow<proto::SetupState, proto::SetupEvent, Step, Want>;

std::vector<SetupRow> setup_rows() {
  using SS = proto::SetupState;
  using SE = proto::SetupEvent;
  const Step address = [](Rig& r) { r.resolving_address(); };
  const Step route = [](Rig& r) { r.resolving_route(); };
  const Want cannot_connect{S::Done, {}, O::ConnectFailed, End::Finished};
  const Want interrupted{S::Done, {}, O::Interrupted, End::Finished};
  // How the set-up fails: the CM says so, its device goes, the deadline passes.
  const std::vector<std::pair<const char*, Step>> failures{
      {"CmError", [](Rig& r) { r.h.driver->on_connect_failed("ADDR_ERROR"); }},
      {"DeviceRemoved", [](Rig& r) { r.transport_fails(); }},
      {"Disconnected", [](Rig& r) { r.h.driver->on_disconnected(); }},
      {"Timeout", [](Rig& r) { r.tick_late(); }},
  };
  std::vector<SetupRow> rows{
      {{SS::ResolvingAddress, SE::AddressResolved, ""},
       address,
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::AddressResolved); },
       {S::Connecting, {}},
       [](Rig& r) {
         EXPECT_EQ(r.h.driver->setup_state(), SS::ResolvingRoute);
         EXPECT_EQ(r.h.cm.routes, 1);
         EXPECT_EQ(r.h.cm.connects, 0);
       }},
      {{SS::ResolvingRoute, SE::RouteResolved, ""},
       route,
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::RouteResolved); },
       {S::Connecting, {}},
       [](Rig& r) {
         EXPECT_FALSE(r.h.driver->setup_state().has_value());
         EXPECT_EQ(r.h.cm.connects, 1);
       }},
      // rdma_cm out of order: nothing to connect to.
      {{SS::ResolvingAddress, SE::RouteResolved, ""},
       address,
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::RouteResolved); },
       cannot_connect,
       [](Rig& r) { EXPECT_EQ(r.h.cm.connects, 0); }},
      {{SS::ResolvingRoute, SE::AddressResolved, ""},
       route,
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::AddressResolved); },
       cannot_connect,
       [](Rig& r) { EXPECT_EQ(r.h.cm.routes, 1); }},
      // Our own call failing: the route cannot even be asked for.
      {{SS::ResolvingRoute, SE::Failed, "RouteFails"},
       [](Rig& r) {
         r.resolving_address();
         r.h.cm.fail_route = true;
       },
       [](Rig& r) { r.h.driver->on_setup(proto::SetupEvent::AddressResolved); },
       cannot_connect},
      {{SS::ResolvingAddress, SE::Interrupted, ""},
       address,
       [](Rig& r) { r.h.driver->interrupt(SIGINT); },
       interrupted},
      {{SS::ResolvingRoute, SE::Interrupted, ""},
       route,
       [](Rig& r) { r.h.driver->interrupt(SIGTERM); },
       interrupted},
  };
  for (SS s : {SS::ResolvingAddress, SS::ResolvingRoute})
    for (const auto& [name, inject] : failures)
      rows.push_back({{s, SE::Failed, name},
                      s == SS::ResolvingAddress ? address : route,
                      inject,
                      cannot_connect});
  return rows;
}

class SenderDriverSetup : public ::testing::TestWithParam<SetupRow> {
 protected:
  Rig r;
};

TEST_P(SenderDriverSetup, DriverCarriesOutTheRow) {
  const SetupRow& row = GetParam();
  drive_row(r, row.reach, row.inject, step_of(row.at.state, row.at.event), row.want, row.also);
}

INSTANTIATE_TEST_SUITE_P(Setup, SenderDriverSetup, ::testing::ValuesIn(setup_rows()),
                         row_name<SetupRow>);

// Why the set-up has a machine of its own: until Connect the driver has asked the CM for no
// connection, so it has no transport to receive a message from or post one on (the fake CM
// counts the driver's connect calls). Its events are the CM's, the clock's, a signal's.
TEST(SenderDriverCoverage, NoTransportBeforeConnect) {
  for (proto::SetupState s : proto::enum_values<proto::SetupState>()) {
    Rig r;
    ASSERT_NO_FATAL_FAILURE(r.reach(s));
    EXPECT_FALSE(r.has_transport()) << proto::to_string(s);
    EXPECT_TRUE(r.h.transport.sent.empty()) << proto::to_string(s) << ": something was posted";
    // A message waiting in the fake transport is not read: no step is taken.
    const std::size_t stepped = r.steps().size();
    r.h.receive(r.accept);
    EXPECT_EQ(r.h.driver->setup_state(), s);
    EXPECT_EQ(r.steps().size(), stepped) << steps_since(r.steps(), stepped);
  }
  Rig r;
  ASSERT_NO_FATAL_FAILURE(r.reach(S::Connecting));
  EXPECT_TRUE(r.has_transport()) << "Connecting: the connection was asked for";
}

// Every (state, event) pair of an open state, of both machines, is a row driven above or an
// input driven above and shown illegal: none is left to chance, and none is listed twice.
TEST(SenderDriverCoverage, EveryPairOfAnOpenStateIsDriven) {
  std::map<std::pair<S, E>, std::string> seen;
  for (const Row& row : all_rows()) {
    if (row.at.state == S::Closing || row.at.state == S::Done) continue;
    seen.emplace(std::pair{row.at.state, row.at.event}, "row");
  }
  for (const Misplaced& m : misplaced_inputs()) {
    auto [it, added] = seen.emplace(std::pair{m.state, m.event}, "illegal");
    EXPECT_TRUE(added || it->second == "illegal") << m;
  }
  for (S s : kOpenStates)
    for (E e : proto::enum_values<proto::SenderEvent>())
      EXPECT_TRUE(seen.contains({s, e})) << proto::to_string(s) << " + " << proto::to_string(e);
  // 4 open states, 22 events.
  EXPECT_EQ(seen.size(), 4u * 22u);

  std::set<std::pair<proto::SetupState, proto::SetupEvent>> setup;
  for (const SetupRow& row : setup_rows()) setup.emplace(row.at.state, row.at.event);
  EXPECT_EQ(setup.size(), proto::enum_values<proto::SetupState>().size() *
                              proto::enum_values<proto::SetupEvent>().size());
}

}  // namespace
}  // namespace rdmax::test::sender_rig
