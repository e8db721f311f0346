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

struct ReceiverChecks {
  OpenCheck open = OpenCheck::NotChecked;
  IdLookup id = IdLookup::NotLookedUp;
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
  SendRefuse,       // and forget the entry
  StoreChunk,       // check the chunk, revoke its slot, queue it to be hashed + written:
                    // later ChunkStored (EntrySettled if the write fails); at once
                    // ProtocolViolation if the chunk breaks the data rules
  SendCredit,       // register the stored chunk's slot again and give it back to the sender
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

// As the sender's machine says it (SenderTransition): one way to say "illegal here".
struct ReceiverTransition {
  ReceiverState next;
  ActionList<ReceiverAction> actions;
  bool illegal = false;  // the event is not allowed in this state: a protocol violation
};

[[nodiscard]] ReceiverTransition receiver_next(ReceiverState state, ReceiverEvent event,
                                               const ReceiverChecks& checks = {});

// What InSession does with a result of its entries' work (it stays InSession).
[[nodiscard]] ReceiverTransition session_result(WorkResult result);

// The states in which the sender may wait on the receiver's own work (preparing, storing
// chunks, committing): there a version-2 receiver keeps the sender informed with Working
// messages (docs/PROTOCOL.md 7.3).
[[nodiscard]] bool receiver_owes_keepalive(ReceiverState state);

}  // namespace rdmax::proto
