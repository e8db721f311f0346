#include "sender/version1_transport.hpp"

#include <stdexcept>
#include <string>

namespace rdmax::sender {

namespace {
[[noreturn]] void cannot_say(const char* what) {
  throw std::logic_error(std::string("version 1 cannot carry ") + what);
}
}  // namespace

void Version1Transport::send(const proto::Message& message, std::uint16_t, std::uint64_t tag) {
  using namespace proto;
  if (const auto* open = std::get_if<Open>(&message)) {
    if (open->digest_algorithm != DigestAlgorithm::WholeFileSha256 || open->entry_count != 1)
      cannot_say("a session of more than one file, or a digest but the whole-file SHA-256");
    if (offer_.entry != 0 || offer_.kind != EntryKind::File)
      cannot_say("an entry but one file, entry 0");
    if (offer_.digest_at_end) cannot_say("a file offered without its digest (it has no 7.9)");
    Hello hello;
    hello.file_size = offer_.size;
    hello.digest = offer_.digest;
    hello.name = offer_.path;
    return wire().send(hello, kVersion1, tag);
  }
  if (const auto* offer = std::get_if<Offer>(&message)) {
    if (*offer != offer_) cannot_say("an entry but the file its Hello named");
    offered_ = true;
    return;
  }
  if (const auto* chunk = std::get_if<FileChunk>(&message))
    return wire().send(Chunk{chunk->offset, chunk->length, chunk->slot}, kVersion1, tag);
  if (const auto* done = std::get_if<FileDone>(&message))
    return wire().send(Done{done->total_bytes}, kVersion1, tag);
  // After a verdict other than Good a version-1 sender says nothing more: its receiver is
  // disconnecting (PROTOCOL.md 4.3). The session driver's Bye is its own way to end.
  if (std::holds_alternative<Bye>(message) && !good_) return;
  if (std::holds_alternative<Id>(message) || std::holds_alternative<Bye>(message) ||
      std::holds_alternative<Error>(message))
    return wire().send(message, kVersion1, tag);
  cannot_say(to_string(type_of(message)));
}

// What the wire delivers, as the session driver expects it (version 2, entry 0).
class Version1Transport::Translator final : public TransportSink {
 public:
  Translator(TransportSink& driver, const bool& offered, bool& good)
      : driver_(driver), offered_(offered), good_(good) {}

  void on_received(Inbound inbound) override {
    using namespace proto;
    if (inbound.version != kVersion1) return driver_.on_received(std::move(inbound));
    auto* message = std::get_if<Message>(&inbound.decoded);
    if (message == nullptr) return driver_.on_received(std::move(inbound));
    if (const auto* verdict = std::get_if<Verdict>(message)) {
      good_ = verdict->code == VerdictCode::Good;
      return deliver(FileVerdict{0, verdict->code, verdict->received_digest});
    }
    const bool accepted = std::holds_alternative<Accept>(*message);
    if (std::holds_alternative<Accept>(*message) || std::holds_alternative<Credit>(*message) ||
        std::holds_alternative<Reject>(*message) || std::holds_alternative<Secret>(*message) ||
        std::holds_alternative<Denied>(*message) || std::holds_alternative<Error>(*message))
      deliver(std::move(*message));
    else
      return driver_.on_received(std::move(inbound));  // misplaced: the driver judges it
    // A version-1 receiver checked the file before its Accept: it is taken, once the driver,
    // starting its session on the Accept, has offered it.
    if (accepted && offered_) deliver(Take{0});
  }
  void on_send_completed(std::uint64_t tag) override { driver_.on_send_completed(tag); }
  void on_transport_failed(const std::string& why) override { driver_.on_transport_failed(why); }

 private:
  void deliver(proto::Message message) {
    driver_.on_received({proto::kVersion2, std::move(message)});
  }
  TransportSink& driver_;
  const bool& offered_;
  bool& good_;
};

void Version1Transport::poll(TransportSink& sink) {
  Translator translator(sink, offered_, good_);
  wire().poll(translator);
}

}  // namespace rdmax::sender
