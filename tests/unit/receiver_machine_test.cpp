#include "protocol/receiver_machine.hpp"

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

// The receiver's machine, checked exhaustively: every (state, event) pair, with every finding
// of the driver's checks an event may carry (ReceiverChecks), either matches the table of
// legal transitions written out below, or is the named illegal-event abort; and every result
// of the entries' work (session_result) has its exact transition. docs/PROTOCOL.md section 4
// shows the same table; the two must agree.

namespace {

using namespace rdmax::proto;
using S = ReceiverState;
using E = ReceiverEvent;
using A = ReceiverAction;
using Actions = ActionList<A>;

constexpr const auto& kAllStates = rdmax::test::kAllReceiverStates;

constexpr const auto& kAllEvents = rdmax::test::kAllReceiverEvents;

constexpr std::array kAllActions{
    A::SendChallenge, A::SendAccept, A::SendReject, A::CheckOffer,    A::SendTake,
    A::SendResume,    A::SendHave,   A::SendHolds,  A::CheckContinue, A::AbandonEntry,
    A::SendRefuse,    A::StoreChunk, A::SendCredit, A::FinishEntries, A::SendFileVerdict,
    A::SendSecret,    A::SendDenied, A::SendError,  A::DiscardFile,   A::Disconnect,
    A::Release};

// The lists above name every enumerator: the enums are dense from 0, so the last one's value
// plus one is the count. A new enumerator breaks these until it is added to its list.
static_assert(static_cast<std::size_t>(A::Release) + 1 == kAllActions.size());

bool open_state(S s) {
  return s != S::Closing && s != S::Closed;
}

// "Closing [SendError, Disconnect] IllegalEvent": one string, so a failure shows all of it.
std::string describe(S next, const Actions& actions, bool illegal) {
  std::string text = to_string(next);
  text += " [";
  for (std::size_t i = 0; A a : actions) text += (i++ == 0 ? "" : ", ") + std::string(to_string(a));
  text += "]";
  if (illegal) text += " IllegalEvent";
  return text;
}

std::string describe(const ReceiverTransition& t) {
  return describe(t.next, t.actions, t.illegal);
}

// Every finding the driver can give with an event (most events ignore them).
std::vector<ReceiverChecks> all_checks() {
  std::vector<ReceiverChecks> out;
  for (OpenCheck open : rdmax::test::kAllOpenChecks)
    for (IdLookup id : rdmax::test::kAllIdLookups) out.push_back({open, id});
  return out;
}
const std::vector<ReceiverChecks> kChecks = all_checks();

std::string trace(S s, E e, const ReceiverChecks& c) {
  return std::string(to_string(s)) + " + " + to_string(e) + " (open " + to_string(c.open) +
         ", id " + to_string(c.id) + ")";
}

struct Row {
  S state;
  E event;
  S next;
  Actions actions;
};

// The protocol's own transitions (docs/PROTOCOL.md 7.5) for the findings `c`: an Open (or
// with --senders the Proof, then the rest of the Open) accepted, rejected or to be proven;
// an id known, unknown or the last attempt's. An Open, a Proof or an Id the driver did not
// check (out of place) has no row: illegal.
std::vector<Row> protocol_rows(const ReceiverChecks& c) {
  const Actions reject{A::SendReject, A::DiscardFile, A::Disconnect};
  std::vector<Row> rows{
      {S::InSession, E::GotOffer, S::InSession, {A::CheckOffer}},
      // The digest at the end (PROTOCOL.md 7.9).
      {S::InSession, E::GotContinue, S::InSession, {A::CheckContinue}},
      {S::InSession, E::GotFileAbort, S::InSession, {A::AbandonEntry, A::FinishEntries}},
      {S::InSession, E::GotChunk, S::InSession, {A::StoreChunk}},
      {S::InSession, E::GotFileDone, S::InSession, {A::FinishEntries}},
      {S::InSession, E::GotBye, S::Closing, {A::DiscardFile, A::Disconnect}},
      {S::AwaitId, E::GotBye, S::Closing, {A::Disconnect}},
  };
  if (c.open == OpenCheck::Accepted) {
    rows.push_back({S::AwaitOpen, E::GotOpen, S::InSession, {A::SendAccept}});
    rows.push_back({S::Authenticating, E::GotProof, S::InSession, {A::SendAccept}});
  }
  if (c.open == OpenCheck::Rejected) {
    rows.push_back({S::AwaitOpen, E::GotOpen, S::Closing, reject});
    rows.push_back({S::Authenticating, E::GotProof, S::Closing, reject});
  }
  // --senders (PROTOCOL.md 7.8): a claimed key is challenged.
  if (c.open == OpenCheck::NeedsProof)
    rows.push_back({S::AwaitOpen, E::GotOpen, S::Authenticating, {A::SendChallenge}});
  for (S s : {S::InSession, S::AwaitId}) {
    if (c.id == IdLookup::Known)
      rows.push_back({s, E::GotId, S::Closing, {A::SendSecret, A::Disconnect}});
    if (c.id == IdLookup::Unknown) rows.push_back({s, E::GotId, S::AwaitId, {A::SendDenied}});
    if (c.id == IdLookup::AttemptsExhausted)
      rows.push_back({s, E::GotId, S::Closing, {A::SendDenied, A::Disconnect}});
  }
  return rows;
}
// The common aborts, legal in every open state. Each discards what is not committed: the
// entries in flight (DiscardFile finds nothing once every entry is settled, and is there so
// that no way out can leave a temporary behind).
std::vector<Row> abort_rows() {
  std::vector<Row> rows;
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    const Actions our_error{A::SendError, A::DiscardFile, A::Disconnect};
    rows.push_back({s, E::Disconnected, S::Closed, {A::DiscardFile, A::Release}});
    rows.push_back({s, E::TransportFailed, S::Closing, {A::DiscardFile, A::Disconnect}});
    rows.push_back({s, E::GotError, S::Closing, {A::DiscardFile, A::Disconnect}});
    rows.push_back({s, E::ProtocolViolation, S::Closing, our_error});
    rows.push_back({s, E::LocalFailure, S::Closing, our_error});
    rows.push_back({s, E::Timeout, S::Closing, our_error});
    rows.push_back({s, E::ShuttingDown, S::Closing, our_error});
  }
  return rows;
}

// Closing and Closed absorb everything; only the transport's end (or giving up on it) moves
// Closing to Closed, and a failure of our own on the way out (its step's remaining actions
// did not run) ends it at once.
std::vector<Row> absorbing_rows() {
  std::vector<Row> rows;
  for (E e : kAllEvents) {
    const bool ends = e == E::Disconnected || e == E::TransportFailed || e == E::Timeout;
    rows.push_back({S::Closing, e, ends || e == E::LocalFailure ? S::Closed : S::Closing,
                    ends || e == E::LocalFailure ? Actions{A::Release} : Actions{}});
    rows.push_back({S::Closed, e, S::Closed, {}});
  }
  return rows;
}

std::vector<Row> legal_rows(const ReceiverChecks& c) {
  std::vector<Row> rows = protocol_rows(c);
  for (const Row& r : abort_rows()) rows.push_back(r);
  for (const Row& r : absorbing_rows()) rows.push_back(r);
  return rows;
}

std::optional<Row> find_legal(S s, E e, const ReceiverChecks& c) {
  for (const Row& r : legal_rows(c))
    if (r.state == s && r.event == e) return r;
  return std::nullopt;
}

void expect_transition(S s, E e, const ReceiverChecks& c, S next, Actions actions) {
  SCOPED_TRACE(trace(s, e, c));
  EXPECT_EQ(describe(receiver_next(s, e, c)), describe(next, actions, false));
}

// The same whatever the findings.
void expect_transition(S s, E e, S next, Actions actions) {
  for (const ReceiverChecks& c : kChecks) expect_transition(s, e, c, next, actions);
}

void expect_illegal(S s, E e, const ReceiverChecks& c) {
  SCOPED_TRACE(trace(s, e, c));
  const Actions abort{A::SendError, A::DiscardFile, A::Disconnect};
  EXPECT_EQ(describe(receiver_next(s, e, c)), describe(S::Closing, abort, true));
}

// ---- The table itself ----

TEST(ReceiverMachine, TableHasNoDuplicatePairs) {
  for (const ReceiverChecks& c : kChecks) {
    std::set<std::pair<S, E>> seen;
    for (const Row& r : legal_rows(c))
      EXPECT_TRUE(seen.insert({r.state, r.event}).second) << trace(r.state, r.event, c);
  }
}

TEST(ReceiverMachine, EveryLegalPairHasItsExactTransition) {
  for (const ReceiverChecks& c : kChecks)
    for (const Row& r : legal_rows(c)) expect_transition(r.state, r.event, c, r.next, r.actions);
}

TEST(ReceiverMachine, EveryPairOutsideTheTableIsTheIllegalEventAbort) {
  for (const ReceiverChecks& c : kChecks) {
    std::size_t illegal = 0;
    for (S s : kAllStates) {
      for (E e : kAllEvents) {
        if (find_legal(s, e, c)) continue;
        ++illegal;
        expect_illegal(s, e, c);
      }
    }
    // 4 open states x 17 events, minus 7 protocol rows, the Open's (2 if accepted or
    // rejected, 1 to be proven), the Id's (2 if looked up) and 4 x 7 abort rows.
    const std::size_t open = c.open == OpenCheck::Accepted || c.open == OpenCheck::Rejected ? 2
                             : c.open == OpenCheck::NeedsProof                              ? 1
                                                                                            : 0;
    const std::size_t id = c.id == IdLookup::NotLookedUp ? 0 : 2;
    EXPECT_EQ(illegal, 4U * 17U - 7U - open - id - 4U * 7U) << trace(S::AwaitOpen, E::GotOpen, c);
  }
}

// An Open, a Proof or an Id the driver did not check came where it may not.
TEST(ReceiverMachine, AnUncheckedOpenProofOrIdIsIllegal) {
  for (S s : {S::AwaitOpen, S::Authenticating, S::InSession, S::AwaitId}) {
    expect_illegal(s, E::GotOpen, {});
    expect_illegal(s, E::GotProof, {});
    expect_illegal(s, E::GotId, {});
  }
  // After a good Proof the Open's remaining checks run authenticated: never "to be proven".
  expect_illegal(S::Authenticating, E::GotProof, {OpenCheck::NeedsProof});
}

// ---- The results of the entries' work ----

TEST(ReceiverMachine, EveryResultOfTheEntriesWorkHasItsExactTransition) {
  using R = WorkResult;
  const std::map<R, Actions> expected{
      {R::EntryTaken, {A::SendTake}},          {R::EntryResumed, {A::SendResume}},
      {R::EntryHave, {A::SendHave}},           {R::EntryHeld, {A::SendHolds}},
      {R::EntryRefused, {A::SendRefuse}},      {R::ChunkStored, {A::SendCredit, A::FinishEntries}},
      {R::EntrySettled, {A::SendFileVerdict}},
  };
  ASSERT_EQ(expected.size(), rdmax::test::kAllSessionResults.size());
  for (const auto& [result, actions] : expected)
    EXPECT_EQ(describe(session_result(result)), describe(S::InSession, actions, false))
        << to_string(result);
}

// ---- Paths end to end ----

// An event with the findings it carries, or (`result`) a result of the entries' work.
struct Step {
  std::optional<E> event;
  S next;
  Actions actions;
  ReceiverChecks checks = {};
  std::optional<WorkResult> result = std::nullopt;
};

Step result(WorkResult r, Actions actions) {
  return {std::nullopt, S::InSession, actions, {}, r};
}

// Feeds the steps in order from start, checking every transition; returns the end state.
S walk(S start, const std::vector<Step>& steps) {
  S s = start;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    SCOPED_TRACE("step " + std::to_string(i) + ": " +
                 (step.event ? trace(s, *step.event, step.checks) : to_string(*step.result)));
    const ReceiverTransition t =
        step.event ? receiver_next(s, *step.event, step.checks) : session_result(*step.result);
    EXPECT_EQ(describe(t), describe(step.next, step.actions, false));
    s = t.next;
  }
  return s;
}

using R = WorkResult;

// An Open accepted, one file offered, taken, its n chunks each stored and credited, its
// FileDone, its verdict: every entry settled.
std::vector<Step> one_file(std::size_t chunks) {
  std::vector<Step> steps{{E::GotOpen, S::InSession, {A::SendAccept}, {OpenCheck::Accepted}},
                          {E::GotOffer, S::InSession, {A::CheckOffer}},
                          result(R::EntryTaken, {A::SendTake})};
  for (std::size_t i = 0; i < chunks; ++i) {
    steps.push_back({E::GotChunk, S::InSession, {A::StoreChunk}});
    steps.push_back(result(R::ChunkStored, {A::SendCredit, A::FinishEntries}));
  }
  steps.push_back({E::GotFileDone, S::InSession, {A::FinishEntries}});
  steps.push_back(result(R::EntrySettled, {A::SendFileVerdict}));
  return steps;
}

std::vector<Step> then(std::vector<Step> steps, const std::vector<Step>& more) {
  steps.insert(steps.end(), more.begin(), more.end());
  return steps;
}

const std::vector<Step> kEnd{{E::Disconnected, S::Closed, {A::DiscardFile, A::Release}}};

TEST(ReceiverMachine, AFileThenAKnownIdGetsTheSecret) {
  const auto steps = then(
      one_file(5), {{E::GotId, S::Closing, {A::SendSecret, A::Disconnect}, {.id = IdLookup::Known}},
                    {E::Disconnected, S::Closed, {A::Release}}});
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closed);
}

TEST(ReceiverMachine, UnknownIdsMayRetryUntilTheAttemptsRunOut) {
  const auto steps =
      then(one_file(1), {{E::GotId, S::AwaitId, {A::SendDenied}, {.id = IdLookup::Unknown}},
                         {E::GotId, S::AwaitId, {A::SendDenied}, {.id = IdLookup::Unknown}},
                         {E::GotId,
                          S::Closing,
                          {A::SendDenied, A::Disconnect},
                          {.id = IdLookup::AttemptsExhausted}}});
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closing);
}

TEST(ReceiverMachine, ByeAfterTheEntriesCloses) {
  const auto steps = then(one_file(0), {{E::GotBye, S::Closing, {A::DiscardFile, A::Disconnect}},
                                        {E::Timeout, S::Closed, {A::Release}}});
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closed);
}

TEST(ReceiverMachine, EntriesComeAndGoInOneSessionState) {
  // A directory settled, a file refused, one resumed, one in place already: the
  // connection never leaves InSession for them.
  const auto steps = then(then(one_file(0), {{E::GotOffer, S::InSession, {A::CheckOffer}},
                                             result(R::EntrySettled, {A::SendFileVerdict}),
                                             {E::GotOffer, S::InSession, {A::CheckOffer}},
                                             result(R::EntryRefused, {A::SendRefuse}),
                                             {E::GotOffer, S::InSession, {A::CheckOffer}},
                                             result(R::EntryResumed, {A::SendResume}),
                                             {E::GotOffer, S::InSession, {A::CheckOffer}},
                                             result(R::EntryHave, {A::SendHave})}),
                          kEnd);
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closed);
}

TEST(ReceiverMachine, ARejectedOpenSendsRejectThenCloses) {
  const std::vector<Step> steps{{E::GotOpen,
                                 S::Closing,
                                 {A::SendReject, A::DiscardFile, A::Disconnect},
                                 {OpenCheck::Rejected}},
                                {E::Disconnected, S::Closed, {A::Release}}};
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closed);
}

TEST(ReceiverMachine, AKeyIsChallengedAndItsProofAdmitsOrRefuses) {
  const Step challenged{E::GotOpen, S::Authenticating, {A::SendChallenge}, {OpenCheck::NeedsProof}};
  EXPECT_EQ(walk(S::AwaitOpen,
                 {challenged, {E::GotProof, S::InSession, {A::SendAccept}, {OpenCheck::Accepted}}}),
            S::InSession);
  const std::vector<Step> steps{challenged,
                                {E::GotProof,
                                 S::Closing,
                                 {A::SendReject, A::DiscardFile, A::Disconnect},
                                 {OpenCheck::Rejected}}};
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closing);
}

TEST(ReceiverMachine, ClosingEndsOnTimeoutIfThePeerNeverDisconnects) {
  const auto steps = then(one_file(1), {{E::GotBye, S::Closing, {A::DiscardFile, A::Disconnect}},
                                        {E::Timeout, S::Closed, {A::Release}}});
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closed);
}

// ---- Common aborts from every state ----

TEST(ReceiverMachine, EveryWayOutOfAnOpenStateLeavesNoUncommittedFile) {
  // Every abort, and every end before the entries are all settled, discards what is not
  // committed: a rejected Open, before any file exists, asks too (discarding nothing is
  // harmless).
  for (const ReceiverChecks& c : kChecks)
    for (S s : kAllStates) {
      if (!open_state(s)) continue;
      for (E e : kAllEvents) {
        const ReceiverTransition t = receiver_next(s, e, c);
        const bool after_the_entries = s == S::AwaitId || e == E::GotId;
        const bool abort = t.illegal || e >= E::ProtocolViolation || e == E::GotError;
        if ((t.next == S::Closing || t.next == S::Closed) && (abort || !after_the_entries)) {
          EXPECT_TRUE(t.actions.contains(A::DiscardFile)) << trace(s, e, c);
        }
      }
    }
}

TEST(ReceiverMachine, OwnAbortsSendErrorFirst) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    for (E e : {E::ProtocolViolation, E::LocalFailure, E::Timeout, E::ShuttingDown})
      EXPECT_EQ(*receiver_next(s, e).actions.begin(), A::SendError) << to_string(s);
    EXPECT_FALSE(receiver_next(s, E::GotError).actions.contains(A::SendError)) << to_string(s);
  }
}

// ---- Closing and Closed ----

TEST(ReceiverMachine, ClosingAbsorbsLateEvents) {
  for (E e : kAllEvents) {
    const bool ends =
        e == E::Disconnected || e == E::TransportFailed || e == E::Timeout || e == E::LocalFailure;
    expect_transition(S::Closing, e, ends ? S::Closed : S::Closing,
                      ends ? Actions{A::Release} : Actions{});
  }
}

TEST(ReceiverMachine, ClosedAbsorbsEverything) {
  for (E e : kAllEvents) expect_transition(S::Closed, e, S::Closed, {});
}

TEST(ReceiverMachine, EveryOpenStateCanBeLeft) {
  for (S s : kAllStates) {
    if (s == S::Closed) continue;
    bool leaves = false;
    for (const ReceiverChecks& c : kChecks)
      for (E e : kAllEvents) leaves = leaves || receiver_next(s, e, c).next != s;
    EXPECT_TRUE(leaves) << to_string(s);
  }
}

TEST(ReceiverMachine, IllegalEventsOnlyComeFromOpenStates) {
  for (S s : {S::Closing, S::Closed})
    for (E e : kAllEvents) EXPECT_EQ(receiver_next(s, e).illegal, false);
}

// ---- Names ----

TEST(ReceiverMachine, EveryEnumeratorHasADistinctName) {
  rdmax::test::expect_distinct_names(kAllStates);
  rdmax::test::expect_distinct_names(kAllEvents);
  rdmax::test::expect_distinct_names(kAllActions);
  rdmax::test::expect_distinct_names(rdmax::test::kAllOpenChecks);
  rdmax::test::expect_distinct_names(rdmax::test::kAllIdLookups);
  rdmax::test::expect_distinct_names(rdmax::test::kAllSessionResults);
}

TEST(ReceiverMachine, OutOfRangeValuesAreNamedQuestionMark) {
  EXPECT_STREQ(to_string(static_cast<S>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<E>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<A>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<OpenCheck>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<IdLookup>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<WorkResult>(200)), "?");
}

}  // namespace
