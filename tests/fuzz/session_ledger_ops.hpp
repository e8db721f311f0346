#pragma once
// The operations fuzz_session_ledgers reads, one byte each (modulo kSessionLedgerOps): the
// one list, for the fuzzer and for the seeds make_seeds.cpp writes.

#include <cstdint>

namespace rdmax::fuzz {

enum SessionLedgerOp : std::uint8_t {
  // Hostile: a message decoded from raw bytes, a driver call with any values.
  RawMessage,
  AnyReceiverCall,
  AnySenderCall,
  Close,
  ForbidDirectories,
  // The protocol, in any interleaving.
  SendOffer,
  SendChunk,
  CompleteChunk,
  SendFileDone,
  DeliverToReceiver,
  DeliverToSender,
  GrantAll,
  Decide,
  Store,
  Verify,
  FailFile,
  AllowDirectories,
  kSessionLedgerOps
};

}  // namespace rdmax::fuzz
