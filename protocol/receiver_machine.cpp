#include "protocol/receiver_machine.hpp"

namespace rdmax::proto {
namespace {

using S = ReceiverState;
using E = ReceiverEvent;
using A = ReceiverAction;

// Before a good verdict the temporary file must go; after it, the file is committed.
bool holds_uncommitted_file(S s) {
  return s == S::AwaitHello || s == S::CheckingHello || s == S::Receiving || s == S::Draining ||
         s == S::Verifying || s == S::CheckingOpen || s == S::InSession;
}

// Events that end a connection the same way from every open state.
ReceiverTransition abort_from(S s, E e) {
  const bool discard = holds_uncommitted_file(s);
  switch (e) {
    case E::Disconnected:
    case E::TransportFailed:
      // The QP is gone or broken: nothing more can be sent.
      return discard ? ReceiverTransition{S::Closed, {A::DiscardFile, A::Release}}
                     : ReceiverTransition{S::Closed, {A::Release}};
    case E::GotError:
      return discard ? ReceiverTransition{S::Closing, {A::DiscardFile, A::Disconnect}}
                     : ReceiverTransition{S::Closing, {A::Disconnect}};
    case E::ProtocolViolation:
    case E::LocalFailure:
    case E::Timeout:
    case E::ShuttingDown:
      return discard ? ReceiverTransition{S::Closing, {A::SendError, A::DiscardFile, A::Disconnect}}
                     : ReceiverTransition{S::Closing, {A::SendError, A::Disconnect}};
    default:
      // Anything else out of place is a protocol error by the peer (or a driver bug):
      // named, never undefined.
      return {S::Closing,
              discard ? ActionList<A>{A::SendError, A::DiscardFile, A::Disconnect}
                      : ActionList<A>{A::SendError, A::Disconnect},
              ReceiverError::IllegalEvent};
  }
}

}  // namespace

ReceiverTransition receiver_next(S s, E e) {
  switch (s) {
    case S::AwaitHello:
      if (e == E::GotHello) return {S::CheckingHello, {A::CheckHello}};
      if (e == E::GotOpen) return {S::CheckingOpen, {A::CheckOpen}};
      break;
    case S::CheckingOpen:
      if (e == E::OpenAccepted) return {S::InSession, {A::SendAccept}};
      // No file exists yet; DiscardFile anyway, as for a rejected Hello: every way out
      // before the verdicts discards, so none can leave a temporary behind.
      if (e == E::OpenRejected) return {S::Closing, {A::SendReject, A::DiscardFile, A::Disconnect}};
      break;
    case S::InSession:
      if (e == E::GotOffer) return {S::InSession, {A::CheckOffer}};
      if (e == E::EntryTaken) return {S::InSession, {A::SendTake}};
      if (e == E::EntryResumed) return {S::InSession, {A::SendResume}};
      if (e == E::EntryHave) return {S::InSession, {A::SendHave}};
      if (e == E::EntryRefused) return {S::InSession, {A::SendRefuse}};
      if (e == E::GotChunk) return {S::InSession, {A::StoreChunk}};
      if (e == E::ChunkStored) return {S::InSession, {A::SendCredit, A::FinishEntries}};
      if (e == E::GotFileDone) return {S::InSession, {A::FinishEntries}};
      if (e == E::EntrySettled) return {S::InSession, {A::SendFileVerdict}};
      // The driver lets these through only once every entry is settled (the ledger's
      // all_settled); earlier they are a ProtocolViolation.
      if (e == E::GotId) return {S::CheckingId, {A::LookupId}};
      // (Every entry is settled by then, so DiscardFile finds nothing: it is there so that
      // no way out of a session can leave a temporary behind.)
      if (e == E::GotBye) return {S::Closing, {A::DiscardFile, A::Disconnect}};
      break;
    case S::CheckingHello:
      if (e == E::HelloAccepted) return {S::Receiving, {A::SendAccept}};
      // The file is in place already (PROTOCOL.md 7.6): as after a good verdict.
      if (e == E::HelloHave) return {S::AwaitId, {A::SendHave}};
      if (e == E::HelloRejected)
        return {S::Closing, {A::SendReject, A::DiscardFile, A::Disconnect}};
      break;
    case S::Receiving:
      if (e == E::GotChunk) return {S::Receiving, {A::StoreChunk}};
      if (e == E::ChunkStored) return {S::Receiving, {A::SendCredit}};
      // Done may overtake chunks still being stored: they finish before the verdict.
      if (e == E::GotDone) return {S::Draining, {A::AwaitDrain}};
      // A storage failure mid-transfer ends it with a verdict the sender can report.
      if (e == E::VerifiedBad) return {S::Closing, {A::SendVerdict, A::DiscardFile, A::Disconnect}};
      break;
    case S::Draining:
      // The sender has finished: a stored chunk's slot is not credited back.
      if (e == E::ChunkStored) return {S::Draining, {A::AwaitDrain}};
      if (e == E::Drained) return {S::Verifying, {A::Verify}};
      if (e == E::VerifiedBad) return {S::Closing, {A::SendVerdict, A::DiscardFile, A::Disconnect}};
      break;
    case S::Verifying:
      if (e == E::VerifiedGood) return {S::AwaitId, {A::SendVerdict}};
      if (e == E::VerifiedBad) return {S::Closing, {A::SendVerdict, A::DiscardFile, A::Disconnect}};
      break;
    case S::AwaitId:
      if (e == E::GotId) return {S::CheckingId, {A::LookupId}};
      if (e == E::GotBye) return {S::Closing, {A::Disconnect}};
      break;
    case S::CheckingId:
      if (e == E::IdKnown) return {S::Closing, {A::SendSecret, A::Disconnect}};
      if (e == E::IdUnknown) return {S::AwaitId, {A::SendDenied}};
      if (e == E::IdAttemptsExhausted) return {S::Closing, {A::SendDenied, A::Disconnect}};
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
  return abort_from(s, e);
}

bool receiver_owes_keepalive(S s) {
  return s == S::CheckingHello || s == S::Receiving || s == S::Draining || s == S::Verifying ||
         s == S::CheckingOpen || s == S::InSession;
}

const char* to_string(ReceiverState s) {
  switch (s) {
    case S::AwaitHello:
      return "AwaitHello";
    case S::CheckingHello:
      return "CheckingHello";
    case S::Receiving:
      return "Receiving";
    case S::Draining:
      return "Draining";
    case S::Verifying:
      return "Verifying";
    case S::AwaitId:
      return "AwaitId";
    case S::CheckingId:
      return "CheckingId";
    case S::Closing:
      return "Closing";
    case S::Closed:
      return "Closed";
    case S::CheckingOpen:
      return "CheckingOpen";
    case S::InSession:
      return "InSession";
  }
  return "?";
}

const char* to_string(ReceiverEvent e) {
  switch (e) {
    case E::GotHello:
      return "GotHello";
    case E::GotChunk:
      return "GotChunk";
    case E::GotDone:
      return "GotDone";
    case E::GotId:
      return "GotId";
    case E::GotBye:
      return "GotBye";
    case E::GotError:
      return "GotError";
    case E::GotUnexpected:
      return "GotUnexpected";
    case E::GotOpen:
      return "GotOpen";
    case E::GotOffer:
      return "GotOffer";
    case E::GotFileDone:
      return "GotFileDone";
    case E::HelloAccepted:
      return "HelloAccepted";
    case E::HelloRejected:
      return "HelloRejected";
    case E::ChunkStored:
      return "ChunkStored";
    case E::Drained:
      return "Drained";
    case E::VerifiedGood:
      return "VerifiedGood";
    case E::VerifiedBad:
      return "VerifiedBad";
    case E::IdKnown:
      return "IdKnown";
    case E::IdUnknown:
      return "IdUnknown";
    case E::IdAttemptsExhausted:
      return "IdAttemptsExhausted";
    case E::OpenAccepted:
      return "OpenAccepted";
    case E::OpenRejected:
      return "OpenRejected";
    case E::EntryTaken:
      return "EntryTaken";
    case E::EntryRefused:
      return "EntryRefused";
    case E::EntrySettled:
      return "EntrySettled";
    case E::HelloHave:
      return "HelloHave";
    case E::EntryResumed:
      return "EntryResumed";
    case E::EntryHave:
      return "EntryHave";
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
    case A::CheckHello:
      return "CheckHello";
    case A::SendAccept:
      return "SendAccept";
    case A::SendReject:
      return "SendReject";
    case A::StoreChunk:
      return "StoreChunk";
    case A::SendCredit:
      return "SendCredit";
    case A::AwaitDrain:
      return "AwaitDrain";
    case A::Verify:
      return "Verify";
    case A::SendVerdict:
      return "SendVerdict";
    case A::LookupId:
      return "LookupId";
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
    case A::CheckOpen:
      return "CheckOpen";
    case A::CheckOffer:
      return "CheckOffer";
    case A::SendTake:
      return "SendTake";
    case A::SendRefuse:
      return "SendRefuse";
    case A::FinishEntries:
      return "FinishEntries";
    case A::SendFileVerdict:
      return "SendFileVerdict";
    case A::SendResume:
      return "SendResume";
    case A::SendHave:
      return "SendHave";
  }
  return "?";
}

}  // namespace rdmax::proto
