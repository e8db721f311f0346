#include "protocol/fetch_machines.hpp"

namespace rdmax::proto {

ServeTransition serve_next(ServeState s, ServeEvent e, ServeChecks checks) {
  using S = ServeState;
  using E = ServeEvent;
  using A = ServeAction;
  // A check that refused ends the connection with its Reject.
  const ServeTransition refused{S::Closing, {A::SendReject, A::Disconnect}};
  switch (s) {
    case S::AwaitFetch:
      if (e == E::GotFetch) {
        if (checks.request == RequestCheck::Accepted) return {S::AwaitWants, {}};
        if (checks.request == RequestCheck::NeedsProof)
          return {S::Authenticating, {A::SendChallenge}};
        if (checks.request == RequestCheck::Rejected) return refused;
      }
      // A sender pushing to a server: told so (7.13), not a violation of ours to log.
      if (e == E::GotPush) return {S::Closing, {A::SendError, A::Disconnect}};
      break;
    case S::Authenticating:
      if (e == E::GotProof) {
        if (checks.request == RequestCheck::Accepted) return {S::AwaitWants, {A::SendProof}};
        if (checks.request == RequestCheck::Rejected) return refused;
      }
      break;
    case S::AwaitWants:
      if (e == E::GotWant) {
        if (checks.want == WantCheck::More) return {S::AwaitWants, {}};
        if (checks.want == WantCheck::Last) return {S::Walking, {A::Walk}};
        if (checks.want == WantCheck::Rejected) return refused;
      }
      break;
    case S::Walking:
      if (e == E::Walked) {
        if (checks.walk == WalkCheck::Share) return {S::Serving, {A::Serve}};
        if (checks.walk == WalkCheck::Empty) return {S::Closing, {A::SendBye, A::Disconnect}};
        if (checks.walk == WalkCheck::Rejected) return refused;
      }
      break;
    case S::Serving:
      // The sender's machine has the connection, and nothing reaches this one any more, but
      // where the hand-over itself failed (a local failure): then the ways out below.
      break;
    case S::Closing:
      // Already on the way out: late messages and timers change nothing but the end.
      if (e == E::Disconnected || e == E::TransportFailed || e == E::Timeout ||
          e == E::LocalFailure)
        return {S::Closed, {A::Release}};
      return {S::Closing, {}};
    case S::Closed:
      return {S::Closed, {}};
  }
  // The ways out, from any state before the session.
  switch (e) {
    case E::GotError:
      return {S::Closing, {A::Disconnect}};
    case E::TransportFailed:
    case E::Disconnected:
      return {S::Closed, {A::Release}};
    case E::ProtocolViolation:
    case E::LocalFailure:
    case E::Timeout:
    case E::ShuttingDown:
      return {S::Closing, {A::SendError, A::Disconnect}};
    case E::Walked:  // only a walk this connection asked for reports
    case E::GotFetch:
    case E::GotProof:
    case E::GotWant:
    case E::GotPush:
    case E::GotUnexpected:
      break;
  }
  return {S::Closing, {A::SendError, A::Disconnect}, true};
}

FetchTransition fetch_next(FetchState s, FetchEvent e, FetchContext context) {
  using S = FetchState;
  using E = FetchEvent;
  using A = FetchAction;
  using O = SenderOutcome;
  switch (s) {
    case S::Connecting:
      if (e == E::Established)
        return context.keyed ? FetchTransition{S::Proving, {A::SendFetch}}
                             : FetchTransition{S::AwaitAnswer, {A::SendFetch, A::SendWants}};
      if (e == E::ConnectFailed) return {S::Done, {A::Finish}, O::ConnectFailed};
      break;
    case S::Proving:
      if (e == E::GotChallenge) return {S::AwaitProof, {A::SendProof}};
      break;
    case S::AwaitProof:
      if (e == E::GotProof && context.proof == ProofCheck::Good)
        return {S::AwaitAnswer, {A::SendWants}};
      // A server that cannot prove it holds our key learns nothing of what we want (7.8).
      if (e == E::GotProof && context.proof == ProofCheck::Bad)
        return {S::Closing, {A::SendError, A::Disconnect}, O::AuthFailed};
      break;
    case S::AwaitAnswer:
      if (e == E::GotOpen) return {S::Receiving, {A::Receive}};
      if (e == E::GotBye) return {S::Closing, {A::Disconnect}, O::Success};
      if (e == E::GotWorking) return {S::AwaitAnswer, {}};
      break;
    case S::Receiving:
      // The receiver's machine has the connection, and nothing reaches this one any more, but
      // where the hand-over itself failed (a local failure): then the ways out below.
      break;
    case S::Closing:
      if (e == E::Disconnected || e == E::TransportFailed || e == E::Timeout ||
          e == E::LocalFailure)
        return {S::Done, {A::Finish}};
      return {S::Closing, {}};
    case S::Done:
      return {S::Done, {}};
  }
  // The ways out, from any state before the session. Before ESTABLISHED there is no one to
  // say anything to; after it a refusal may come before our Proof (a server that wants a key
  // we did not claim) or while we wait for the answer.
  if (s == S::Connecting) {
    if (e == E::Interrupted) return {S::Done, {A::Finish}, O::Interrupted};
    const bool ours =
        e == E::Timeout || e == E::LocalFailure || e == E::TransportFailed || e == E::Disconnected;
    return {S::Done, {A::Finish}, ours ? O::ConnectFailed : O::ProtocolError, !ours};
  }
  switch (e) {
    case E::GotReject:
      return {S::Closing, {A::Disconnect}, O::Rejected};
    case E::GotRejectAuth:
      return {S::Closing, {A::Disconnect}, O::AuthFailed};
    case E::GotError:
      return {S::Closing, {A::Disconnect}, O::ReceiverFailed};
    case E::GotErrorGaveUp:
      return {S::Closing, {A::Disconnect}, O::ConnectionLost};
    case E::TransportFailed:
    case E::Disconnected:
      return {S::Done, {A::Finish}, O::ConnectionLost};
    case E::ProtocolViolation:
      return {S::Closing, {A::SendError, A::Disconnect}, O::ProtocolError};
    case E::LocalFailure:
      return {S::Closing, {A::SendError, A::Disconnect}, O::LocalFailure};
    case E::Timeout:
      return {S::Closing, {A::SendError, A::Disconnect}, O::ConnectionLost};
    case E::Interrupted:
      return {S::Closing, {A::SendError, A::Disconnect}, O::Interrupted};
    case E::Established:
    case E::ConnectFailed:
    case E::GotChallenge:
    case E::GotProof:
    case E::GotOpen:
    case E::GotBye:
    case E::GotWorking:
    case E::GotUnexpected:
      break;
  }
  return {S::Closing, {A::SendError, A::Disconnect}, O::ProtocolError, true};
}

}  // namespace rdmax::proto
