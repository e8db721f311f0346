#include "protocol/sender_machine.hpp"

namespace rdmax::proto {
namespace {

using S = SenderState;
using E = SenderEvent;
using A = SenderAction;
using O = SenderOutcome;

constexpr bool connected(S s) {
  return s == S::AwaitAccept || s == S::InSession || s == S::AwaitSecret;
}

// Events that end the connection the same way from every open state.
constexpr SenderTransition abort_from(S s, E e) {
  switch (e) {
    case E::ConnectFailed:
      if (!connected(s)) return {S::Done, {A::Finish}, O::ConnectFailed};
      break;
    case E::Disconnected:
    case E::TransportFailed:
      return {S::Done, {A::Finish}, connected(s) ? O::ConnectionLost : O::ConnectFailed};
    case E::Timeout:
      if (!connected(s)) return {S::Done, {A::Finish}, O::ConnectFailed};
      return {S::Closing, {A::SendError, A::Disconnect}, O::ConnectionLost};
    case E::Interrupted:
      if (!connected(s)) return {S::Done, {A::Finish}, O::Interrupted};
      return {S::Closing, {A::SendError, A::Disconnect}, O::Interrupted};
    case E::GotError:
      if (!connected(s)) return {S::Done, {A::Finish}, O::ProtocolError};
      return {S::Closing, {A::Disconnect}, O::ProtocolError};
    case E::GotErrorGaveUp:
      // The receiver timed out waiting for us, or is stopping: the connection is lost
      // (retryable), not a protocol error.
      if (!connected(s)) return {S::Done, {A::Finish}, O::ConnectionLost};
      return {S::Closing, {A::Disconnect}, O::ConnectionLost};
    case E::ProtocolViolation:
      if (!connected(s)) return {S::Done, {A::Finish}, O::ProtocolError};
      return {S::Closing, {A::SendError, A::Disconnect}, O::ProtocolError};
    case E::LocalFailure:
      if (!connected(s)) return {S::Done, {A::Finish}, O::ConnectFailed};
      return {S::Closing, {A::SendError, A::Disconnect}, O::LocalFailure};
    default:
      break;
  }
  if (!connected(s)) return {S::Done, {A::Finish}, O::ProtocolError, true};
  return {S::Closing, {A::SendError, A::Disconnect}, O::ProtocolError, true};
}

constexpr SenderTransition next(S s, E e, const SenderContext& ctx) {
  switch (s) {
    case S::Connecting:
      if (e == E::Established) return {S::AwaitAccept, {A::SendOpen}};
      break;
    case S::AwaitAccept:
      // Not a byte goes to a receiver that could not prove it holds our key.
      if (e == E::GotAccept && ctx.proof == ReceiverProof::Missing)
        return {S::Closing, {A::SendError, A::Disconnect}, O::AuthFailed};
      if (e == E::GotAccept) return {S::InSession, {A::StartSession}};
      if (e == E::GotReject) return {S::Closing, {A::SettleRefused, A::Disconnect}, O::Rejected};
      if (e == E::GotRejectVersion) return {S::Closing, {A::Disconnect}, O::VersionUnsupported};
      // The receiver is still preparing the session.
      if (e == E::GotWorking) return {S::AwaitAccept, {}};
      if (e == E::GotChallenge) return {S::AwaitAccept, {A::SendProof}};
      if (e == E::GotRejectAuth) return {S::Closing, {A::Disconnect}, O::AuthFailed};
      // A good Proof changes no state: the driver notes it, for the Accept that follows. A
      // Proof nobody asked for is illegal (below).
      if (e == E::GotProof && ctx.proof == ReceiverProof::Good) return {S::AwaitAccept, {}};
      if (e == E::GotProof && ctx.proof == ReceiverProof::Wrong)
        return {S::Closing, {A::SendError, A::Disconnect}, O::AuthFailed};
      // Right before the Accept (7.12): the driver notes it, for the session that follows.
      if (e == E::GotStripes) return {S::AwaitAccept, {}};
      break;
    case S::InSession:
      if (e == E::GotAnswer) return {S::InSession, {A::TakeAnswer}};
      if (e == E::GotWorking) return {S::InSession, {}};
      break;
    case S::AwaitSecret:
      if (e == E::GotSecret) return {S::Closing, {A::KeepSecret, A::Disconnect}, O::Success};
      // The receiver sends Working until our Id reaches it (PROTOCOL.md 7.5): one may cross
      // the Id.
      if (e == E::GotWorking) return {S::AwaitSecret, {}};
      if (e == E::GotDenied) return {S::Closing, {A::Disconnect}, O::Denied};
      break;
    case S::Closing:
      if (e == E::Disconnected || e == E::TransportFailed || e == E::Timeout ||
          e == E::LocalFailure)
        return {S::Done, {A::Finish}};
      return {S::Closing, {}};
    case S::Done:
      return {S::Done, {}};
  }
  return abort_from(s, e);
}

constexpr SenderTransition settled_next(bool all_good, const SenderContext& ctx) {
  // The receiver gives a secret only for a session whose every entry is good.
  if (!all_good) return {S::Closing, {A::SendBye, A::Disconnect}, O::SomeFailed};
  if (ctx.has_id) return {S::AwaitSecret, {A::SendId}};
  return {S::Closing, {A::SendBye, A::Disconnect}, O::Success};
}

// Every state and event, with every finding of the receiver's Proof where the event goes
// with one (a Proof, an Accept), with and without an id; the settled session's ends. Few
// steps, so that a compiler's constant-evaluation limit is far (clang's is a million).
constexpr bool every_action_finds_its_data() {
  for (bool has_id : {false, true}) {
    for (S s : enum_values<S>())
      for (E e : enum_values<E>()) {
        if (e == E::GotAccept || e == E::GotProof) {
          for (ReceiverProof proof : enum_values<ReceiverProof>())
            if (!actions_find_their_data(next(s, e, {has_id, proof}), carried_by(e, proof)))
              return false;
        } else if (!actions_find_their_data(next(s, e, {has_id, {}}), carried_by(e))) {
          return false;
        }
      }
    for (bool all_good : {false, true})
      if (!actions_find_their_data(settled_next(all_good, {has_id, {}}), SenderData::None))
        return false;
  }
  return true;
}
static_assert(every_action_finds_its_data(),
              "an action needs data its event does not carry (sender_machine.hpp)");

}  // namespace

SenderTransition sender_next(S s, E e, const SenderContext& ctx) {
  return next(s, e, ctx);
}

SenderTransition session_settled(S s, bool all_good, const SenderContext& ctx) {
  if (s != S::InSession) return {s, {}};
  return settled_next(all_good, ctx);
}

SetupTransition setup_next(SetupState s, SetupEvent e) {
  using Setup = SetupState;
  switch (e) {
    case SetupEvent::AddressResolved:
      if (s == Setup::ResolvingAddress)
        return {Setup::ResolvingRoute, S::Connecting, {A::ResolveRoute}};
      break;
    case SetupEvent::RouteResolved:
      if (s == Setup::ResolvingRoute) return {std::nullopt, S::Connecting, {A::Connect}};
      break;
    case SetupEvent::Failed:
      return {std::nullopt, S::Done, {A::Finish}, O::ConnectFailed};
    case SetupEvent::Interrupted:
      return {std::nullopt, S::Done, {A::Finish}, O::Interrupted};
  }
  return {std::nullopt, S::Done, {A::Finish}, O::ConnectFailed, true};
}

bool sender_awaits_first_answer(SenderState state) {
  return state == SenderState::AwaitAccept;
}

// Stable identifiers: rdma-send --json reports them as `outcome` (rdma-send(1)), so a value
// never changes once released; common/cli/error_hints.cpp words each for people.
const char* to_string(SenderOutcome o) {
  switch (o) {
    case O::Success:
      return "success";
    case O::ConnectFailed:
      return "connect_failed";
    case O::ConnectionLost:
      return "connection_lost";
    case O::Rejected:
      return "rejected";
    case O::HashMismatch:
      return "hash_mismatch";
    case O::Denied:
      return "denied";
    case O::ReceiverFailed:
      return "receiver_failed";
    case O::ProtocolError:
      return "protocol_error";
    case O::Interrupted:
      return "interrupted";
    case O::VersionUnsupported:
      return "version_unsupported";
    case O::LocalFailure:
      return "local_failure";
    case O::SomeFailed:
      return "some_failed";
    case O::AuthFailed:
      return "auth_failed";
  }
  return "?";
}

}  // namespace rdmax::proto
