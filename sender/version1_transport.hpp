#pragma once
// Version 1 at the edge (docs/DESIGN.md, "Version 1"): a receiver that speaks only protocol version
// 1 under the one session driver (sender/connection.hpp). The driver speaks a session of one file
// entry; this decorator of the transport seam writes and reads version 1 on the wire
// (docs/PROTOCOL.md sections 3-5), so that no second driver exists for it:
//
//   driver (version 2)            wire (version 1)
//   Open                    ->    Hello: the one file's name, size and SHA-256, from the
//                                 Offer of entry 0 given at construction (version 1 names
//                                 the file in its first message; a session offers it only
//                                 after the Accept)
//   Offer(0)                ->    nothing (the Hello said it; it must be the one given)
//   FileChunk(0, ...)       ->    Chunk
//   FileDone(0)             ->    Done
//   Id, Error               ->    the same
//   Bye                     ->    the same after a good verdict; nothing after any other
//                                 (the version-1 receiver disconnects then, 4.3)
//   Accept, Take(0)         <-    Accept
//   Credit                  <-    Credit
//   FileVerdict(0)          <-    Verdict
//   Reject, Secret, Denied, Error  <-  the same
//
// What the driver is given reads as version 2; anything else that arrives is passed on as
// it is, for the driver to find misplaced. A session of more than one entry, a directory or
// another digest cannot be said in version 1: posting one is a logic error.

#include <utility>

#include "common/connection/transport_decorator.hpp"
#include "protocol/wire.hpp"

namespace rdmax::sender {

class Version1Transport final : public TransportDecorator {
 public:
  // `offer`: the Offer the driver will make of the session's one entry (entry 0).
  Version1Transport(Transport& wire, proto::Offer offer)
      : TransportDecorator(wire), offer_(std::move(offer)) {}

  void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) override;
  void poll(TransportSink& sink) override;

 private:
  class Translator;

  proto::Offer offer_;
  bool offered_ = false;  // the driver offered entry 0: an Accept takes it
  bool good_ = false;     // the receiver's Verdict was Good: a Bye may follow it
};

}  // namespace rdmax::sender
