#pragma once
// The sender's connection state machine: pure, no I/O. The driver (sender/) turns CM
// events, completions and timers into events and carries out the returned actions.
//
// Lifecycle of a connection, which carries a session (docs/PROTOCOL.md 7.5) of one file or
// many, in two machines:
//  - the set-up (setup_next): ResolvingAddress -> ResolvingRoute, rdma_cm's two look-ups.
//    There is no queue pair yet, so nothing can be received: its events are the CM's
//    answers, a failure and a signal, and it ends in Connect or in Done;
//  - the connection (sender_next): Connecting -> AwaitAccept (Open sent; with a key, the
//    Challenge and both Proofs cross here, 7.8) -> InSession -> [AwaitSecret] -> Closing ->
//    Done. Entries are offered, taken and settled in InSession, several at a time (the
//    driver's SendLedger); each entry's outcome is the driver's to report. When every
//    entry is settled, session_settled() says how InSession ends.
// The first outcome a transition names is the connection's. A version-1 receiver is served
// by the same machines: the transport translates at the edge (sender/version1_transport.hpp).

#include <cstdint>
#include <optional>

#include "protocol/action_list.hpp"
#include "protocol/enum_names.hpp"

namespace rdmax::proto {

enum class SenderState : std::uint8_t {
  Connecting,   // Connect called: waiting for ESTABLISHED (a message may overtake it)
  AwaitAccept,  // Open sent
  InSession,    // offering entries and writing their chunks
  AwaitSecret,  // Id sent
  Closing,      // disconnecting; the outcome is decided
  Done,         // finished; resources released
};

enum class SenderEvent : std::uint8_t {
  Established,
  ConnectFailed,  // REJECTED, UNREACHABLE, ADDR/ROUTE/CONNECT_ERROR: nobody to talk to
  GotAccept,
  GotReject,
  GotRejectVersion,  // Reject(UnsupportedVersion): the receiver does not speak our version
  // An answer about the session's entries or window: a Credit, or a Take, Resume (7.6), Have,
  // Holds (7.9), Refuse or FileVerdict of an entry. Whether it fits the entry or the slot is
  // the TakeAnswer action's to find (a ProtocolViolation if not).
  GotAnswer,
  GotWorking,  // the receiver is alive and still at work
  GotSecret,
  GotDenied,
  GotError,
  GotErrorGaveUp,  // Error(Timeout) or Error(ShuttingDown): the connection ends, not a bug
  GotUnexpected,   // a message only a sender may send, or one out of place
  ProtocolViolation,
  LocalFailure,  // one of our own actions failed (a registration, a read, a post...)
  Timeout,
  TransportFailed,
  Disconnected,
  Interrupted,  // SIGINT/SIGTERM
  // Sender keys (docs/PROTOCOL.md 7.8).
  GotChallenge,   // prove our key over the receiver's nonce
  GotRejectAuth,  // Reject(AuthRequired) or Reject(AuthFailed): the receiver refuses us
  GotProof,       // the receiver's Proof; the driver's check of it is SenderContext::proof
  // One file over several connections (docs/PROTOCOL.md 7.12): this connection may carry a
  // striped file's chunks. Given only where our Open asked (else the message is unexpected).
  GotStripes,
};

enum class SenderAction : std::uint8_t {
  ResolveRoute,
  Connect,
  SendOpen,
  // The answer applied to the entries and the window; then offer, write and finish what is
  // due now.
  TakeAnswer,
  SendId,
  KeepSecret,  // the Secret that arrived is the program's result
  SendBye,
  SendError,
  Disconnect,    // let posted sends drain, then rdma_disconnect
  Finish,        // release everything; the loop ends
  StartSession,  // set up the staging buffer; offer entries, write chunks as credits allow
  SendProof,     // our answer to the Challenge (7.8)
  // The receiver refused the Open: a command of one file settles that file as refused (the
  // refusals the command's fall-backs answer settle nothing).
  SettleRefused,
};

// What the program reports; sender/exit_codes.hpp maps each to an exit status (several
// share one).
enum class SenderOutcome : std::uint8_t {
  Success,
  ConnectFailed,   // could not connect
  ConnectionLost,  // the connection broke, or the receiver stopped answering
  Rejected,
  HashMismatch,
  Denied,
  ReceiverFailed,  // the receiver could not store the file
  ProtocolError,
  Interrupted,
  VersionUnsupported,  // the receiver speaks only an older protocol version: retry with it
  LocalFailure,        // the sender itself failed (reading the file, registering memory...)
  SomeFailed,          // a session ended with entries refused or not verified: the driver
                       // reports each, and the first one's status
  AuthFailed,          // sender keys: the receiver refused ours, or did not prove its own
};

// With --key-file the receiver must prove that it holds our key before its Accept (7.8). The
// driver checks the Proof (an HMAC) and says what it found with the event it came in, or
// with the Accept.
enum class ReceiverProof : std::uint8_t {
  NotDue,   // no key claimed, no Challenge yet, or proven already
  Good,     // a GotProof that checked good
  Wrong,    // a GotProof that did not: the receiver holds another key for our id
  Missing,  // a GotAccept before the receiver proved itself
};

struct SenderContext {
  bool has_id = false;  // the user gave --id
  ReceiverProof proof = ReceiverProof::NotDue;
};

// The data an input carries beside its event, and the data an action needs of the input
// that raised it, as the receiver's machine says it (ReceiverData): the driver's input holds
// one of these (sender/sender_input.hpp, in this order), and every transition of the table is
// checked against needed_by() when sender_machine.cpp compiles.
enum class SenderData : std::uint8_t {
  None,
  Accept,
  Reject,
  Answer,  // GotAnswer's message
  Secret,
  Abort,  // why this side ends the connection
};

constexpr SenderData carried_by(SenderEvent event, ReceiverProof proof = ReceiverProof::NotDue) {
  using E = SenderEvent;
  using D = SenderData;
  // An Accept before the receiver proved itself, or a wrong Proof, is refused (7.8).
  if (event == E::GotAccept) return proof == ReceiverProof::Missing ? D::Abort : D::Accept;
  if (event == E::GotProof) return proof == ReceiverProof::Wrong ? D::Abort : D::None;
  if (event == E::GotReject) return D::Reject;
  if (event == E::GotAnswer) return D::Answer;
  if (event == E::GotSecret) return D::Secret;
  const bool aborts = event == E::ProtocolViolation || event == E::LocalFailure ||
                      event == E::Timeout || event == E::Interrupted;
  return aborts ? D::Abort : D::None;
}

// None: the action reads nothing of its input. In an illegal transition the driver gives
// SendError its Abort, naming the event and the state.
constexpr SenderData needed_by(SenderAction action) {
  using A = SenderAction;
  using D = SenderData;
  if (action == A::StartSession) return D::Accept;
  if (action == A::SettleRefused) return D::Reject;
  if (action == A::TakeAnswer) return D::Answer;
  if (action == A::KeepSecret) return D::Secret;
  return action == A::SendError ? D::Abort : D::None;
}

struct SenderTransition {
  SenderState next;
  ActionList<SenderAction> actions;
  std::optional<SenderOutcome> outcome = std::nullopt;
  bool illegal = false;  // the event is not allowed in this state
};

[[nodiscard]] SenderTransition sender_next(SenderState state, SenderEvent event,
                                           const SenderContext& context);

// InSession's end: every entry is settled (by an answer, by the other connections of the
// command finishing, by a file abandoned here), `all_good` if each is good. Only InSession
// has entries to settle: in any other state this changes nothing (an input queued ahead of
// it ended the session).
[[nodiscard]] SenderTransition session_settled(SenderState state, bool all_good,
                                               const SenderContext& context);

// Where the receiver's first answer is awaited: there, and only there, a version-1 Error (a
// receiver of an older version), a reply in clear where we asked to seal (a receiver before
// sealing), a Stripes, and the key proofs (7.8) are judged as the first answer. Anywhere else
// a Stripes or a key proof goes to the table unjudged, which finds it out of place, and a
// reply in another version (but a version-1 Reject, which the table judges) or in clear is a
// violation as every malformed message is.
[[nodiscard]] bool sender_awaits_first_answer(SenderState state);

// The set-up before the connection (rdma_cm's address and route look-ups).
enum class SetupState : std::uint8_t { ResolvingAddress, ResolvingRoute };

enum class SetupEvent : std::uint8_t {
  AddressResolved,
  RouteResolved,
  // ADDR_ERROR, ROUTE_ERROR, UNREACHABLE, a CM failure, our own call failing, the deadline:
  // there is no connection to say anything on, and nothing to retry but the command.
  Failed,
  Interrupted,  // SIGINT/SIGTERM
};

struct SetupTransition {
  std::optional<SetupState> next;  // none: the set-up is over, the connection goes on in `then`
  SenderState then = SenderState::Connecting;  // Connecting (after Connect) or Done
  ActionList<SenderAction> actions;
  std::optional<SenderOutcome> outcome = std::nullopt;
  bool illegal = false;  // rdma_cm answered out of order
};

[[nodiscard]] SetupTransition setup_next(SetupState state, SetupEvent event);

const char* to_string(SenderOutcome);

}  // namespace rdmax::proto
