#pragma once
// The messages of a sealed connection (docs/PROTOCOL.md 7.11): a decorator between a driver
// and the wire that, once told to seal, seals every message the driver posts and opens every
// Sealed that arrives. From then on a message in clear, or a Sealed that does not open (one
// altered, replayed, reordered, dropped or injected: MessageSeal counts each way), reaches
// the driver as a DecodeFailure, which every driver treats as a protocol violation. Before
// that, messages pass unchanged, and a Sealed is the driver's to find out of place.
//
// The driver says when: right after the second Proof, on each side (the receiver once it
// posted its Proof, the sender once it checked it). A Sealed that arrives in the poll() that
// delivered that Proof is opened, since each delivery asks anew.
//
// A peer that sends in clear before anything sealed came from it may not seal at all: a
// receiver of a release before sealing ignored the ask (its Accept comes in clear), or a
// sender found our Proof wrong and ends the connection with an Error it has no key for (7.8).
// Its Error is its last word and reaches the driver as such; anything else in clear is still
// a NotSealed failure. Either way our own Error to such a peer goes in clear, the only form
// it can read; every other message stays sealed.

#include <optional>
#include <string>

#include "common/connection/transport_decorator.hpp"
#include "common/crypto/seal.hpp"

namespace rdmax {

class SealedTransport final : public TransportDecorator {
 public:
  using TransportDecorator::TransportDecorator;

  // From now on every message, each way, is sealed.
  void seal_from_now(const MessageSeal& seal) { seal_.emplace(seal); }
  bool sealing() const { return seal_.has_value(); }

  void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) override;
  void poll(TransportSink& sink) override;

 private:
  class Opening;
  Inbound opened(Inbound inbound);

  std::optional<MessageSeal> seal_;
  bool opened_any_ = false;     // a Sealed from the peer opened: it seals
  bool peer_in_clear_ = false;  // the peer sent in clear before it sealed anything
};

}  // namespace rdmax
