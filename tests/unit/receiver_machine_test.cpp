#include "protocol/receiver_machine.hpp"

#include "machine_enums.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

// The receiver's machine, checked exhaustively: every (state, event) pair either matches the
// table of legal transitions written out below, or is the named illegal-event abort.
// docs/PROTOCOL.md section 4 shows the same table; the two must agree.

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

struct Row {
  S state;
  E event;
  S next;
  Actions actions;
};

// The protocol's own transitions: messages and the driver's results (docs/PROTOCOL.md 7.5).
const std::vector<Row> kProtocolRows{
    {S::AwaitOpen, E::OpenAccepted, S::InSession, {A::SendAccept}},
    {S::AwaitOpen, E::OpenRejected, S::Closing, {A::SendReject, A::DiscardFile, A::Disconnect}},
    // --senders (PROTOCOL.md 7.8): a claimed key is challenged; the Proof, checked, is an
    // OpenAccepted or an OpenRejected.
    {S::AwaitOpen, E::OpenNeedsProof, S::Authenticating, {A::SendChallenge}},
    {S::Authenticating, E::OpenAccepted, S::InSession, {A::SendAccept}},
    {S::Authenticating,
     E::OpenRejected,
     S::Closing,
     {A::SendReject, A::DiscardFile, A::Disconnect}},
    {S::InSession, E::GotOffer, S::InSession, {A::CheckOffer}},
    {S::InSession, E::EntryTaken, S::InSession, {A::SendTake}},
    {S::InSession, E::EntryResumed, S::InSession, {A::SendResume}},
    {S::InSession, E::EntryHave, S::InSession, {A::SendHave}},
    // The digest at the end (PROTOCOL.md 7.9).
    {S::InSession, E::EntryHeld, S::InSession, {A::SendHolds}},
    {S::InSession, E::GotContinue, S::InSession, {A::CheckContinue}},
    {S::InSession, E::GotFileAbort, S::InSession, {A::AbandonEntry, A::FinishEntries}},
    {S::InSession, E::EntryRefused, S::InSession, {A::SendRefuse}},
    {S::InSession, E::GotChunk, S::InSession, {A::StoreChunk}},
    {S::InSession, E::ChunkStored, S::InSession, {A::SendCredit, A::FinishEntries}},
    {S::InSession, E::GotFileDone, S::InSession, {A::FinishEntries}},
    {S::InSession, E::EntrySettled, S::InSession, {A::SendFileVerdict}},
    {S::InSession, E::IdKnown, S::Closing, {A::SendSecret, A::Disconnect}},
    {S::InSession, E::IdUnknown, S::AwaitId, {A::SendDenied}},
    {S::InSession, E::IdAttemptsExhausted, S::Closing, {A::SendDenied, A::Disconnect}},
    {S::InSession, E::GotBye, S::Closing, {A::DiscardFile, A::Disconnect}},
    {S::AwaitId, E::IdKnown, S::Closing, {A::SendSecret, A::Disconnect}},
    {S::AwaitId, E::IdUnknown, S::AwaitId, {A::SendDenied}},
    {S::AwaitId, E::IdAttemptsExhausted, S::Closing, {A::SendDenied, A::Disconnect}},
    {S::AwaitId, E::GotBye, S::Closing, {A::Disconnect}},
};

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

std::vector<Row> legal_rows() {
  std::vector<Row> rows = kProtocolRows;
  for (const Row& r : abort_rows()) rows.push_back(r);
  for (const Row& r : absorbing_rows()) rows.push_back(r);
  return rows;
}

std::optional<Row> find_legal(S s, E e) {
  for (const Row& r : legal_rows())
    if (r.state == s && r.event == e) return r;
  return std::nullopt;
}

void expect_transition(S s, E e, S next, Actions actions) {
  SCOPED_TRACE(std::string(to_string(s)) + " + " + to_string(e));
  EXPECT_EQ(describe(receiver_next(s, e)), describe(next, actions, false));
}

void expect_illegal(S s, E e) {
  SCOPED_TRACE(std::string(to_string(s)) + " + " + to_string(e));
  (void)s;
  const Actions abort{A::SendError, A::DiscardFile, A::Disconnect};
  EXPECT_EQ(describe(receiver_next(s, e)), describe(S::Closing, abort, true));
}

// ---- The table itself ----

TEST(ReceiverMachine, TableHasNoDuplicatePairs) {
  std::set<std::pair<S, E>> seen;
  for (const Row& r : legal_rows())
    EXPECT_TRUE(seen.insert({r.state, r.event}).second)
        << to_string(r.state) << " + " << to_string(r.event) << " listed twice";
}

TEST(ReceiverMachine, EveryLegalPairHasItsExactTransition) {
  for (const Row& r : legal_rows()) expect_transition(r.state, r.event, r.next, r.actions);
}

TEST(ReceiverMachine, EveryPairOutsideTheTableIsTheIllegalEventAbort) {
  std::size_t illegal = 0;
  for (S s : kAllStates) {
    for (E e : kAllEvents) {
      if (find_legal(s, e)) continue;
      ++illegal;
      expect_illegal(s, e);
    }
  }
  // 4 open states x 24 events, minus 22 protocol rows and 4 x 7 abort rows.
  EXPECT_EQ(illegal, 4U * 27U - 25U - 4U * 7U);
}

// ---- Paths end to end ----

struct Step {
  E event;
  S next;
  Actions actions;
};

// Feeds the events in order from start, checking every transition; returns the end state.
S walk(S start, const std::vector<Step>& steps) {
  S s = start;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    SCOPED_TRACE("step " + std::to_string(i) + ": " + to_string(s) + " + " + to_string(step.event));
    const ReceiverTransition t = receiver_next(s, step.event);
    EXPECT_EQ(describe(t), describe(step.next, step.actions, false));
    s = t.next;
  }
  return s;
}

// An Open accepted, one file offered, taken, its n chunks each stored and credited, its
// FileDone, its verdict: every entry settled.
std::vector<Step> one_file(std::size_t chunks) {
  std::vector<Step> steps{{E::OpenAccepted, S::InSession, {A::SendAccept}},
                          {E::GotOffer, S::InSession, {A::CheckOffer}},
                          {E::EntryTaken, S::InSession, {A::SendTake}}};
  for (std::size_t i = 0; i < chunks; ++i) {
    steps.push_back({E::GotChunk, S::InSession, {A::StoreChunk}});
    steps.push_back({E::ChunkStored, S::InSession, {A::SendCredit, A::FinishEntries}});
  }
  steps.push_back({E::GotFileDone, S::InSession, {A::FinishEntries}});
  steps.push_back({E::EntrySettled, S::InSession, {A::SendFileVerdict}});
  return steps;
}

std::vector<Step> then(std::vector<Step> steps, const std::vector<Step>& more) {
  steps.insert(steps.end(), more.begin(), more.end());
  return steps;
}

const std::vector<Step> kEnd{{E::Disconnected, S::Closed, {A::DiscardFile, A::Release}}};

TEST(ReceiverMachine, AFileThenAKnownIdGetsTheSecret) {
  const auto steps = then(one_file(5), {{E::IdKnown, S::Closing, {A::SendSecret, A::Disconnect}},
                                        {E::Disconnected, S::Closed, {A::Release}}});
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closed);
}

TEST(ReceiverMachine, UnknownIdsMayRetryUntilTheAttemptsRunOut) {
  const auto steps =
      then(one_file(1), {{E::IdUnknown, S::AwaitId, {A::SendDenied}},
                         {E::IdUnknown, S::AwaitId, {A::SendDenied}},
                         {E::IdAttemptsExhausted, S::Closing, {A::SendDenied, A::Disconnect}}});
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
                                             {E::EntrySettled, S::InSession, {A::SendFileVerdict}},
                                             {E::GotOffer, S::InSession, {A::CheckOffer}},
                                             {E::EntryRefused, S::InSession, {A::SendRefuse}},
                                             {E::GotOffer, S::InSession, {A::CheckOffer}},
                                             {E::EntryResumed, S::InSession, {A::SendResume}},
                                             {E::GotOffer, S::InSession, {A::CheckOffer}},
                                             {E::EntryHave, S::InSession, {A::SendHave}}}),
                          kEnd);
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closed);
}

TEST(ReceiverMachine, ARejectedOpenSendsRejectThenCloses) {
  const std::vector<Step> steps{
      {E::OpenRejected, S::Closing, {A::SendReject, A::DiscardFile, A::Disconnect}},
      {E::Disconnected, S::Closed, {A::Release}}};
  EXPECT_EQ(walk(S::AwaitOpen, steps), S::Closed);
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
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    for (E e : kAllEvents) {
      const ReceiverTransition t = receiver_next(s, e);
      const bool after_the_entries =
          s == S::AwaitId || e == E::IdKnown || e == E::IdAttemptsExhausted;
      const bool abort = t.illegal || e >= E::ProtocolViolation || e == E::GotError;
      if ((t.next == S::Closing || t.next == S::Closed) && (abort || !after_the_entries)) {
        EXPECT_TRUE(t.actions.contains(A::DiscardFile)) << to_string(s) << " + " << to_string(e);
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
    for (E e : kAllEvents) leaves = leaves || receiver_next(s, e).next != s;
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
}

TEST(ReceiverMachine, OutOfRangeValuesAreNamedQuestionMark) {
  EXPECT_STREQ(to_string(static_cast<S>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<E>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<A>(200)), "?");
}

}  // namespace
