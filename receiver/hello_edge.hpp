#pragma once
// A Hello served as entry 0 of a session (docs/DESIGN.md, "Version 1"). A sender
// that names its one file with a Hello (every version-1 sender, and version-2 senders older
// than sessions) is served by the receiver's one driver (receiver/connection.hpp), which
// speaks only sessions. This decorator of the transport seam reads the Hello flow off the
// wire as a session of one file entry and writes the session's answers back as the Hello
// flow (PROTOCOL.md 4, 7.2-7.3, 7.6), so that the wire carries what it always carried:
//
//   wire (Hello flow)          driver (session)
//   Hello                ->    Open (one entry: the file's size, digest algorithm,
//                              keepalive, extensions) and Offer(0) (the name as its path)
//   Chunk, Done          ->    FileChunk(0, ...), FileDone(0)
//   Id, Bye, Error       ->    the same
//   Accept               <-    held back until entry 0 is checked: a Hello's Accept says
//                              that its file was taken
//   Take(0)              <-    the held Accept
//   Resume(0)            <-    Resume, then the held Accept (the order 7.6 gives)
//   Have(0)              <-    Have, and no Accept
//   Refuse(0)            <-    Reject; then the driver reads a Bye (4.3: the receiver
//                              ends a rejected Hello's connection)
//   FileVerdict(0)       <-    Verdict; after one other than Good, the driver reads a Bye
//   Credit               <-    the same, until the verdict
//   Reject, Secret, Denied, Error, Working  <-  the same (Working: version 2 only)
//
// A connection whose first message is not a Hello is a session: everything passes through.
// In the Hello flow, what the driver is given reads as version 2; a session message from the
// sender, or a message of another version than its Hello's, is given as undecodable (the
// driver ends the connection for it).

#include <cstdint>
#include <optional>

#include "common/connection/transport_decorator.hpp"
#include "protocol/receiver_rules.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {

// What the flow the sender speaks means for the driver: the edge maps it, the driver reads
// it, and never asks which flow it serves.
struct FlowTerms {
  const char* first_message = "Open";  // in logs and refusals
  const char* what = "a session";      // what a rejection's log line says was rejected
  // How an entry is named: a Hello names its one file by a plain name in the directory itself
  // (PROTOCOL.md 3.1); an Offer by a relative path.
  proto::OfferedName names = proto::OfferedName::RelativePath;
  bool offers_metadata = true;  // an Offer's mode and time apply; a Hello has none (4.2)
  // --senders: a Hello cannot carry a key, so its sender is refused with this (version 1 has
  // no AuthRequired: UnsupportedVersion is the one reason it knows for "not in this version").
  std::optional<proto::RejectReason> keyless_refusal;
  const char* keyless_text = "";
  // A session's Working says Storing throughout (7.3); a Hello's names what its one file
  // waits for: being created, stored or committed.
  bool working_names_phase = false;
};

class HelloEdge final : public TransportDecorator {
 public:
  explicit HelloEdge(Transport& wire) : TransportDecorator(wire) {}

  // Known once the first message arrived (the driver reads them as it checks the Open).
  FlowTerms terms() const;

  void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) override;
  void poll(TransportSink& sink) override;

 private:
  class Translator;
  enum class Flow : std::uint8_t { Unknown, Session, Hello };

  Flow flow_ = Flow::Unknown;
  std::uint16_t wire_version_ = 0;     // the Hello's: every answer goes in it
  std::optional<proto::Accept> held_;  // the Accept, until entry 0 is checked
  bool settled_ = false;               // entry 0's verdict or refusal went: no more Credits
  bool bye_pending_ = false;           // the Hello flow ended here: the driver reads a Bye
};

}  // namespace rdmax::receiver
