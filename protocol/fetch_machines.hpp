#pragma once
// A fetch before its session (docs/PROTOCOL.md 7.13), as two pure machines, one per side.
// Once the fetcher said what it wants and the server walked it, the connection is a session
// of 7.5 with the roles of a push: the server's side hands its connection to the sender's
// machine (sender_machine.hpp, at its Open), the fetcher's to the receiver's
// (receiver_machine.hpp, with the server's Open). Neither session machine knows a fetch.
//
// The server (serve_next), on a connection it accepted:
//   AwaitFetch --Fetch--> [Authenticating --Proof-->] AwaitWants --Want...Want(last)-->
//   Walking --walked--> Serving (the sender's machine has it), or Closing with a Bye (an
//   empty share) or a Reject (a request refused), then Closed.
// The fetcher (fetch_next), on a connection it made (the set-up before it is the sender's,
// setup_next, the same rdma_cm look-ups):
//   Connecting --ESTABLISHED: Fetch--> [Proving --Challenge: Proof--> AwaitProof --Proof-->]
//   AwaitAnswer (its Wants sent) --Open--> Receiving (the receiver's machine has it), or
//   --Bye/Reject--> Closing, then Done.
// The driver checks a Fetch, a Proof and a Want as they arrive and gives each machine what it
// found with the message's event; every failure leads to Closing (a goodbye is possible) or
// to the end (the transport is gone).

#include <cstdint>
#include <optional>

#include "protocol/action_list.hpp"
#include "protocol/enum_names.hpp"
#include "protocol/sender_machine.hpp"

namespace rdmax::proto {

// --- The server ---------------------------------------------------------------------------

enum class ServeState : std::uint8_t {
  AwaitFetch,      // connected; the fetcher's Fetch awaited
  Authenticating,  // the Fetch claimed a key: Challenge sent, the fetcher's Proof awaited
  AwaitWants,      // Wants come, until the one marked last
  Walking,         // what they name is walked beneath the export (the driver's pool)
  Serving,         // the session runs: the sender's machine has the connection
  Closing,         // disconnecting: sends drain, then rdma_disconnect, then DISCONNECTED
  Closed,          // resources released
};

enum class ServeEvent : std::uint8_t {
  GotFetch,  // a Fetch, checked (ServeChecks::request)
  GotProof,  // the fetcher's Proof, checked (ServeChecks::request)
  GotWant,   // a Want, added to the request (ServeChecks::want)
  Walked,    // the walk is over (ServeChecks::walk)
  GotPush,   // an Open or a Hello: a sender pushing to a server (the other role)
  GotError,
  GotUnexpected,  // a message a fetcher may not send, or one out of place
  ProtocolViolation,
  LocalFailure,
  Timeout,
  TransportFailed,
  Disconnected,
  ShuttingDown,  // SIGINT/SIGTERM
};

// What the driver's check of a Fetch or of a Proof found. NotChecked: it came out of place.
enum class RequestCheck : std::uint8_t { NotChecked, Accepted, NeedsProof, Rejected };
// A Want added to the request: more to come, the last one, or the request refused.
enum class WantCheck : std::uint8_t { NotChecked, More, Last, Rejected };
// The walk of what the Wants name: a share to send, an empty share, or the request refused.
enum class WalkCheck : std::uint8_t { NotChecked, Share, Empty, Rejected };

struct ServeChecks {
  RequestCheck request = RequestCheck::NotChecked;
  WantCheck want = WantCheck::NotChecked;
  WalkCheck walk = WalkCheck::NotChecked;
};

enum class ServeAction : std::uint8_t {
  SendChallenge,  // a fresh nonce for the fetcher to prove its key over (7.8)
  SendProof,      // ours, over the same transcript; sealed from then on where asked (7.11)
  SendReject,     // the reason the check or the walk found
  Walk,           // walk the request beneath the export (on the pool) -> Walked
  Serve,          // the sender's machine takes the connection, its Open first
  SendBye,        // the share is empty
  SendError,      // why we end it (a push's Error names the role)
  Disconnect,     // let posted sends drain, then rdma_disconnect
  Release,        // the connection's resources go
};

struct ServeTransition {
  ServeState next;
  ActionList<ServeAction> actions;
  bool illegal = false;  // the event may not happen in this state: a protocol violation
};

[[nodiscard]] ServeTransition serve_next(ServeState state, ServeEvent event, ServeChecks checks);

// --- The fetcher --------------------------------------------------------------------------

enum class FetchState : std::uint8_t {
  Connecting,   // rdma_connect called: ESTABLISHED awaited
  Proving,      // a Fetch that claims a key sent: the server's Challenge awaited (7.8)
  AwaitProof,   // our Proof sent: the server's awaited; no Want goes before it checks
  AwaitAnswer,  // the Wants sent: the server's Open, Bye or Reject awaited (Working meanwhile)
  Receiving,    // the session runs: the receiver's machine has the connection
  Closing,      // disconnecting; the outcome is decided
  Done,         // finished; resources released
};

enum class FetchEvent : std::uint8_t {
  Established,
  ConnectFailed,  // REJECTED, UNREACHABLE, CONNECT_ERROR: nobody to talk to
  GotChallenge,
  GotProof,        // the server's Proof, checked (FetchContext::proof)
  GotOpen,         // the session begins
  GotBye,          // an empty share: nothing to fetch
  GotReject,       // the request refused
  GotRejectAuth,   // Reject(AuthRequired, AuthFailed or SealRequired): our key is not enough
  GotWorking,      // the server is alive and still walking
  GotError,        // the server failed, or is not a server (a receiver answers a Fetch so)
  GotErrorGaveUp,  // Error(Timeout) or Error(ShuttingDown): the connection is lost, not a bug
  GotUnexpected,   // a message only a fetcher sends, or one out of place
  ProtocolViolation,
  LocalFailure,
  Timeout,
  TransportFailed,
  Disconnected,
  Interrupted,  // SIGINT/SIGTERM
};

enum class ProofCheck : std::uint8_t { NotChecked, Good, Bad };

struct FetchContext {
  bool keyed = false;  // the Fetch claims a key (--key-file)
  ProofCheck proof = ProofCheck::NotChecked;
};

enum class FetchAction : std::uint8_t {
  SendFetch,
  SendProof,  // ours, over the server's nonce
  SendWants,  // every Want, the last marked; sealed from the server's good Proof on
  Receive,    // the receiver's machine takes the connection, with the server's Open
  SendError,
  Disconnect,
  Finish,  // release the transport; the outcome is final
};

// The outcomes are rdma-send's (sender_machine.hpp): a fetch fails in the ways a push does,
// and exits with the same statuses (rdma-recv(1)).
struct FetchTransition {
  FetchState next;
  ActionList<FetchAction> actions;
  std::optional<SenderOutcome> outcome = std::nullopt;
  bool illegal = false;
};

[[nodiscard]] FetchTransition fetch_next(FetchState state, FetchEvent event, FetchContext context);

// The fetcher's state once rdma_cm's set-up is over (setup_next's `then`): Connecting, or
// Done where it failed.
[[nodiscard]] constexpr FetchState fetch_state_after_setup(SenderState then) {
  return then == SenderState::Connecting ? FetchState::Connecting : FetchState::Done;
}

}  // namespace rdmax::proto
