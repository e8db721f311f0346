#pragma once
// The receiver's per-connection state machine: pure, no I/O. The driver (receiver/)
// turns CM events, completions, timers and the results of its own work into events,
// and carries out the actions each transition returns, in order.
//
// Lifecycle: AwaitHello -> CheckingHello -> Receiving -> Draining -> Verifying -> AwaitId
//            -> CheckingId -> Closing -> Closed. Any failure leads to Closing (a goodbye
//            is possible) or Closed (the transport is gone). See docs/PROTOCOL.md, 4.
// A version-2 session (docs/PROTOCOL.md 7.5): AwaitHello -> CheckingOpen -> InSession
//            -> AwaitId (or Closing on Bye). In InSession entries come and go, several at
//            a time; where each stands is the driver's SessionReceiveLedger
//            (protocol/session_receive_ledger.hpp), which also decides whether an Id or a Bye
//            may come yet.
//
// Storing a chunk (hash + write) is asynchronous: StoreChunk hands it to the driver's
// worker pool, and ChunkStored reports, in file order, that one chunk has been stored. A Done
// may overtake the last of them; Draining waits for them before the verdict.

#include <cstdint>

#include "protocol/action_list.hpp"

namespace rdmax::proto {

enum class ReceiverState : std::uint8_t {
  AwaitHello,     // connected; waiting for the sender's offer
  CheckingHello,  // the driver validates the offer (name, size, space, existing file)
  Receiving,      // Accept sent; chunks arrive, each stored and credited back
  Draining,       // Done received; chunks still being stored must finish first
  Verifying,      // everything stored; the driver checks the hash and commits the file
  AwaitId,        // good verdict sent; the sender may present an id or say bye
  CheckingId,     // the driver looks the id up
  Closing,        // disconnecting: sends drain, then rdma_disconnect, then DISCONNECTED
  Closed,         // resources released; the connection is gone
  CheckingOpen,   // version 2: the driver validates a session's Open (resources, memory)
  InSession,      // Accept sent; entries are offered, taken, received and settled
};

enum class ReceiverEvent : std::uint8_t {
  // Messages from the sender.
  GotHello,
  GotChunk,
  GotDone,
  GotId,
  GotBye,
  GotError,
  GotUnexpected,  // a message only a receiver may send (Accept, Credit, Verdict, ...)
  GotOpen,        // version 2: a session instead of a Hello
  GotOffer,
  GotFileDone,
  // Results of the driver's own work.
  HelloAccepted,
  HelloRejected,
  ChunkStored,  // one chunk is hashed and written (its slot may be credited back)
  Drained,      // no chunk is still being stored
  VerifiedGood,
  VerifiedBad,  // hash or size mismatch, or the file could not be stored
  IdKnown,
  IdUnknown,
  IdAttemptsExhausted,
  OpenAccepted,
  OpenRejected,
  EntryTaken,    // an offered file is created: Take it
  EntryRefused,  // an offered entry is refused (name, existing file, size, space)
  EntrySettled,  // an entry's verdict is known (a directory made, a file committed or not)
  // Resume (docs/PROTOCOL.md 7.6), for a sender that understands it.
  HelloHave,     // the offered file is in place already: Have instead of Accept
  EntryResumed,  // an offered file continues a kept partial: Resume instead of Take
  EntryHave,     // an offered file is in place already: Have, and the entry is settled Good
  // Transport and environment.
  ProtocolViolation,  // undecodable message, or a chunk that breaks the data rules
  LocalFailure,       // one of our own actions failed (a registration, a post...)
  Timeout,
  TransportFailed,  // completion error: the QP is unusable
  Disconnected,     // DISCONNECTED (or the peer vanished) seen by the CM
  ShuttingDown,     // SIGINT/SIGTERM: abandon the transfer cleanly
};

enum class ReceiverAction : std::uint8_t {
  CheckHello,   // validate the offer -> HelloAccepted / HelloRejected
  SendAccept,   // register the region, advertise it
  SendReject,   // with the reason the check produced
  StoreChunk,   // check the chunk, revoke its slot, queue it to be hashed + written: later
                // ChunkStored (VerifiedBad if the write fails); at once ProtocolViolation
                // if the chunk breaks the data rules
  SendCredit,   // register the stored chunk's slot again and give it back to the sender
  AwaitDrain,   // revoke every slot; Drained once no chunk is still being stored
  Verify,       // finish hash, compare, fsync + rename -> VerifiedGood / VerifiedBad
  SendVerdict,  // the verdict the driver computed
  LookupId,     // -> IdKnown / IdUnknown / IdAttemptsExhausted
  SendSecret,
  SendDenied,
  SendError,    // an Error message naming why we abort (protocol violation, timeout, a
                // failure of our own...)
  DiscardFile,  // remove the temporary; nothing appears under the final name
  Disconnect,   // let posted sends drain, then rdma_disconnect
  Release,      // destroy QP, MRs, CQ, PD, cm_id
  // Version-2 sessions.
  CheckOpen,   // validate the Open -> OpenAccepted / OpenRejected
  CheckOffer,  // check the path and limits, create the file or directory
               // -> EntryTaken / EntryRefused / EntrySettled (a directory)
  SendTake,
  SendRefuse,
  FinishEntries,    // verify and commit every file whose chunks are all stored after its
                    // FileDone -> EntrySettled later
  SendFileVerdict,  // and forget the entry (its temporary removed unless Good)
  SendResume,       // Resume{entry, offset}: the entry is taken from the offset
  SendHave,         // Have{entry, digest}; in a session the entry is settled Good
};

enum class ReceiverError : std::uint8_t {
  None,
  IllegalEvent,  // the event is not allowed in the current state
};

struct ReceiverTransition {
  ReceiverState next;
  ActionList<ReceiverAction> actions;
  ReceiverError error = ReceiverError::None;
};

[[nodiscard]] ReceiverTransition receiver_next(ReceiverState state, ReceiverEvent event);

// The states in which the sender waits on the receiver's own work (preparing the file,
// storing chunks, committing): there a version-2 receiver keeps the sender informed with
// Working messages (docs/PROTOCOL.md 7.3).
[[nodiscard]] bool receiver_owes_keepalive(ReceiverState state);

const char* to_string(ReceiverState);
const char* to_string(ReceiverEvent);
const char* to_string(ReceiverAction);

}  // namespace rdmax::proto
