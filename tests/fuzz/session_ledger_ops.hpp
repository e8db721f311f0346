#pragma once
// The operations fuzz_session_ledgers reads, one byte each (modulo kSessionLedgerOps, or
// kStripeOps): the one list, for the fuzzer and for the seeds make_seeds.cpp writes.

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

// The first byte of an input that plays one file striped over two connections
// (session_stripes.hpp) instead of one session.
inline constexpr std::uint8_t kStripesWorld = 0xA7;

// Its operations: each one tag byte, a side byte (0 the lead, 1 the member), its arguments.
enum StripeOp : std::uint8_t {
  // The protocol.
  LeadOffers,  // the striped Offer, taken (or resumed) at once
  MemberJoins,
  GrantSlot,
  SendAChunk,
  CompleteASend,
  StoreAChunk,
  MemberDone,
  LeadDone,
  // Hostile.
  ChunkAnywhere,
  EarlyLeadDone,
  AnyJoin,
  MemberLost,
  kStripeOps
};

}  // namespace rdmax::fuzz
