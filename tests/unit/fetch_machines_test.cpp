// A fetch before its session (protocol/fetch_machines.hpp): each side's way through, each
// way out, and, over every state and event, what no row may do.

#include <gtest/gtest.h>

#include "protocol/fetch_machines.hpp"

namespace rdmax::test {
namespace {

using namespace rdmax::proto;

// --- The server ---------------------------------------------------------------------------

using SS = ServeState;
using SE = ServeEvent;
using SA = ServeAction;

ServeTransition serve(SS s, SE e, ServeChecks checks = {}) {
  return serve_next(s, e, checks);
}

TEST(ServeMachine, AnOpenFetchGoesStraightToItsWantsAndIsServedOnceWalked) {
  auto t = serve(SS::AwaitFetch, SE::GotFetch, {.request = RequestCheck::Accepted});
  EXPECT_EQ(t.next, SS::AwaitWants);
  EXPECT_TRUE(t.actions.empty());
  t = serve(SS::AwaitWants, SE::GotWant, {.want = WantCheck::More});
  EXPECT_EQ(t.next, SS::AwaitWants);
  EXPECT_TRUE(t.actions.empty());
  t = serve(SS::AwaitWants, SE::GotWant, {.want = WantCheck::Last});
  EXPECT_EQ(t.next, SS::Walking);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::Walk}));
  t = serve(SS::Walking, SE::Walked, {.walk = WalkCheck::Share});
  EXPECT_EQ(t.next, SS::Serving);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::Serve}));
}

TEST(ServeMachine, AKeyedFetchIsChallengedAndProvenBeforeAnyWant) {
  auto t = serve(SS::AwaitFetch, SE::GotFetch, {.request = RequestCheck::NeedsProof});
  EXPECT_EQ(t.next, SS::Authenticating);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::SendChallenge}));
  t = serve(SS::Authenticating, SE::GotWant, {.want = WantCheck::Last});
  EXPECT_TRUE(t.illegal) << "a Want before the Proof";
  EXPECT_EQ(t.next, SS::Closing);
  t = serve(SS::Authenticating, SE::GotProof, {.request = RequestCheck::Accepted});
  EXPECT_EQ(t.next, SS::AwaitWants);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::SendProof}));
  t = serve(SS::Authenticating, SE::GotProof, {.request = RequestCheck::Rejected});
  EXPECT_EQ(t.next, SS::Closing);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::SendReject, SA::Disconnect}));
  EXPECT_FALSE(t.illegal);
}

TEST(ServeMachine, EachRefusalIsARejectAndAnEmptyShareABye) {
  const ActionList<SA> reject{SA::SendReject, SA::Disconnect};
  EXPECT_EQ(serve(SS::AwaitFetch, SE::GotFetch, {.request = RequestCheck::Rejected}).actions,
            reject);
  EXPECT_EQ(serve(SS::AwaitWants, SE::GotWant, {.want = WantCheck::Rejected}).actions, reject);
  EXPECT_EQ(serve(SS::Walking, SE::Walked, {.walk = WalkCheck::Rejected}).actions, reject);
  const auto t = serve(SS::Walking, SE::Walked, {.walk = WalkCheck::Empty});
  EXPECT_EQ(t.next, SS::Closing);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::SendBye, SA::Disconnect}));
}

TEST(ServeMachine, APushIsToldItReachedAServerOnlyAsItsFirstMessage) {
  auto t = serve(SS::AwaitFetch, SE::GotPush);
  EXPECT_FALSE(t.illegal);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::SendError, SA::Disconnect}));
  t = serve(SS::AwaitWants, SE::GotPush);
  EXPECT_TRUE(t.illegal);
  EXPECT_EQ(t.next, SS::Closing);
}

TEST(ServeMachine, AHandOverThatFailedEndsTheConnection) {
  const auto t = serve(SS::Serving, SE::LocalFailure);
  EXPECT_EQ(t.next, SS::Closing);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::SendError, SA::Disconnect}));
  EXPECT_EQ(fetch_next(FetchState::Receiving, FetchEvent::LocalFailure, {}).next,
            FetchState::Closing);
}

TEST(ServeMachine, AFetcherThatGoesAwayWhileItsRequestIsWalkedIsReleased) {
  auto t = serve(SS::Walking, SE::Disconnected);
  EXPECT_EQ(t.next, SS::Closed);
  EXPECT_EQ(t.actions, (ActionList<SA>{SA::Release}));
  t = serve(SS::Walking, SE::GotWant, {.want = WantCheck::More});
  EXPECT_TRUE(t.illegal) << "nothing comes from the fetcher until the answer";
}

TEST(ServeMachine, NoRowButTheWalksShareServesAndEveryIllegalOneSaysWhyAndCloses) {
  for (SS s : enum_values<SS>())
    for (SE e : enum_values<SE>())
      for (RequestCheck r : enum_values<RequestCheck>())
        for (WantCheck w : enum_values<WantCheck>())
          for (WalkCheck k : enum_values<WalkCheck>()) {
            const auto t = serve(s, e, {r, w, k});
            SCOPED_TRACE(std::string(to_string(s)) + " + " + to_string(e));
            if (t.next == SS::Serving && s != SS::Serving) {
              EXPECT_EQ(s, SS::Walking);
              EXPECT_EQ(e, SE::Walked);
              EXPECT_EQ(k, WalkCheck::Share);
            }
            if (t.actions.contains(SA::Walk)) {
              EXPECT_EQ(w, WantCheck::Last);
            }
            if (t.actions.contains(SA::SendProof)) {
              EXPECT_EQ(s, SS::Authenticating);
            }
            if (t.illegal) {
              EXPECT_EQ(t.next, SS::Closing);
              EXPECT_EQ(t.actions, (ActionList<SA>{SA::SendError, SA::Disconnect}));
            }
            if (s == SS::Closed) {
              EXPECT_EQ(t.next, SS::Closed);
            }
            if (s == SS::Closing) {
              EXPECT_TRUE(t.next == SS::Closing || t.next == SS::Closed);
            }
            if (t.next == SS::Closed && s != SS::Closed) {
              EXPECT_EQ(t.actions, (ActionList<SA>{SA::Release}));
            }
          }
}

// --- The fetcher --------------------------------------------------------------------------

using FS = FetchState;
using FE = FetchEvent;
using FA = FetchAction;
using O = SenderOutcome;

FetchTransition fetch(FS s, FE e, FetchContext context = {}) {
  return fetch_next(s, e, context);
}

TEST(FetchMachine, WithoutAKeyTheWantsFollowTheFetchAndTheOpenHandsOver) {
  auto t = fetch(FS::Connecting, FE::Established);
  EXPECT_EQ(t.next, FS::AwaitAnswer);
  EXPECT_EQ(t.actions, (ActionList<FA>{FA::SendFetch, FA::SendWants}));
  t = fetch(FS::AwaitAnswer, FE::GotWorking);
  EXPECT_EQ(t.next, FS::AwaitAnswer);
  t = fetch(FS::AwaitAnswer, FE::GotOpen);
  EXPECT_EQ(t.next, FS::Receiving);
  EXPECT_EQ(t.actions, (ActionList<FA>{FA::Receive}));
  EXPECT_FALSE(t.outcome) << "the session's end decides";
}

TEST(FetchMachine, WithAKeyNoWantGoesBeforeTheServerProvedItself) {
  auto t = fetch(FS::Connecting, FE::Established, {.keyed = true});
  EXPECT_EQ(t.next, FS::Proving);
  EXPECT_EQ(t.actions, (ActionList<FA>{FA::SendFetch}));
  t = fetch(FS::Proving, FE::GotChallenge, {.keyed = true});
  EXPECT_EQ(t.next, FS::AwaitProof);
  EXPECT_EQ(t.actions, (ActionList<FA>{FA::SendProof}));
  t = fetch(FS::AwaitProof, FE::GotProof, {.keyed = true, .proof = ProofCheck::Bad});
  EXPECT_EQ(t.next, FS::Closing);
  EXPECT_EQ(t.outcome, O::AuthFailed);
  EXPECT_FALSE(t.actions.contains(FA::SendWants));
  t = fetch(FS::AwaitProof, FE::GotProof, {.keyed = true, .proof = ProofCheck::Good});
  EXPECT_EQ(t.next, FS::AwaitAnswer);
  EXPECT_EQ(t.actions, (ActionList<FA>{FA::SendWants}));
  EXPECT_TRUE(fetch(FS::Proving, FE::GotOpen, {.keyed = true}).illegal);
}

TEST(FetchMachine, TheServersAnswersEndItWithTheirOutcomes) {
  EXPECT_EQ(fetch(FS::AwaitAnswer, FE::GotBye).outcome, O::Success);
  EXPECT_EQ(fetch(FS::AwaitAnswer, FE::GotReject).outcome, O::Rejected);
  EXPECT_EQ(fetch(FS::AwaitAnswer, FE::GotRejectAuth).outcome, O::AuthFailed);
  EXPECT_EQ(fetch(FS::Proving, FE::GotRejectAuth, {.keyed = true}).outcome, O::AuthFailed);
  EXPECT_EQ(fetch(FS::AwaitAnswer, FE::GotError).outcome, O::ReceiverFailed);
  EXPECT_EQ(fetch(FS::AwaitAnswer, FE::GotErrorGaveUp).outcome, O::ConnectionLost);
  EXPECT_EQ(fetch(FS::Connecting, FE::ConnectFailed).outcome, O::ConnectFailed);
  EXPECT_EQ(fetch(FS::Connecting, FE::Timeout).next, FS::Done) << "nobody to tell";
  EXPECT_EQ(fetch(FS::AwaitAnswer, FE::Timeout).actions,
            (ActionList<FA>{FA::SendError, FA::Disconnect}));
}

TEST(FetchMachine, NoRowButAnOpenHandsOverAndEveryOtherEndHasAnOutcome) {
  for (FS s : enum_values<FS>())
    for (FE e : enum_values<FE>())
      for (bool keyed : {false, true})
        for (ProofCheck proof : enum_values<ProofCheck>()) {
          const auto t = fetch(s, e, {keyed, proof});
          SCOPED_TRACE(std::string(to_string(s)) + " + " + to_string(e));
          if (t.next == FS::Receiving && s != FS::Receiving) {
            EXPECT_EQ(s, FS::AwaitAnswer);
            EXPECT_EQ(e, FE::GotOpen);
          }
          if (t.actions.contains(FA::SendWants)) {
            EXPECT_TRUE(!keyed || proof == ProofCheck::Good) << "Wants before the proofs";
          }
          // Leaving the states before the session decides the outcome (a Closing's end keeps it).
          const bool before = s != FS::Closing && s != FS::Done && s != FS::Receiving;
          if (before && (t.next == FS::Closing || t.next == FS::Done)) {
            EXPECT_TRUE(t.outcome);
          }
          if (s == FS::Done) {
            EXPECT_EQ(t.next, FS::Done);
          }
          if (t.next == FS::Done && s != FS::Done) {
            EXPECT_EQ(t.actions, (ActionList<FA>{FA::Finish}));
          }
        }
}

}  // namespace
}  // namespace rdmax::test
