#include "protocol/receiver_machine.hpp"

#include <optional>

namespace rdmax::proto {
namespace {

using S = ReceiverState;
using E = ReceiverEvent;
using A = ReceiverAction;

// Events that end a connection the same way from every open state. Every way out discards
// what is not committed (DiscardFile keeps an interrupted file's bytes for a resume).
ReceiverTransition abort_from(E e) {
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

}  // namespace

ReceiverTransition receiver_next(S s, E e) {
  // The answer to an id, after the entries (in InSession) or after a denial (in AwaitId).
  const auto id_answer = [&]() -> std::optional<ReceiverTransition> {
    if (e == E::IdKnown) return ReceiverTransition{S::Closing, {A::SendSecret, A::Disconnect}};
    if (e == E::IdUnknown) return ReceiverTransition{S::AwaitId, {A::SendDenied}};
    if (e == E::IdAttemptsExhausted)
      return ReceiverTransition{S::Closing, {A::SendDenied, A::Disconnect}};
    return std::nullopt;
  };
  switch (s) {
    case S::AwaitOpen:
      if (e == E::OpenAccepted) return {S::InSession, {A::SendAccept}};
      // No file exists yet; DiscardFile anyway: every way out before the verdicts discards,
      // so none can leave a temporary behind.
      if (e == E::OpenRejected) return {S::Closing, {A::SendReject, A::DiscardFile, A::Disconnect}};
      if (e == E::OpenNeedsProof) return {S::Authenticating, {A::SendChallenge}};
      break;
    case S::Authenticating:
      if (e == E::OpenAccepted) return {S::InSession, {A::SendAccept}};
      if (e == E::OpenRejected) return {S::Closing, {A::SendReject, A::DiscardFile, A::Disconnect}};
      break;
    case S::InSession:
      if (e == E::GotOffer) return {S::InSession, {A::CheckOffer}};
      if (e == E::EntryTaken) return {S::InSession, {A::SendTake}};
      if (e == E::EntryResumed) return {S::InSession, {A::SendResume}};
      if (e == E::EntryHave) return {S::InSession, {A::SendHave}};
      if (e == E::EntryHeld) return {S::InSession, {A::SendHolds}};
      if (e == E::GotContinue) return {S::InSession, {A::CheckContinue}};
      if (e == E::GotFileAbort) return {S::InSession, {A::AbandonEntry, A::FinishEntries}};
      if (e == E::EntryRefused) return {S::InSession, {A::SendRefuse}};
      if (e == E::GotChunk) return {S::InSession, {A::StoreChunk}};
      if (e == E::ChunkStored) return {S::InSession, {A::SendCredit, A::FinishEntries}};
      if (e == E::GotFileDone) return {S::InSession, {A::FinishEntries}};
      if (e == E::EntrySettled) return {S::InSession, {A::SendFileVerdict}};
      // The driver lets an Id or a Bye through only once every entry is settled (the
      // ledger's all_settled); earlier they are a ProtocolViolation.
      if (auto t = id_answer()) return *t;
      if (e == E::GotBye) return {S::Closing, {A::DiscardFile, A::Disconnect}};
      break;
    case S::AwaitId:
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

bool receiver_owes_keepalive(S s) {
  return s == S::InSession;
}

const char* to_string(ReceiverState s) {
  switch (s) {
    case S::AwaitOpen:
      return "AwaitOpen";
    case S::Authenticating:
      return "Authenticating";
    case S::InSession:
      return "InSession";
    case S::AwaitId:
      return "AwaitId";
    case S::Closing:
      return "Closing";
    case S::Closed:
      return "Closed";
  }
  return "?";
}

const char* to_string(ReceiverEvent e) {
  switch (e) {
    case E::GotOffer:
      return "GotOffer";
    case E::GotChunk:
      return "GotChunk";
    case E::GotFileDone:
      return "GotFileDone";
    case E::GotContinue:
      return "GotContinue";
    case E::GotFileAbort:
      return "GotFileAbort";
    case E::GotBye:
      return "GotBye";
    case E::GotError:
      return "GotError";
    case E::GotUnexpected:
      return "GotUnexpected";
    case E::OpenAccepted:
      return "OpenAccepted";
    case E::OpenRejected:
      return "OpenRejected";
    case E::OpenNeedsProof:
      return "OpenNeedsProof";
    case E::IdKnown:
      return "IdKnown";
    case E::IdUnknown:
      return "IdUnknown";
    case E::IdAttemptsExhausted:
      return "IdAttemptsExhausted";
    case E::EntryTaken:
      return "EntryTaken";
    case E::EntryResumed:
      return "EntryResumed";
    case E::EntryHave:
      return "EntryHave";
    case E::EntryHeld:
      return "EntryHeld";
    case E::EntryRefused:
      return "EntryRefused";
    case E::ChunkStored:
      return "ChunkStored";
    case E::EntrySettled:
      return "EntrySettled";
    case E::ProtocolViolation:
      return "ProtocolViolation";
    case E::LocalFailure:
      return "LocalFailure";
    case E::Timeout:
      return "Timeout";
    case E::TransportFailed:
      return "TransportFailed";
    case E::Disconnected:
      return "Disconnected";
    case E::ShuttingDown:
      return "ShuttingDown";
  }
  return "?";
}

const char* to_string(ReceiverAction a) {
  switch (a) {
    case A::SendChallenge:
      return "SendChallenge";
    case A::SendAccept:
      return "SendAccept";
    case A::SendReject:
      return "SendReject";
    case A::CheckOffer:
      return "CheckOffer";
    case A::SendTake:
      return "SendTake";
    case A::SendResume:
      return "SendResume";
    case A::SendHave:
      return "SendHave";
    case A::SendHolds:
      return "SendHolds";
    case A::CheckContinue:
      return "CheckContinue";
    case A::AbandonEntry:
      return "AbandonEntry";
    case A::SendRefuse:
      return "SendRefuse";
    case A::StoreChunk:
      return "StoreChunk";
    case A::SendCredit:
      return "SendCredit";
    case A::FinishEntries:
      return "FinishEntries";
    case A::SendFileVerdict:
      return "SendFileVerdict";
    case A::SendSecret:
      return "SendSecret";
    case A::SendDenied:
      return "SendDenied";
    case A::SendError:
      return "SendError";
    case A::DiscardFile:
      return "DiscardFile";
    case A::Disconnect:
      return "Disconnect";
    case A::Release:
      return "Release";
  }
  return "?";
}

}  // namespace rdmax::proto
