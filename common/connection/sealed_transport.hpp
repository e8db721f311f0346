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
};

}  // namespace rdmax
