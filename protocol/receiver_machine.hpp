#pragma once
// The receiver's per-connection state machine: pure, no I/O. The driver (receiver/)
// turns CM events, completions, timers and the results of its own work into events,
// and carries out the actions each transition returns, in order.
//
// Lifecycle: AwaitHello -> CheckingHello -> Receiving -> Verifying -> AwaitId
//            -> CheckingId -> Closing -> Closed. Any failure leads to Closing (a goodbye
//            is possible) or Closed (the transport is gone). See docs/PROTOCOL.md, 4.

#include <cstdint>

#include "protocol/action_list.hpp"

namespace rdmax::proto {

enum class ReceiverState : std::uint8_t {
  AwaitHello,     // connected; waiting for the sender's offer
  CheckingHello,  // the driver validates the offer (name, size, space, existing file)
  Receiving,      // Accept sent; chunks arrive, each stored and credited back
  Verifying,      // Done received; the driver checks the hash and commits the file
  AwaitId,        // good verdict sent; the sender may present an id or say bye
  CheckingId,     // the driver looks the id up
  Closing,        // disconnecting: sends drain, then rdma_disconnect, then DISCONNECTED
  Closed,         // resources released; the connection is gone
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
  // Results of the driver's own work.
  HelloAccepted,
  HelloRejected,
  ChunkStored,
  VerifiedGood,
  VerifiedBad,  // hash or size mismatch, or the file could not be stored
  IdKnown,
  IdUnknown,
  IdAttemptsExhausted,
  // Transport and environment.
  ProtocolViolation,  // undecodable message, or a chunk that breaks the data rules
  Timeout,
  TransportFailed,  // completion error: the QP is unusable
  Disconnected,     // DISCONNECTED (or the peer vanished) seen by the CM
  ShuttingDown,     // SIGINT/SIGTERM: abandon the transfer cleanly
};

enum class ReceiverAction : std::uint8_t {
  CheckHello,   // validate the offer -> HelloAccepted / HelloRejected
  SendAccept,   // register the region, advertise it
  SendReject,   // with the reason the check produced
  StoreChunk,   // hash + write the chunk -> ChunkStored (or ProtocolViolation/VerifiedBad)
  SendCredit,   // give the slot back to the sender
  Verify,       // finish hash, compare, fsync + rename -> VerifiedGood / VerifiedBad
  SendVerdict,  // the verdict the driver computed
  LookupId,     // -> IdKnown / IdUnknown / IdAttemptsExhausted
  SendSecret,
  SendDenied,
  SendError,    // an Error message naming why we abort (protocol violation, timeout...)
  DiscardFile,  // remove the temporary; nothing appears under the final name
  Disconnect,   // let posted sends drain, then rdma_disconnect
  Release,      // destroy QP, MRs, CQ, PD, cm_id
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

const char* to_string(ReceiverState);
const char* to_string(ReceiverEvent);
const char* to_string(ReceiverAction);

}  // namespace rdmax::proto
