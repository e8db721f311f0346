#include "receiver/hello_edge.hpp"

#include <stdexcept>
#include <string>

namespace rdmax::receiver {

namespace {
using namespace proto;

// The session of one file entry a Hello stands for.
Open open_for(const Hello& hello) {
  return Open{hello.digest_algorithm, hello.keepalive_ms, hello.chunk_size_hint, 1,
              hello.file_size,        hello.extensions};
}
Offer offer_for(const Hello& hello) {
  Offer offer;
  offer.entry = 0;
  offer.kind = EntryKind::File;
  offer.size = hello.file_size;
  offer.digest = hello.digest;
  offer.path = hello.name;
  return offer;
}
}  // namespace

FlowTerms HelloEdge::terms() const {
  if (flow_ != Flow::Hello) return {};
  FlowTerms hello;
  hello.first_message = "Hello";
  hello.what = "a Hello";
  hello.names = OfferedName::FileName;
  hello.offers_metadata = false;
  hello.working_names_phase = true;
  if (wire_version_ == kVersion1) {
    hello.keyless_refusal = RejectReason::UnsupportedVersion;
    hello.keyless_text =
        "this receiver admits only senders with a key, which protocol version 1 cannot carry: "
        "send with an rdma-send that has --key-file";
  } else {
    hello.keyless_refusal = RejectReason::AuthRequired;
    hello.keyless_text =
        "this receiver admits only senders with a key, which a Hello cannot carry: open a "
        "session (Open) with a sender key (rdma-send --key-file)";
  }
  return hello;
}

void HelloEdge::send(const Message& message, std::uint16_t version, std::uint64_t tag) {
  if (flow_ != Flow::Hello) return wire().send(message, version, tag);
  const std::uint16_t v = wire_version_;
  if (const auto* accept = std::get_if<Accept>(&message)) {
    held_ = *accept;
    return;
  }
  if (std::holds_alternative<Take>(message)) {
    if (held_) wire().send(*held_, v, tag);
    held_.reset();
    return;
  }
  if (std::holds_alternative<Resume>(message)) {
    wire().send(message, v, tag);
    if (held_) wire().send(*held_, v, tag);
    held_.reset();
    return;
  }
  if (std::holds_alternative<Have>(message)) {
    held_.reset();
    settled_ = true;
    return wire().send(message, v, tag);
  }
  if (const auto* refuse = std::get_if<Refuse>(&message)) {
    held_.reset();
    settled_ = bye_pending_ = true;
    return wire().send(Reject{refuse->reason, refuse->text}, v, tag);
  }
  if (const auto* verdict = std::get_if<FileVerdict>(&message)) {
    settled_ = true;
    bye_pending_ = verdict->code != VerdictCode::Good;
    return wire().send(Verdict{verdict->code, verdict->received_digest}, v, tag);
  }
  if (std::holds_alternative<Credit>(message)) {
    if (!settled_) wire().send(message, v, tag);
    return;
  }
  if (std::holds_alternative<Working>(message)) {
    if (v >= kVersion2) wire().send(message, v, tag);
    return;
  }
  if (std::holds_alternative<Reject>(message) || std::holds_alternative<Secret>(message) ||
      std::holds_alternative<Denied>(message) || std::holds_alternative<Error>(message))
    return wire().send(message, v, tag);
  throw std::logic_error(std::string("the Hello flow cannot carry ") + to_string(type_of(message)));
}

// What the wire delivers, as the session driver expects it.
class HelloEdge::Translator final : public TransportSink {
 public:
  Translator(HelloEdge& edge, TransportSink& driver) : edge_(edge), driver_(driver) {}

  void on_received(Inbound inbound) override {
    auto* message = std::get_if<Message>(&inbound.decoded);
    if (edge_.flow_ == Flow::Unknown) {
      const auto* hello = message != nullptr ? std::get_if<Hello>(message) : nullptr;
      if (hello == nullptr) {
        edge_.flow_ = Flow::Session;
      } else {
        edge_.flow_ = Flow::Hello;
        edge_.wire_version_ = inbound.version;
        deliver(open_for(*hello));
        return deliver(offer_for(*hello));
      }
    }
    if (edge_.flow_ == Flow::Session || message == nullptr)
      return driver_.on_received(std::move(inbound));
    if (inbound.version != edge_.wire_version_) {
      return undecodable(DecodeError::BadVersion, "a version-" + std::to_string(inbound.version) +
                                                      " message after a version-" +
                                                      std::to_string(edge_.wire_version_) +
                                                      " Hello");
    }
    if (const auto* chunk = std::get_if<Chunk>(message))
      return deliver(FileChunk{0, chunk->slot, chunk->offset, chunk->length});
    if (const auto* done = std::get_if<Done>(message))
      return deliver(FileDone{0, done->total_bytes});
    if (type_of(*message) >= MessageType::Open) {
      return undecodable(DecodeError::BadType, std::string(to_string(type_of(*message))) +
                                                   " in a transfer begun by a Hello");
    }
    deliver(std::move(*message));  // Id, Bye, Error; anything else the driver finds misplaced
  }
  void on_send_completed(std::uint64_t tag) override { driver_.on_send_completed(tag); }
  void on_transport_failed(const std::string& why) override { driver_.on_transport_failed(why); }

 private:
  void deliver(Message message) { driver_.on_received({kVersion2, std::move(message)}); }
  void undecodable(DecodeError error, std::string detail) {
    driver_.on_received({kVersion2, DecodeFailure{error, std::move(detail)}});
  }
  HelloEdge& edge_;
  TransportSink& driver_;
};

void HelloEdge::poll(TransportSink& sink) {
  if (bye_pending_) {
    bye_pending_ = false;
    sink.on_received({kVersion2, Bye{}});
  }
  Translator translator(*this, sink);
  wire().poll(translator);
}

}  // namespace rdmax::receiver
