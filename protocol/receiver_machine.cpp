#include "protocol/receiver_machine.hpp"

#include <optional>

namespace rdmax::proto {
namespace {

using S = ReceiverState;
using E = ReceiverEvent;
using A = ReceiverAction;

// Events that end a connection the same way from every open state. Every way out discards
// what is not committed (DiscardFile keeps an interrupted file's bytes for a resume).
constexpr ReceiverTransition abort_from(E e) {
  switch (e) {
    case E::Disconnected:
      // The peer's DREQ (or the CM giving up): nothing is left to tell it.
      return {S::Closed, {A::DiscardFile, A::Release}};
    case E::TransportFailed:
      // The queue pair is broken (a completion error): nothing more can be sent on it,
      // but the peer still has to learn it, through rdma_cm's DREQ. Destroying an
      // established cm_id sends one DREQ and cancels its retries, so one lost packet
      // left the peer waiting for a disconnect that never came: disconnect, and wait for
      // it (or the close grace) in Closing like any other way out.
      return {S::Closing, {A::DiscardFile, A::Disconnect}};
    case E::GotError:
      return {S::Closing, {A::DiscardFile, A::Disconnect}};
    case E::ProtocolViolation:
    case E::LocalFailure:
    case E::Timeout:
    case E::ShuttingDown:
      return {S::Closing, {A::SendError, A::DiscardFile, A::Disconnect}};
    default:
      // Anything else out of place is a protocol error by the peer (or a driver bug):
      // named, never undefined.
      return {S::Closing, {A::SendError, A::DiscardFile, A::Disconnect}, true};
  }
}

constexpr ReceiverTransition next(S s, E e, const ReceiverChecks& checks) {
  // What an Open's checks (or a Proof's, then the Open's) decide. No file exists yet;
  // DiscardFile anyway: every way out before the verdicts discards, so none can leave a
  // temporary behind.
  const auto admission = [&]() -> std::optional<ReceiverTransition> {
    if (checks.open == OpenCheck::Accepted)
      return ReceiverTransition{S::InSession, {A::SendAccept}};
    if (checks.open == OpenCheck::Rejected)
      return ReceiverTransition{S::Closing, {A::SendReject, A::DiscardFile, A::Disconnect}};
    return std::nullopt;
  };
  // The answer to an id, after the entries (in InSession) or after a denial (in AwaitId).
  const auto id_answer = [&]() -> std::optional<ReceiverTransition> {
    if (checks.id == IdLookup::Known)
      return ReceiverTransition{S::Closing, {A::SendSecret, A::Disconnect}};
    if (checks.id == IdLookup::Unknown) return ReceiverTransition{S::AwaitId, {A::SendDenied}};
    if (checks.id == IdLookup::AttemptsExhausted)
      return ReceiverTransition{S::Closing, {A::SendDenied, A::Disconnect}};
    return std::nullopt;
  };
  switch (s) {
    case S::AwaitOpen:
      if (e == E::GotOpen && checks.open == OpenCheck::NeedsProof)
        return {S::Authenticating, {A::SendChallenge}};
      if (e == E::GotOpen)
        if (auto t = admission()) return *t;
      break;
    case S::Authenticating:  // the Proof, checked, then the rest of the Open's checks
      if (e == E::GotProof)
        if (auto t = admission()) return *t;
      break;
    case S::InSession:
      if (e == E::GotOffer) return {S::InSession, {A::CheckOffer}};
      if (e == E::GotContinue) return {S::InSession, {A::CheckContinue}};
      if (e == E::GotFileAbort) return {S::InSession, {A::AbandonEntry, A::FinishEntries}};
      if (e == E::GotJoin) return {S::InSession, {A::CheckJoin}};
      if (e == E::GotChunk) return {S::InSession, {A::StoreChunk}};
      if (e == E::GotFileDone) return {S::InSession, {A::TakeFileDone, A::FinishEntries}};
      // An Id or a Bye ends the session once every entry is offered and settled, an Id only
      // after a session of good entries (it asks for the secret); earlier, a protocol
      // violation (below).
      if (e == E::GotId && checks.entries == SessionEnd::Settled)
        if (auto t = id_answer()) return *t;
      if (e == E::GotBye &&
          (checks.entries == SessionEnd::Settled || checks.entries == SessionEnd::Failed))
        return {S::Closing, {A::DiscardFile, A::Disconnect}};
      break;
    case S::AwaitId:
      if (e == E::GotId)
        if (auto t = id_answer()) return *t;
      if (e == E::GotBye) return {S::Closing, {A::Disconnect}};
      break;
    case S::Closing:
      // Already on the way out: late messages and timers change nothing but the end.
      // A failure of our own on the way out (a post on a full send queue) skipped the rest
      // of its step: end here (Release also discards an uncommitted temporary).
      if (e == E::Disconnected || e == E::TransportFailed || e == E::Timeout ||
          e == E::LocalFailure)
        return {S::Closed, {A::Release}};
      return {S::Closing, {}};
    case S::Closed:
      return {S::Closed, {}};
  }
  return abort_from(e);
}

constexpr ReceiverTransition result_next(WorkResult r) {
  using R = WorkResult;
  switch (r) {
    case R::EntryTaken:
      return {S::InSession, {A::SendTake}};
    case R::EntryResumed:
      return {S::InSession, {A::SendResume}};
    case R::EntryHave:
      return {S::InSession, {A::SendHave}};
    case R::EntryHeld:
      return {S::InSession, {A::SendHolds}};
    case R::EntryRefused:
      return {S::InSession, {A::SendRefuse}};
    case R::ChunkStored:
      return {S::InSession, {A::SendCredit, A::FinishEntries}};
    case R::EntrySettled:
      break;
  }
  return {S::InSession, {A::SendFileVerdict}};
}

// Every state and event, with every finding of the check that goes with the event (an Open's
// or a Proof's, an Id's): the others do not change the step. Few steps, so that a compiler's
// constant-evaluation limit is far (clang's is a million).
constexpr bool every_action_finds_its_data() {
  for (S s : enum_values<S>())
    for (E e : enum_values<E>()) {
      if (e == E::GotOpen || e == E::GotProof) {
        for (OpenCheck open : enum_values<OpenCheck>())
          if (!actions_find_their_data(next(s, e, {open, {}}), carried_by(e, open))) return false;
      } else if (e == E::GotId || e == E::GotBye) {
        for (IdLookup id : enum_values<IdLookup>())
          for (SessionEnd entries : enum_values<SessionEnd>())
            if (!actions_find_their_data(next(s, e, {{}, id, entries}), carried_by(e)))
              return false;
      } else if (!actions_find_their_data(next(s, e, {}), carried_by(e))) {
        return false;
      }
    }
  for (WorkResult r : enum_values<WorkResult>())
    if (!actions_find_their_data(result_next(r), carried_by(r))) return false;
  return true;
}
static_assert(every_action_finds_its_data(),
              "an action needs data its event does not carry (receiver_machine.hpp)");

}  // namespace

ReceiverTransition receiver_next(S s, E e, const ReceiverChecks& checks) {
  return next(s, e, checks);
}

bool receiver_checks(S s, E e, const ReceiverChecks& known) {
  const ReceiverTransition unchecked = next(s, e, known);
  for (OpenCheck open : enum_values<OpenCheck>())
    for (IdLookup id : enum_values<IdLookup>())
      if (next(s, e, {open, id, known.entries}) != unchecked) return true;
  return false;
}

ReceiverTransition session_result(S s, WorkResult r) {
  if (s != S::InSession) return {s, {}};
  return result_next(r);
}

bool receiver_owes_keepalive(S s) {
  return s == S::InSession;
}

}  // namespace rdmax::proto
