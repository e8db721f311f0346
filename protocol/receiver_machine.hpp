#pragma once
// The receiver's per-connection state machine: pure, no I/O. The driver (receiver/)
// turns CM events, completions, timers and the results of its own work into events,
// and carries out the actions each transition returns, in order.
//
// Lifecycle (docs/PROTOCOL.md 7.5): AwaitOpen -> [Authenticating] -> InSession -> Closing ->
// Closed, by way of AwaitId after a denied id. Authenticating (7.8) is the wait for a
// challenged sender's Proof. The driver checks an Open, a Proof and an Id as they arrive
// (none waits for anything) and gives the machine what it found with the message's event
// (ReceiverChecks): an Open accepted, rejected or to be proven; an id known, unknown or the
// last attempt's. Any failure leads to Closing (a goodbye is possible) or Closed (the
// transport is gone). In InSession entries come and go, several at a time; where each stands
// is the driver's ReceiveLedger (protocol/receive_ledger.hpp), which also
// decides whether an Id or a Bye may come yet. A sender that names its one file with a Hello
// (version 1) is served as a session of that one entry (receiver/hello_edge.hpp): this
// machine never sees a Hello.
//
// The entries' own work (checking an Offer, creating a file, storing a chunk, committing)
// reports back with a WorkResult, which only InSession has: every way out of it discards
// the entries in flight, and the driver takes a result only for an entry in flight. Storing a
// chunk (hash + write) is asynchronous: StoreChunk hands it to the driver's worker pool, and
// ChunkStored reports, in file order, that one chunk has been stored. A FileDone may
// overtake the last of them; the entry is verified once they are stored.

#include <cstdint>
#include <utility>

#include "protocol/action_list.hpp"
#include "protocol/enum_names.hpp"

namespace rdmax::proto {

enum class ReceiverState : std::uint8_t {
  AwaitOpen,  // connected; waiting for the sender's Open
  // --senders: the Open claimed a key and was challenged; waiting for the sender's Proof
  // (docs/PROTOCOL.md 7.8). Nothing is granted yet.
  Authenticating,
  InSession,  // Accept sent; entries are offered, taken, received and settled
  AwaitId,    // an id was denied; the sender may present another or say bye
  Closing,    // disconnecting: sends drain, then rdma_disconnect, then DISCONNECTED
  Closed,     // resources released; the connection is gone
};

enum class ReceiverEvent : std::uint8_t {
  // Messages from the sender. An Open, a Proof and an Id come with what the driver's check
  // of them found (ReceiverChecks).
  GotOpen,   // an Open, checked (a first message of another version: an Open refused)
  GotProof,  // a sender's Proof (7.8)
  GotId,
  GotOffer,
  GotChunk,  // a FileChunk
  GotFileDone,
  GotContinue,   // the digest at the end (7.9): where a held file continues
  GotFileAbort,  // the sender abandons a file offered with the digest at the end
  GotJoin,       // a member connection carries chunks of a striped file (7.12)
  GotBye,
  GotError,
  GotUnexpected,  // a message the sender may not send (Accept, Credit, a Chunk, ...)
  // Transport and environment.
  ProtocolViolation,  // undecodable message, or a chunk that breaks the data rules
  LocalFailure,       // one of our own actions failed (a registration, a post...)
  Timeout,
  TransportFailed,  // completion error: the QP is unusable
  Disconnected,     // DISCONNECTED (or the peer vanished) seen by the CM
  ShuttingDown,     // SIGINT/SIGTERM: abandon the transfer cleanly
};

// What the driver's check of an Open (and, with --senders, of the Proof and then the rest of
// the Open) found, given with GotOpen or GotProof. NotChecked: the message came where it may
// not, and was not checked.
enum class OpenCheck : std::uint8_t { NotChecked, Accepted, Rejected, NeedsProof };
// What looking an Id up found, given with GotId (3 attempts per connection).
enum class IdLookup : std::uint8_t { NotLookedUp, Known, Unknown, AttemptsExhausted };

// Where the session's entries stand when an Id or a Bye comes (the ledger's): every entry
// offered and settled, and whether every one was good. An Id or a Bye ends a session only once
// all are settled; an Id, which asks for the secret, only after a session of good entries.
enum class SessionEnd : std::uint8_t { NotChecked, Settled, Unsettled, Failed };

struct ReceiverChecks {
  OpenCheck open = OpenCheck::NotChecked;
  IdLookup id = IdLookup::NotLookedUp;
  SessionEnd entries = SessionEnd::NotChecked;
};

// The results of the driver's own work for the entries in flight (InSession's alone).
enum class WorkResult : std::uint8_t {
  EntryTaken,    // an offered file is created: Take it
  EntryResumed,  // an offered file continues a kept partial: Resume instead of Take (7.6)
  EntryHave,     // an offered file is in place already: Have, and the entry is settled Good
  EntryHeld,     // a file offered without its digest: something of it is here (Holds, 7.9)
  EntryRefused,  // an offered entry is refused (name, existing file, size, space, memory)
  ChunkStored,   // one chunk is hashed and written (its slot may be credited back)
  EntrySettled,  // an entry's verdict is known (a directory made, a file committed or not)
};

enum class ReceiverAction : std::uint8_t {
  SendChallenge,    // a fresh nonce for the sender to prove its key over (7.8)
  SendAccept,       // take the window the check granted and advertise it (its keys go with
                    // the first file's Credits); after a good Proof, ours goes first
  SendReject,       // with the reason the check produced
  CheckOffer,       // check the path and limits, create the file or directory
                    // -> WorkResult EntryTaken / EntryResumed / EntryHave / EntryHeld /
                    //    EntryRefused / EntrySettled (a directory)
  SendTake,         // register what the window needs and credit it; EntryRefused if the
                    // window cannot be registered
  SendResume,       // Resume{entry, offset}: the entry is taken from the offset
  SendHave,         // Have{entry, digest}; the entry is settled Good
  SendHolds,        // Holds{entry, length, digest}: the sender's Continue is awaited (7.9)
  CheckContinue,    // act on a Continue: Have, a resume or a new file
                    // -> EntryHave / EntryResumed / EntryTaken / EntryRefused
  AbandonEntry,     // a FileAbort: the entry is discarded once its chunks are stored
  CheckJoin,        // a Join: ProtocolViolation if it breaks the rules, else the lead's
                    // entry looked up -> EntryTaken (joined) / EntryRefused
  SendRefuse,       // and forget the entry
  StoreChunk,       // check the chunk, revoke its slot, queue it to be hashed + written:
                    // later ChunkStored (EntrySettled if the write fails); at once
                    // ProtocolViolation if the chunk breaks the data rules
  SendCredit,       // register the stored chunk's slot again and give it back to the sender
  TakeFileDone,     // a file's last chunk is written (with the digest at the end, its
                    // digest); a FileDone of an entry the receiver abandoned changes nothing
  FinishEntries,    // verify and commit every file whose chunks are all stored after its
                    // FileDone -> EntrySettled later
  SendFileVerdict,  // and forget the entry (its temporary removed unless Good)
  SendSecret,
  SendDenied,
  SendError,    // an Error message naming why we abort (protocol violation, timeout, a
                // failure of our own...)
  DiscardFile,  // every entry in flight: keep what it stored for a resume, or remove it
  Disconnect,   // let posted sends drain, then rdma_disconnect
  Release,      // destroy QP, MRs, CQ, PD, cm_id
};

// The data an input carries beside its event, and the data an action needs of the input
// that raised it: the driver's input holds one of these (receiver/receiver_input.hpp, in this
// order), made for its event by a function that takes exactly what carried_by() names. Every
// transition of the table is checked against needed_by() when receiver_machine.cpp compiles,
// so an action that would read data its event does not carry does not compile.
enum class ReceiverData : std::uint8_t {
  None,
  Admission,  // an Open that passed its checks, and the window it is granted
  Rejection,  // why an Open (or a Proof) is rejected
  Offer,
  Chunk,  // a FileChunk
  FileDone,
  Continue,
  FileAbort,
  Join,
  Entry,    // an entry taken, resumed or in place already
  Held,     // what is here of an entry offered without its digest (7.9)
  Refusal,  // an entry refused, and why
  Stored,   // a stored chunk's slot and entry
  Verdict,  // an entry's verdict
  Abort,    // why this side ends the connection
};

constexpr ReceiverData carried_by(ReceiverEvent event, OpenCheck check = OpenCheck::NotChecked) {
  using E = ReceiverEvent;
  using D = ReceiverData;
  if (event == E::GotOpen || event == E::GotProof) {
    if (check == OpenCheck::Accepted) return D::Admission;
    return check == OpenCheck::Rejected ? D::Rejection : D::None;
  }
  constexpr std::pair<E, D> kCarried[] = {
      {E::GotOffer, D::Offer},          {E::GotChunk, D::Chunk},
      {E::GotFileDone, D::FileDone},    {E::GotContinue, D::Continue},
      {E::GotFileAbort, D::FileAbort},  {E::GotJoin, D::Join},
      {E::ProtocolViolation, D::Abort}, {E::LocalFailure, D::Abort},
      {E::Timeout, D::Abort},           {E::ShuttingDown, D::Abort}};
  for (const auto& p : kCarried)
    if (p.first == event) return p.second;
  return D::None;
}

constexpr ReceiverData carried_by(WorkResult result, OpenCheck = OpenCheck::NotChecked) {
  using R = WorkResult;
  using D = ReceiverData;
  constexpr std::pair<R, D> kCarried[] = {
      {R::EntryTaken, D::Entry},    {R::EntryResumed, D::Entry},   {R::EntryHave, D::Entry},
      {R::EntryHeld, D::Held},      {R::EntryRefused, D::Refusal}, {R::ChunkStored, D::Stored},
      {R::EntrySettled, D::Verdict}};
  for (const auto& p : kCarried)
    if (p.first == result) return p.second;
  return D::None;
}

// None: the action reads nothing of its input. SendError's Abort is not needed in an illegal
// transition, where the driver names the event and the state instead.
constexpr ReceiverData needed_by(ReceiverAction action) {
  using A = ReceiverAction;
  using D = ReceiverData;
  constexpr std::pair<A, D> kNeeded[] = {
      {A::SendAccept, D::Admission},    {A::SendReject, D::Rejection},
      {A::CheckOffer, D::Offer},        {A::SendTake, D::Entry},
      {A::SendResume, D::Entry},        {A::SendHave, D::Entry},
      {A::SendHolds, D::Held},          {A::CheckContinue, D::Continue},
      {A::AbandonEntry, D::FileAbort},  {A::CheckJoin, D::Join},
      {A::SendRefuse, D::Refusal},      {A::StoreChunk, D::Chunk},
      {A::TakeFileDone, D::FileDone},   {A::SendCredit, D::Stored},
      {A::SendFileVerdict, D::Verdict}, {A::SendError, D::Abort}};
  for (const auto& p : kNeeded)
    if (p.first == action) return p.second;
  return D::None;
}

// As the sender's machine says it (SenderTransition): one way to say "illegal here".
struct ReceiverTransition {
  ReceiverState next;
  ActionList<ReceiverAction> actions;
  bool illegal = false;  // the event is not allowed in this state: a protocol violation
  constexpr bool operator==(const ReceiverTransition&) const = default;
};

[[nodiscard]] ReceiverTransition receiver_next(ReceiverState state, ReceiverEvent event,
                                               const ReceiverChecks& checks = {});

// Whether the driver checks an Open, a Proof or an Id that arrives in `state` (with what is
// `known` already: an Id's entries): where what the check finds changes the step. Elsewhere
// the message goes unchecked, and the table finds it out of place (or, while closing,
// ignores it).
[[nodiscard]] bool receiver_checks(ReceiverState state, ReceiverEvent event,
                                   const ReceiverChecks& known = {});

// What a result of the entries' work does in `state`: InSession answers the entry (and stays);
// every other state ignores it (a result queued behind the step that left InSession: that
// step discarded its entry).
[[nodiscard]] ReceiverTransition session_result(ReceiverState state, WorkResult result);

// The states in which the sender may wait on the receiver's own work (preparing, storing
// chunks, committing): there a version-2 receiver keeps the sender informed with Working
// messages (docs/PROTOCOL.md 7.3).
[[nodiscard]] bool receiver_owes_keepalive(ReceiverState state);

}  // namespace rdmax::proto
