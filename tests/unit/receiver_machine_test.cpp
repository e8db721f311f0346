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
// table of legal transitions written out below, or is the named IllegalEvent abort.
// docs/PROTOCOL.md section 4 shows the same table; the two must agree.

namespace {

using namespace rdmax::proto;
using S = ReceiverState;
using E = ReceiverEvent;
using A = ReceiverAction;
using Actions = ActionList<A>;

constexpr const auto& kAllStates = rdmax::test::kAllReceiverStates;

constexpr const auto& kAllEvents = rdmax::test::kAllReceiverEvents;

constexpr std::array kAllActions{A::CheckHello,      A::SendAccept, A::SendReject, A::StoreChunk,
                                 A::SendCredit,      A::AwaitDrain, A::Verify,     A::SendVerdict,
                                 A::LookupId,        A::SendSecret, A::SendDenied, A::SendError,
                                 A::DiscardFile,     A::Disconnect, A::Release,    A::CheckOpen,
                                 A::CheckOffer,      A::SendTake,   A::SendRefuse, A::FinishEntries,
                                 A::SendFileVerdict, A::SendResume, A::SendHave};

// The lists above name every enumerator: the enums are dense from 0, so the last one's value
// plus one is the count. A new enumerator breaks these until it is added to its list.
static_assert(static_cast<std::size_t>(A::SendHave) + 1 == kAllActions.size());

// Before the verdict is sent a temporary file may exist and must be removed on any abort.
bool before_verdict(S s) {
  return s == S::AwaitHello || s == S::CheckingHello || s == S::Receiving || s == S::Draining ||
         s == S::Verifying || s == S::CheckingOpen || s == S::InSession;
}

bool open_state(S s) {
  return s != S::Closing && s != S::Closed;
}

// "Closing [SendError, Disconnect] IllegalEvent": one string, so a failure shows all of it.
std::string describe(S next, const Actions& actions, ReceiverError error) {
  std::string text = to_string(next);
  text += " [";
  for (std::size_t i = 0; A a : actions) text += (i++ == 0 ? "" : ", ") + std::string(to_string(a));
  text += "]";
  if (error == ReceiverError::IllegalEvent) text += " IllegalEvent";
  return text;
}

std::string describe(const ReceiverTransition& t) {
  return describe(t.next, t.actions, t.error);
}

struct Row {
  S state;
  E event;
  S next;
  Actions actions;
};

// The protocol's own transitions: messages and the driver's results.
const std::vector<Row> kProtocolRows{
    {S::AwaitHello, E::GotHello, S::CheckingHello, {A::CheckHello}},
    {S::CheckingHello, E::HelloAccepted, S::Receiving, {A::SendAccept}},
    {S::CheckingHello,
     E::HelloRejected,
     S::Closing,
     {A::SendReject, A::DiscardFile, A::Disconnect}},
    {S::Receiving, E::GotChunk, S::Receiving, {A::StoreChunk}},
    {S::Receiving, E::ChunkStored, S::Receiving, {A::SendCredit}},
    {S::Receiving, E::GotDone, S::Draining, {A::AwaitDrain}},
    {S::Receiving, E::VerifiedBad, S::Closing, {A::SendVerdict, A::DiscardFile, A::Disconnect}},
    {S::Draining, E::ChunkStored, S::Draining, {A::AwaitDrain}},
    {S::Draining, E::Drained, S::Verifying, {A::Verify}},
    {S::Draining, E::VerifiedBad, S::Closing, {A::SendVerdict, A::DiscardFile, A::Disconnect}},
    {S::Verifying, E::VerifiedGood, S::AwaitId, {A::SendVerdict}},
    {S::Verifying, E::VerifiedBad, S::Closing, {A::SendVerdict, A::DiscardFile, A::Disconnect}},
    {S::AwaitId, E::GotId, S::CheckingId, {A::LookupId}},
    {S::AwaitId, E::GotBye, S::Closing, {A::Disconnect}},
    {S::CheckingId, E::IdKnown, S::Closing, {A::SendSecret, A::Disconnect}},
    {S::CheckingId, E::IdUnknown, S::AwaitId, {A::SendDenied}},
    {S::CheckingId, E::IdAttemptsExhausted, S::Closing, {A::SendDenied, A::Disconnect}},
    // Version-2 sessions (docs/PROTOCOL.md 7.5).
    {S::AwaitHello, E::GotOpen, S::CheckingOpen, {A::CheckOpen}},
    {S::CheckingOpen, E::OpenAccepted, S::InSession, {A::SendAccept}},
    {S::CheckingOpen, E::OpenRejected, S::Closing, {A::SendReject, A::DiscardFile, A::Disconnect}},
    {S::InSession, E::GotOffer, S::InSession, {A::CheckOffer}},
    {S::InSession, E::EntryTaken, S::InSession, {A::SendTake}},
    {S::InSession, E::EntryRefused, S::InSession, {A::SendRefuse}},
    {S::InSession, E::GotChunk, S::InSession, {A::StoreChunk}},
    {S::InSession, E::ChunkStored, S::InSession, {A::SendCredit, A::FinishEntries}},
    {S::InSession, E::GotFileDone, S::InSession, {A::FinishEntries}},
    {S::InSession, E::EntrySettled, S::InSession, {A::SendFileVerdict}},
    // Resume (docs/PROTOCOL.md 7.6).
    {S::InSession, E::EntryResumed, S::InSession, {A::SendResume}},
    {S::InSession, E::EntryHave, S::InSession, {A::SendHave}},
    {S::CheckingHello, E::HelloHave, S::AwaitId, {A::SendHave}},
    {S::InSession, E::GotId, S::CheckingId, {A::LookupId}},
    {S::InSession, E::GotBye, S::Closing, {A::DiscardFile, A::Disconnect}},
};

// The common aborts, legal in every open state; DiscardFile only before the verdict.
std::vector<Row> abort_rows() {
  std::vector<Row> rows;
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    const bool discard = before_verdict(s);
    const Actions gone = discard ? Actions{A::DiscardFile, A::Release} : Actions{A::Release};
    const Actions peer_error =
        discard ? Actions{A::DiscardFile, A::Disconnect} : Actions{A::Disconnect};
    const Actions our_error = discard ? Actions{A::SendError, A::DiscardFile, A::Disconnect}
                                      : Actions{A::SendError, A::Disconnect};
    rows.push_back({s, E::Disconnected, S::Closed, gone});
    rows.push_back({s, E::TransportFailed, S::Closed, gone});
    rows.push_back({s, E::GotError, S::Closing, peer_error});
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
  EXPECT_EQ(describe(receiver_next(s, e)), describe(next, actions, ReceiverError::None));
}

void expect_illegal(S s, E e) {
  SCOPED_TRACE(std::string(to_string(s)) + " + " + to_string(e));
  const Actions abort = before_verdict(s) ? Actions{A::SendError, A::DiscardFile, A::Disconnect}
                                          : Actions{A::SendError, A::Disconnect};
  EXPECT_EQ(describe(receiver_next(s, e)),
            describe(S::Closing, abort, ReceiverError::IllegalEvent));
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
  // 9 open states x 33 events, minus 32 protocol rows (18 of one file, 14 of sessions) and
  // 9 x 7 abort rows.
  EXPECT_EQ(illegal, 9U * 33U - 32U - 9U * 7U);
}

// ---- Each protocol transition, named ----

TEST(ReceiverMachine, HelloIsChecked) {
  expect_transition(S::AwaitHello, E::GotHello, S::CheckingHello, {A::CheckHello});
}

// PROTOCOL.md 7.5: a sender waits for the Accept before its first Offer; one that arrives
// while the receiver still checks the Open is answered Error(ProtocolViolation).
TEST(ReceiverMachine, AnOfferBeforeTheAcceptIsIllegal) {
  expect_illegal(S::CheckingOpen, E::GotOffer);
}

TEST(ReceiverMachine, AcceptedHelloStartsReceiving) {
  expect_transition(S::CheckingHello, E::HelloAccepted, S::Receiving, {A::SendAccept});
}

TEST(ReceiverMachine, RejectedHelloSendsRejectThenCloses) {
  expect_transition(S::CheckingHello, E::HelloRejected, S::Closing,
                    {A::SendReject, A::DiscardFile, A::Disconnect});
}

TEST(ReceiverMachine, ChunkIsStoredThenCredited) {
  expect_transition(S::Receiving, E::GotChunk, S::Receiving, {A::StoreChunk});
  expect_transition(S::Receiving, E::ChunkStored, S::Receiving, {A::SendCredit});
}

TEST(ReceiverMachine, DoneWaitsForTheStoresThenVerifies) {
  expect_transition(S::Receiving, E::GotDone, S::Draining, {A::AwaitDrain});
  expect_transition(S::Draining, E::Drained, S::Verifying, {A::Verify});
}

TEST(ReceiverMachine, ChunkStoredWhileDrainingIsNotCreditedBack) {
  // The sender has sent everything: its slots are not handed back, only counted down.
  expect_transition(S::Draining, E::ChunkStored, S::Draining, {A::AwaitDrain});
}

TEST(ReceiverMachine, StorageFailureWhileDrainingSendsVerdictAndDiscards) {
  expect_transition(S::Draining, E::VerifiedBad, S::Closing,
                    {A::SendVerdict, A::DiscardFile, A::Disconnect});
}

TEST(ReceiverMachine, DrainedOutsideDrainingIsADriverError) {
  for (S s :
       {S::AwaitHello, S::CheckingHello, S::Receiving, S::Verifying, S::AwaitId, S::CheckingId})
    expect_illegal(s, E::Drained);
}

TEST(ReceiverMachine, ChunkOrSecondDoneWhileDrainingIsAViolation) {
  expect_illegal(S::Draining, E::GotChunk);
  expect_illegal(S::Draining, E::GotDone);
}

TEST(ReceiverMachine, VerificationNeverStartsBeforeTheDrain) {
  // Only Drained leads to Verify: the hash is finished once every chunk is in it.
  for (S s : kAllStates) {
    for (E e : kAllEvents) {
      if (receiver_next(s, e).actions.contains(A::Verify)) {
        EXPECT_TRUE(s == S::Draining && e == E::Drained) << to_string(s) << " + " << to_string(e);
      }
    }
  }
}

TEST(ReceiverMachine, StorageFailureMidTransferSendsVerdictAndDiscards) {
  expect_transition(S::Receiving, E::VerifiedBad, S::Closing,
                    {A::SendVerdict, A::DiscardFile, A::Disconnect});
}

TEST(ReceiverMachine, GoodVerdictWaitsForId) {
  expect_transition(S::Verifying, E::VerifiedGood, S::AwaitId, {A::SendVerdict});
}

TEST(ReceiverMachine, BadVerdictDiscardsAndCloses) {
  expect_transition(S::Verifying, E::VerifiedBad, S::Closing,
                    {A::SendVerdict, A::DiscardFile, A::Disconnect});
}

TEST(ReceiverMachine, IdIsLookedUp) {
  expect_transition(S::AwaitId, E::GotId, S::CheckingId, {A::LookupId});
}

TEST(ReceiverMachine, ByeCloses) {
  expect_transition(S::AwaitId, E::GotBye, S::Closing, {A::Disconnect});
}

TEST(ReceiverMachine, KnownIdGetsTheSecret) {
  expect_transition(S::CheckingId, E::IdKnown, S::Closing, {A::SendSecret, A::Disconnect});
}

TEST(ReceiverMachine, UnknownIdIsDeniedAndMayRetry) {
  expect_transition(S::CheckingId, E::IdUnknown, S::AwaitId, {A::SendDenied});
}

TEST(ReceiverMachine, LastUnknownIdIsDeniedThenCloses) {
  expect_transition(S::CheckingId, E::IdAttemptsExhausted, S::Closing,
                    {A::SendDenied, A::Disconnect});
}

// ---- Happy paths, end to end ----

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
    EXPECT_EQ(describe(t), describe(step.next, step.actions, ReceiverError::None));
    s = t.next;
  }
  return s;
}

// Hello accepted, n chunks each stored and credited, Done, nothing left to drain, good
// verdict.
std::vector<Step> transfer(std::size_t chunks) {
  std::vector<Step> steps{{E::GotHello, S::CheckingHello, {A::CheckHello}},
                          {E::HelloAccepted, S::Receiving, {A::SendAccept}}};
  for (std::size_t i = 0; i < chunks; ++i) {
    steps.push_back({E::GotChunk, S::Receiving, {A::StoreChunk}});
    steps.push_back({E::ChunkStored, S::Receiving, {A::SendCredit}});
  }
  steps.push_back({E::GotDone, S::Draining, {A::AwaitDrain}});
  steps.push_back({E::Drained, S::Verifying, {A::Verify}});
  steps.push_back({E::VerifiedGood, S::AwaitId, {A::SendVerdict}});
  return steps;
}

std::vector<Step> then(std::vector<Step> steps, const std::vector<Step>& more) {
  steps.insert(steps.end(), more.begin(), more.end());
  return steps;
}

const std::vector<Step> kEnd{{E::Disconnected, S::Closed, {A::Release}}};

TEST(ReceiverMachine, HappyPathWithKnownId) {
  const auto steps = then(transfer(5), {{E::GotId, S::CheckingId, {A::LookupId}},
                                        {E::IdKnown, S::Closing, {A::SendSecret, A::Disconnect}}});
  EXPECT_EQ(walk(S::AwaitHello, then(steps, kEnd)), S::Closed);
}

TEST(ReceiverMachine, HappyPathUnknownIdTwiceThenKnown) {
  const auto steps = then(transfer(3), {{E::GotId, S::CheckingId, {A::LookupId}},
                                        {E::IdUnknown, S::AwaitId, {A::SendDenied}},
                                        {E::GotId, S::CheckingId, {A::LookupId}},
                                        {E::IdUnknown, S::AwaitId, {A::SendDenied}},
                                        {E::GotId, S::CheckingId, {A::LookupId}},
                                        {E::IdKnown, S::Closing, {A::SendSecret, A::Disconnect}}});
  EXPECT_EQ(walk(S::AwaitHello, then(steps, kEnd)), S::Closed);
}

TEST(ReceiverMachine, IdAttemptsExhausted) {
  const auto steps =
      then(transfer(2), {{E::GotId, S::CheckingId, {A::LookupId}},
                         {E::IdUnknown, S::AwaitId, {A::SendDenied}},
                         {E::GotId, S::CheckingId, {A::LookupId}},
                         {E::IdUnknown, S::AwaitId, {A::SendDenied}},
                         {E::GotId, S::CheckingId, {A::LookupId}},
                         {E::IdAttemptsExhausted, S::Closing, {A::SendDenied, A::Disconnect}}});
  EXPECT_EQ(walk(S::AwaitHello, then(steps, kEnd)), S::Closed);
}

TEST(ReceiverMachine, HappyPathWithBye) {
  const auto steps = then(transfer(1), {{E::GotBye, S::Closing, {A::Disconnect}}});
  EXPECT_EQ(walk(S::AwaitHello, then(steps, kEnd)), S::Closed);
}

TEST(ReceiverMachine, EmptyFileHasNoChunks) {
  const auto steps = then(transfer(0), {{E::GotBye, S::Closing, {A::Disconnect}}});
  EXPECT_EQ(walk(S::AwaitHello, then(steps, kEnd)), S::Closed);
}

// Chunks stored by a worker: several are queued before the first is stored, and Done
// overtakes the last two. Only the chunks stored before Done are credited back.
TEST(ReceiverMachine, DoneOvertakesQueuedChunksWhichDrainBeforeTheVerdict) {
  const std::vector<Step> steps{
      {E::GotHello, S::CheckingHello, {A::CheckHello}},
      {E::HelloAccepted, S::Receiving, {A::SendAccept}},
      {E::GotChunk, S::Receiving, {A::StoreChunk}},
      {E::GotChunk, S::Receiving, {A::StoreChunk}},
      {E::ChunkStored, S::Receiving, {A::SendCredit}},
      {E::GotChunk, S::Receiving, {A::StoreChunk}},
      {E::GotDone, S::Draining, {A::AwaitDrain}},
      {E::ChunkStored, S::Draining, {A::AwaitDrain}},
      {E::ChunkStored, S::Draining, {A::AwaitDrain}},
      {E::Drained, S::Verifying, {A::Verify}},
      {E::VerifiedGood, S::AwaitId, {A::SendVerdict}},
      {E::GotBye, S::Closing, {A::Disconnect}},
      {E::Disconnected, S::Closed, {A::Release}},
  };
  EXPECT_EQ(walk(S::AwaitHello, steps), S::Closed);
}

TEST(ReceiverMachine, WriteFailureOfAQueuedChunkAfterDoneGivesAStorageVerdict) {
  const std::vector<Step> steps{
      {E::GotHello, S::CheckingHello, {A::CheckHello}},
      {E::HelloAccepted, S::Receiving, {A::SendAccept}},
      {E::GotChunk, S::Receiving, {A::StoreChunk}},
      {E::GotDone, S::Draining, {A::AwaitDrain}},
      {E::VerifiedBad, S::Closing, {A::SendVerdict, A::DiscardFile, A::Disconnect}},
      // A result the worker had finished before it was stopped changes nothing.
      {E::ChunkStored, S::Closing, {}},
      {E::Disconnected, S::Closed, {A::Release}},
  };
  EXPECT_EQ(walk(S::AwaitHello, steps), S::Closed);
}

TEST(ReceiverMachine, PeerLostWhileDrainingDiscardsTheFile) {
  expect_transition(S::Draining, E::Disconnected, S::Closed, {A::DiscardFile, A::Release});
  expect_transition(S::Draining, E::ShuttingDown, S::Closing,
                    {A::SendError, A::DiscardFile, A::Disconnect});
  expect_transition(S::Draining, E::Timeout, S::Closing,
                    {A::SendError, A::DiscardFile, A::Disconnect});
}

TEST(ReceiverMachine, ClosingEndsOnTimeoutIfThePeerNeverDisconnects) {
  const auto steps = then(transfer(1), {{E::GotBye, S::Closing, {A::Disconnect}},
                                        {E::Timeout, S::Closed, {A::Release}}});
  EXPECT_EQ(walk(S::AwaitHello, steps), S::Closed);
}

// ---- Common aborts from every state ----

TEST(ReceiverMachine, TransportLossFromEveryOpenStateReleasesAndDiscardsBeforeVerdict) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    const Actions expected =
        before_verdict(s) ? Actions{A::DiscardFile, A::Release} : Actions{A::Release};
    expect_transition(s, E::Disconnected, S::Closed, expected);
    expect_transition(s, E::TransportFailed, S::Closed, expected);
  }
}

TEST(ReceiverMachine, PeerErrorFromEveryOpenStateDisconnectsWithoutAnswering) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    expect_transition(
        s, E::GotError, S::Closing,
        before_verdict(s) ? Actions{A::DiscardFile, A::Disconnect} : Actions{A::Disconnect});
  }
}

TEST(ReceiverMachine, OwnAbortsFromEveryOpenStateSendErrorFirst) {
  for (S s : kAllStates) {
    if (!open_state(s)) continue;
    const Actions expected = before_verdict(s)
                                 ? Actions{A::SendError, A::DiscardFile, A::Disconnect}
                                 : Actions{A::SendError, A::Disconnect};
    for (E e : {E::ProtocolViolation, E::LocalFailure, E::Timeout, E::ShuttingDown})
      expect_transition(s, e, S::Closing, expected);
  }
}

TEST(ReceiverMachine, NoTransitionOutOfAnOpenStateLeavesAnUncommittedFile) {
  // Every way out before the verdict removes the temporary (a reject, before any file
  // exists, asks too: discarding nothing is harmless).
  for (S s : kAllStates) {
    if (!before_verdict(s)) continue;
    for (E e : kAllEvents) {
      const ReceiverTransition t = receiver_next(s, e);
      if (t.next == S::Closing || t.next == S::Closed) {
        EXPECT_TRUE(t.actions.contains(A::DiscardFile)) << to_string(s) << " + " << to_string(e);
      }
    }
  }
}

TEST(ReceiverMachine, AfterTheVerdictNothingDiscardsTheCommittedFile) {
  for (S s : kAllStates) {
    if (before_verdict(s)) continue;
    for (E e : kAllEvents)
      EXPECT_FALSE(receiver_next(s, e).actions.contains(A::DiscardFile))
          << to_string(s) << " + " << to_string(e);
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
    for (E e : kAllEvents) EXPECT_EQ(receiver_next(s, e).error, ReceiverError::None);
}

// ---- Names ----

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

TEST(ReceiverMachine, EveryEnumeratorHasADistinctName) {
  expect_distinct_names(kAllStates);
  expect_distinct_names(kAllEvents);
  expect_distinct_names(kAllActions);
}

TEST(ReceiverMachine, OutOfRangeValuesAreNamedQuestionMark) {
  EXPECT_STREQ(to_string(static_cast<S>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<E>(200)), "?");
  EXPECT_STREQ(to_string(static_cast<A>(200)), "?");
}

}  // namespace
