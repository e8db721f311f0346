#include "protocol/sender_machine.hpp"

#include "machine_enums.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

// The sender's machines, checked exhaustively: every (state, event) pair of the connection,
// in every context (with and without an id, each finding of the receiver's Proof), either
// matches the table of legal transitions written out below, or is the illegal abort with a
// ProtocolError outcome; every pair of the set-up and both ends of a session have their
// exact transition. docs/PROTOCOL.md section 4 shows the same tables.

namespace {

using namespace rdmax::proto;
using S = SenderState;
using E = SenderEvent;
using A = SenderAction;
using O = SenderOutcome;
using Actions = ActionList<A>;

constexpr const auto& kAllStates = rdmax::test::kAllSenderStates;

constexpr const auto& kAllEvents = rdmax::test::kAllSenderEvents;

constexpr std::array kAllActions{A::ResolveRoute, A::Connect,    A::SendOpen,     A::SendMore,
                                 A::SendId,       A::KeepSecret, A::SendBye,      A::SendError,
                                 A::Disconnect,   A::Finish,     A::StartSession, A::SendProof};

constexpr std::array kAllOutcomes{
    O::Success,      O::ConnectFailed,  O::ConnectionLost, O::Rejected,    O::HashMismatch,
    O::Denied,       O::ReceiverFailed, O::ProtocolError,  O::Interrupted, O::VersionUnsupported,
    O::LocalFailure, O::SomeFailed,     O::AuthFailed};

// The enums are dense from 0: a new enumerator breaks these until it joins its list.
static_assert(static_cast<std::size_t>(A::SendProof) + 1 == kAllActions.size());
static_assert(static_cast<std::size_t>(O::AuthFailed) + 1 == kAllOutcomes.size());

constexpr SenderContext kWithId{true};
constexpr SenderContext kWithoutId{false};

// Every context the driver can give: with or without an id, and what it found of the
// receiver's Proof.
std::vector<SenderContext> all_contexts() {
  std::vector<SenderContext> out;
  for (bool id : {true, false})
    for (ReceiverProof proof : rdmax::test::kAllReceiverProofs) out.push_back({id, proof});
  return out;
}
const std::vector<SenderContext> kContexts = all_contexts();

// A queue pair exists and messages can flow.
bool connected(S s) {
  return s == S::AwaitAccept || s == S::InSession || s == S::AwaitSecret;
}

bool open_state(S s) {
  return s != S::Closing && s != S::Done;
}

std::string describe(S next, const Actions& actions, std::optional<O> outcome, bool illegal) {
  std::string text = to_string(next);
  text += " [";
  for (std::size_t i = 0; A a : actions) text += (i++ == 0 ? "" : ", ") + std::string(to_string(a));
  text += "]";
  if (outcome) text += std::string(" outcome=") + to_string(*outcome);
  if (illegal) text += " illegal";
  return text;
}

std::string describe(const SenderTransition& t) {
  return describe(t.next, t.actions, t.outcome, t.illegal);
}

struct Row {
  S state;
  E event;
  S next;
  Actions actions;
  std::optional<O> outcome;
  bool illegal = false;
};

// The protocol's own transitions; those that depend on the receiver's Proof are listed per
// context by proof_rows.
const std::vector<Row> kProtocolRows{
    {S::Connecting, E::Established, S::AwaitAccept, {A::SendOpen}, {}},
    {S::AwaitAccept, E::GotReject, S::Closing, {A::Disconnect}, O::Rejected},
    {S::AwaitAccept, E::GotRejectVersion, S::Closing, {A::Disconnect}, O::VersionUnsupported},
    {S::AwaitAccept, E::GotWorking, S::AwaitAccept, {}, {}},
    // Sender keys (PROTOCOL.md 7.8): our Proof answers the Challenge; a refusal of our key
    // ends the connection before any data.
    {S::AwaitAccept, E::GotChallenge, S::AwaitAccept, {A::SendProof}, {}},
    {S::AwaitAccept, E::GotRejectAuth, S::Closing, {A::Disconnect}, O::AuthFailed},
    {S::AwaitSecret, E::GotSecret, S::Closing, {A::KeepSecret, A::Disconnect}, O::Success},
    {S::AwaitSecret, E::GotDenied, S::Closing, {A::Disconnect}, O::Denied},
    // The receiver sends Working until our Id reaches it (PROTOCOL.md 7.5).
    {S::AwaitSecret, E::GotWorking, S::AwaitSecret, {}, {}},
};

// The session's entries (docs/PROTOCOL.md 7.5).
const std::vector<Row> kSessionRows{
    {S::InSession, E::GotCredit, S::InSession, {A::SendMore}, {}},
    {S::InSession, E::GotTake, S::InSession, {A::SendMore}, {}},
    {S::InSession, E::GotRefuse, S::InSession, {A::SendMore}, {}},
    {S::InSession, E::GotFileVerdict, S::InSession, {A::SendMore}, {}},
    {S::InSession, E::GotWorking, S::InSession, {}, {}},
    // Resume (docs/PROTOCOL.md 7.6): a Take from an offset, or the file settled as there.
    {S::InSession, E::GotResume, S::InSession, {A::SendMore}, {}},
    {S::InSession, E::GotHave, S::InSession, {A::SendMore}, {}},
    {S::InSession, E::GotHolds, S::InSession, {A::SendMore}, {}},
};

// Sender keys (PROTOCOL.md 7.8): the Accept starts the session unless it came before the
// receiver proved that it holds our key; a Proof the driver checked good changes nothing, a
// wrong one ends the connection before any data, and one nobody asked for is illegal.
std::vector<Row> proof_rows(const SenderContext& ctx) {
  const Actions say_why{A::SendError, A::Disconnect};
  std::vector<Row> rows;
  if (ctx.proof == ReceiverProof::Missing)
    rows.push_back({S::AwaitAccept, E::GotAccept, S::Closing, say_why, O::AuthFailed});
  else
    rows.push_back({S::AwaitAccept, E::GotAccept, S::InSession, {A::StartSession}, {}});
  if (ctx.proof == ReceiverProof::Good)
    rows.push_back({S::AwaitAccept, E::GotProof, S::AwaitAccept, {}, {}});
  if (ctx.proof == ReceiverProof::Wrong)
    rows.push_back({S::AwaitAccept, E::GotProof, S::Closing, say_why, O::AuthFailed});
  return rows;
}

// The common aborts. Before a connection exists there is nothing to say goodbye on: the
// machine finishes at once and the outcome is "cannot connect" (or "interrupted").
std::vector<Row> abort_rows() {
  std::vector<Row> rows;
  const Actions say_why{A::SendError, A::Disconnect};
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    if (connected(s)) {
      rows.push_back({s, E::Disconnected, S::Done, {A::Finish}, O::ConnectionLost});
      rows.push_back({s, E::TransportFailed, S::Done, {A::Finish}, O::ConnectionLost});
      rows.push_back({s, E::Timeout, S::Closing, say_why, O::ConnectionLost});
      rows.push_back({s, E::Interrupted, S::Closing, say_why, O::Interrupted});
      // ConnectFailed once connected is not in the table: illegal.
    } else {
      rows.push_back({s, E::ConnectFailed, S::Done, {A::Finish}, O::ConnectFailed});
      rows.push_back({s, E::Disconnected, S::Done, {A::Finish}, O::ConnectFailed});
      rows.push_back({s, E::TransportFailed, S::Done, {A::Finish}, O::ConnectFailed});
      rows.push_back({s, E::Timeout, S::Done, {A::Finish}, O::ConnectFailed});
      rows.push_back({s, E::Interrupted, S::Done, {A::Finish}, O::Interrupted});
    }
    if (connected(s)) {
      rows.push_back({s, E::GotError, S::Closing, {A::Disconnect}, O::ProtocolError});
      rows.push_back({s, E::GotErrorGaveUp, S::Closing, {A::Disconnect}, O::ConnectionLost});
      rows.push_back({s, E::ProtocolViolation, S::Closing, say_why, O::ProtocolError});
      rows.push_back({s, E::LocalFailure, S::Closing, say_why, O::LocalFailure});
    } else {
      // Before connecting there is nothing to disconnect: finish at once.
      rows.push_back({s, E::GotError, S::Done, {A::Finish}, O::ProtocolError});
      rows.push_back({s, E::GotErrorGaveUp, S::Done, {A::Finish}, O::ConnectionLost});
      rows.push_back({s, E::ProtocolViolation, S::Done, {A::Finish}, O::ProtocolError});
      rows.push_back({s, E::LocalFailure, S::Done, {A::Finish}, O::ConnectFailed});
    }
  }
  return rows;
}

// Closing and Done absorb everything: the outcome is already decided. A failure of our own
// on the way out ends it at once.
std::vector<Row> absorbing_rows() {
  std::vector<Row> rows;
  for (E e : kAllEvents) {
    const bool ends =
        e == E::Disconnected || e == E::TransportFailed || e == E::Timeout || e == E::LocalFailure;
    rows.push_back({S::Closing, e, ends ? S::Done : S::Closing,
                    ends ? Actions{A::Finish} : Actions{}, std::nullopt});
    rows.push_back({S::Done, e, S::Done, {}, std::nullopt});
  }
  return rows;
}

std::vector<Row> legal_rows(const SenderContext& ctx) {
  std::vector<Row> rows = kProtocolRows;
  for (const Row& r : proof_rows(ctx)) rows.push_back(r);
  for (const Row& r : kSessionRows) rows.push_back(r);
  for (const Row& r : abort_rows()) rows.push_back(r);
  for (const Row& r : absorbing_rows()) rows.push_back(r);
  return rows;
}

std::optional<Row> find_legal(S s, E e, const SenderContext& ctx) {
  for (const Row& r : legal_rows(ctx))
    if (r.state == s && r.event == e) return r;
  return std::nullopt;
}

std::string trace(S s, E e, const SenderContext& ctx) {
  return std::string(to_string(s)) + " + " + to_string(e) + (ctx.has_id ? " (id" : " (no id") +
         ", proof " + std::to_string(static_cast<int>(ctx.proof)) + ")";
}

void expect_transition(S s, E e, const SenderContext& ctx, S next, Actions actions,
                       std::optional<O> outcome) {
  SCOPED_TRACE(trace(s, e, ctx));
  EXPECT_EQ(describe(sender_next(s, e, ctx)), describe(next, actions, outcome, false));
}

// The same in every context.
void expect_transition(S s, E e, S next, Actions actions, std::optional<O> outcome) {
  for (const SenderContext& ctx : kContexts) expect_transition(s, e, ctx, next, actions, outcome);
}

void expect_illegal(S s, E e, const SenderContext& ctx) {
  SCOPED_TRACE(trace(s, e, ctx));
  const SenderTransition t = sender_next(s, e, ctx);
  EXPECT_TRUE(t.illegal);
  if (connected(s))
    EXPECT_EQ(describe(t),
              describe(S::Closing, {A::SendError, A::Disconnect}, O::ProtocolError, true));
  else
    EXPECT_EQ(describe(t), describe(S::Done, {A::Finish}, O::ProtocolError, true));
}

// ---- The table itself ----

TEST(SenderMachine, TableHasNoDuplicatePairs) {
  for (const SenderContext& ctx : kContexts) {
    std::set<std::pair<S, E>> seen;
    for (const Row& r : legal_rows(ctx))
      EXPECT_TRUE(seen.insert({r.state, r.event}).second) << trace(r.state, r.event, ctx);
  }
}

TEST(SenderMachine, EveryLegalPairHasItsExactTransition) {
  for (const SenderContext& ctx : kContexts)
    for (const Row& r : legal_rows(ctx))
      expect_transition(r.state, r.event, ctx, r.next, r.actions, r.outcome);
}

TEST(SenderMachine, EveryPairOutsideTheTableIsIllegalWithProtocolError) {
  for (const SenderContext& ctx : kContexts) {
    std::size_t illegal = 0;
    for (S s : kAllStates) {
      for (E e : kAllEvents) {
        if (find_legal(s, e, ctx)) continue;
        ++illegal;
        expect_illegal(s, e, ctx);
      }
    }
    // 4 open states x 27 events, minus 18 protocol rows (10, 8 of the entries), the
    // Proof's (1 if it was checked, good or wrong), 9 (Connecting) + 3 x 8 abort rows.
    const bool checked = ctx.proof == ReceiverProof::Good || ctx.proof == ReceiverProof::Wrong;
    EXPECT_EQ(illegal, 4U * 27U - 18U - (checked ? 1U : 0U) - 9U - 24U);
  }
}

TEST(SenderMachine, OnlyIllegalTransitionsAreMarkedIllegal) {
  for (const SenderContext& ctx : kContexts)
    for (const Row& r : legal_rows(ctx))
      EXPECT_FALSE(sender_next(r.state, r.event, ctx).illegal) << trace(r.state, r.event, ctx);
}

// ---- Each protocol transition, named ----

TEST(SenderMachine, EstablishedSendsTheOpen) {
  expect_transition(S::Connecting, E::Established, S::AwaitAccept, {A::SendOpen}, {});
}

TEST(SenderMachine, AcceptStartsTheSession) {
  for (ReceiverProof proof : {ReceiverProof::NotDue, ReceiverProof::Good, ReceiverProof::Wrong})
    expect_transition(S::AwaitAccept, E::GotAccept, {false, proof}, S::InSession, {A::StartSession},
                      {});
}

TEST(SenderMachine, NoByteGoesToAReceiverThatDidNotProveItself) {
  expect_transition(S::AwaitAccept, E::GotAccept, {false, ReceiverProof::Missing}, S::Closing,
                    {A::SendError, A::Disconnect}, O::AuthFailed);
  expect_transition(S::AwaitAccept, E::GotProof, {true, ReceiverProof::Wrong}, S::Closing,
                    {A::SendError, A::Disconnect}, O::AuthFailed);
  expect_transition(S::AwaitAccept, E::GotProof, {true, ReceiverProof::Good}, S::AwaitAccept, {},
                    {});
  // A Proof nobody asked for, or one anywhere but AwaitAccept, is a protocol error.
  for (ReceiverProof proof : {ReceiverProof::NotDue, ReceiverProof::Missing})
    expect_illegal(S::AwaitAccept, E::GotProof, {false, proof});
  for (S s : {S::Connecting, S::InSession, S::AwaitSecret})
    for (const SenderContext& ctx : kContexts) expect_illegal(s, E::GotProof, ctx);
}

TEST(SenderMachine, RejectIsReported) {
  expect_transition(S::AwaitAccept, E::GotReject, S::Closing, {A::Disconnect}, O::Rejected);
  expect_transition(S::AwaitAccept, E::GotRejectVersion, S::Closing, {A::Disconnect},
                    O::VersionUnsupported);
}

TEST(SenderMachine, AnswersAndCreditsDriveTheEntries) {
  for (E e : {E::GotCredit, E::GotTake, E::GotRefuse, E::GotFileVerdict, E::GotResume, E::GotHave,
              E::GotHolds})
    expect_transition(S::InSession, e, S::InSession, {A::SendMore}, {});
  expect_transition(S::InSession, E::GotWorking, S::InSession, {}, {});
}

TEST(SenderMachine, TheLastEntrySettledEndsTheSession) {
  for (const SenderContext& ctx : kContexts) {
    SCOPED_TRACE(std::string("settled") + (ctx.has_id ? " (id)" : " (no id)"));
    EXPECT_EQ(describe(session_settled(true, ctx)),
              ctx.has_id ? describe(S::AwaitSecret, {A::SendId}, {}, false)
                         : describe(S::Closing, {A::SendBye, A::Disconnect}, O::Success, false));
    // The receiver gives a secret only for a session whose every entry is good: no Id.
    EXPECT_EQ(describe(session_settled(false, ctx)),
              describe(S::Closing, {A::SendBye, A::Disconnect}, O::SomeFailed, false));
  }
}

// ---- The set-up, every pair ----

std::string describe(const SetupTransition& t) {
  std::string text = t.next ? to_string(*t.next) : std::string("over, ") + to_string(t.then);
  text += " [";
  for (std::size_t i = 0; A a : t.actions)
    text += (i++ == 0 ? "" : ", ") + std::string(to_string(a));
  text += "]";
  if (t.outcome) text += std::string(" outcome=") + to_string(*t.outcome);
  if (t.illegal) text += " illegal";
  return text;
}

TEST(SenderSetup, EveryPairHasItsExactTransition) {
  using SS = SetupState;
  using SE = SetupEvent;
  const std::string failed = "over, Done [Finish] outcome=connect_failed";
  const std::map<std::pair<SS, SE>, std::string> expected{
      {{SS::ResolvingAddress, SE::AddressResolved}, "ResolvingRoute [ResolveRoute]"},
      {{SS::ResolvingAddress, SE::RouteResolved}, failed + " illegal"},  // out of order
      {{SS::ResolvingAddress, SE::Failed}, failed},
      {{SS::ResolvingAddress, SE::Interrupted}, "over, Done [Finish] outcome=interrupted"},
      {{SS::ResolvingRoute, SE::AddressResolved}, failed + " illegal"},  // twice
      {{SS::ResolvingRoute, SE::RouteResolved}, "over, Connecting [Connect]"},
      {{SS::ResolvingRoute, SE::Failed}, failed},
      {{SS::ResolvingRoute, SE::Interrupted}, "over, Done [Finish] outcome=interrupted"},
  };
  ASSERT_EQ(expected.size(),
            rdmax::test::kAllSetupStates.size() * rdmax::test::kAllSetupEvents.size());
  for (const auto& [pair, want] : expected)
    EXPECT_EQ(describe(setup_next(pair.first, pair.second)), want)
        << to_string(pair.first) << " + " << to_string(pair.second);
}

TEST(SenderMachine, SecretOrDenial) {
  expect_transition(S::AwaitSecret, E::GotSecret, S::Closing, {A::KeepSecret, A::Disconnect},
                    O::Success);
  expect_transition(S::AwaitSecret, E::GotDenied, S::Closing, {A::Disconnect}, O::Denied);
  expect_transition(S::AwaitSecret, E::GotWorking, S::AwaitSecret, {}, {});
}

// ---- Happy paths, end to end ----

// An event, or (none) every entry settled: `good` says whether all of them are.
struct Step {
  std::optional<E> event;
  S next;
  Actions actions;
  std::optional<O> outcome;
  bool good = true;
};

Step settled(bool good, S next, Actions actions, std::optional<O> outcome) {
  return {std::nullopt, next, actions, outcome, good};
}

// Feeds the events in order from where the set-up ends, checking every transition; returns
// the first outcome named (the one the program reports) and checks the walk ends in Done.
std::optional<O> walk(const SenderContext& ctx, const std::vector<Step>& steps) {
  S s = S::Connecting;
  std::optional<O> first;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    SCOPED_TRACE("step " + std::to_string(i) + ": " +
                 (step.event ? trace(s, *step.event, ctx) : std::string("settled")));
    const SenderTransition t =
        step.event ? sender_next(s, *step.event, ctx) : session_settled(step.good, ctx);
    EXPECT_EQ(describe(t), describe(step.next, step.actions, step.outcome, false));
    if (!first) first = t.outcome;
    s = t.next;
  }
  EXPECT_EQ(std::string(to_string(s)), "Done");
  return first;
}

std::vector<Step> up_to_session(std::size_t answers) {
  std::vector<Step> steps{
      {E::Established, S::AwaitAccept, {A::SendOpen}, {}},
      {E::GotAccept, S::InSession, {A::StartSession}, {}},
  };
  for (std::size_t i = 0; i < answers; ++i)
    steps.push_back({E::GotCredit, S::InSession, {A::SendMore}, {}});
  return steps;
}

std::vector<Step> then(std::vector<Step> steps, const std::vector<Step>& more) {
  steps.insert(steps.end(), more.begin(), more.end());
  return steps;
}

const Step kDisconnected{E::Disconnected, S::Done, {A::Finish}, {}};

TEST(SenderMachine, HappyPathWithoutId) {
  const auto steps =
      then(up_to_session(4), {{E::GotTake, S::InSession, {A::SendMore}, {}},
                              {E::GotFileVerdict, S::InSession, {A::SendMore}, {}},
                              settled(true, S::Closing, {A::SendBye, A::Disconnect}, O::Success),
                              kDisconnected});
  EXPECT_EQ(walk(kWithoutId, steps), O::Success);
}

TEST(SenderMachine, HappyPathWithId) {
  const auto steps = then(up_to_session(4),
                          {settled(true, S::AwaitSecret, {A::SendId}, {}),
                           {E::GotWorking, S::AwaitSecret, {}, {}},
                           {E::GotSecret, S::Closing, {A::KeepSecret, A::Disconnect}, O::Success},
                           kDisconnected});
  EXPECT_EQ(walk(kWithId, steps), O::Success);
}

TEST(SenderMachine, IdDenied) {
  const auto steps = then(up_to_session(1), {settled(true, S::AwaitSecret, {A::SendId}, {}),
                                             {E::GotDenied, S::Closing, {A::Disconnect}, O::Denied},
                                             kDisconnected});
  EXPECT_EQ(walk(kWithId, steps), O::Denied);
}

TEST(SenderMachine, ClosingEndsOnTimeoutIfThePeerNeverDisconnects) {
  const auto steps = then(up_to_session(0),
                          {settled(false, S::Closing, {A::SendBye, A::Disconnect}, O::SomeFailed),
                           {E::Timeout, S::Done, {A::Finish}, {}}});
  EXPECT_EQ(walk(kWithoutId, steps), O::SomeFailed);
}

// ---- Common aborts from every state ----

TEST(SenderMachine, ConnectFailedBeforeConnectingFinishesElseIsIllegal) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    if (connected(s)) {
      expect_illegal(s, E::ConnectFailed, kWithId);
      expect_illegal(s, E::ConnectFailed, kWithoutId);
    } else {
      expect_transition(s, E::ConnectFailed, S::Done, {A::Finish}, O::ConnectFailed);
    }
  }
}

TEST(SenderMachine, TransportLossFromEveryOpenState) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    const O lost = connected(s) ? O::ConnectionLost : O::ConnectFailed;
    expect_transition(s, E::Disconnected, S::Done, {A::Finish}, lost);
    expect_transition(s, E::TransportFailed, S::Done, {A::Finish}, lost);
  }
}

TEST(SenderMachine, TimeoutFromEveryOpenState) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    if (connected(s))
      expect_transition(s, E::Timeout, S::Closing, {A::SendError, A::Disconnect},
                        O::ConnectionLost);
    else
      expect_transition(s, E::Timeout, S::Done, {A::Finish}, O::ConnectFailed);
  }
}

TEST(SenderMachine, InterruptedFromEveryOpenState) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    if (connected(s))
      expect_transition(s, E::Interrupted, S::Closing, {A::SendError, A::Disconnect},
                        O::Interrupted);
    else
      expect_transition(s, E::Interrupted, S::Done, {A::Finish}, O::Interrupted);
  }
}

TEST(SenderMachine, PeerErrorAndViolationFromEveryOpenState) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    if (!connected(s)) {
      expect_transition(s, E::GotError, S::Done, {A::Finish}, O::ProtocolError);
      expect_transition(s, E::ProtocolViolation, S::Done, {A::Finish}, O::ProtocolError);
      continue;
    }
    expect_transition(s, E::GotError, S::Closing, {A::Disconnect}, O::ProtocolError);
    expect_transition(s, E::ProtocolViolation, S::Closing, {A::SendError, A::Disconnect},
                      O::ProtocolError);
  }
}

TEST(SenderMachine, EveryWayIntoClosingOrDoneFromAnOpenStateNamesAnOutcome) {
  for (const SenderContext& ctx : kContexts)
    for (S s : kAllStates) {
      if (!open_state(s)) continue;
      for (E e : kAllEvents) {
        const SenderTransition t = sender_next(s, e, ctx);
        if (t.next == S::Closing || t.next == S::Done) {
          EXPECT_TRUE(t.outcome.has_value()) << trace(s, e, ctx);
        }
      }
    }
}

// ---- Closing and Done ----

TEST(SenderMachine, ClosingAbsorbsLateEvents) {
  for (E e : kAllEvents) {
    const bool ends =
        e == E::Disconnected || e == E::TransportFailed || e == E::Timeout || e == E::LocalFailure;
    expect_transition(S::Closing, e, ends ? S::Done : S::Closing,
                      ends ? Actions{A::Finish} : Actions{}, std::nullopt);
  }
}

TEST(SenderMachine, DoneAbsorbsEverything) {
  for (E e : kAllEvents) expect_transition(S::Done, e, S::Done, {}, std::nullopt);
}

TEST(SenderMachine, EveryStateButDoneCanBeLeft) {
  for (S s : kAllStates) {
    if (s == S::Done) continue;
    bool leaves = false;
    for (E e : kAllEvents) leaves = leaves || sender_next(s, e, kWithoutId).next != s;
    EXPECT_TRUE(leaves) << to_string(s);
  }
}

// ---- Names ----

TEST(SenderMachine, EveryEnumeratorHasADistinctName) {
  rdmax::test::expect_distinct_names(kAllStates);
  rdmax::test::expect_distinct_names(kAllEvents);
  rdmax::test::expect_distinct_names(kAllActions);
  rdmax::test::expect_distinct_names(kAllOutcomes);
  rdmax::test::expect_distinct_names(rdmax::test::kAllSetupStates);
  rdmax::test::expect_distinct_names(rdmax::test::kAllSetupEvents);
}

TEST(SenderMachine, OutOfRangeValuesAreNamedQuestionMark) {
  EXPECT_STREQ(to_string(static_cast<S>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<E>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<A>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<O>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<SetupState>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<SetupEvent>(200)), "?");
}

}  // namespace
