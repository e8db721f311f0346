#include "common/connection/sealed_transport.hpp"

namespace rdmax {

// Hands each delivery on, opened when the connection seals by then.
class SealedTransport::Opening final : public TransportSink {
 public:
  Opening(SealedTransport& owner, TransportSink& sink) : owner_(owner), sink_(sink) {}
  void on_received(Inbound inbound) override {
    sink_.on_received(owner_.opened(std::move(inbound)));
  }
  void on_send_completed(std::uint64_t tag) override { sink_.on_send_completed(tag); }
  void on_transport_failed(const std::string& why) override { sink_.on_transport_failed(why); }

 private:
  SealedTransport& owner_;
  TransportSink& sink_;
};

void SealedTransport::send(const proto::Message& message, std::uint16_t version,
                           std::uint64_t tag) {
  if (!seal_ || (peer_in_clear_ && std::holds_alternative<proto::Error>(message)))
    return wire().send(message, version, tag);
  wire().send(seal_->seal(message), version, tag);
}

void SealedTransport::poll(TransportSink& sink) {
  Opening opening(*this, sink);
  wire().poll(opening);
}

Inbound SealedTransport::opened(Inbound inbound) {
  auto* message = std::get_if<proto::Message>(&inbound.decoded);
  if (!seal_ || message == nullptr) return inbound;
  if (const auto* sealed = std::get_if<proto::Sealed>(message)) {
    auto inner = seal_->open(*sealed);
    if (auto* opened = std::get_if<proto::Message>(&inner)) {
      opened_any_ = true;
      inbound.decoded = std::move(*opened);
    } else {
      inbound.decoded = std::get<proto::DecodeFailure>(std::move(inner));
    }
    return inbound;
  }
  if (!opened_any_) {
    peer_in_clear_ = true;
    if (std::holds_alternative<proto::Error>(*message)) return inbound;
  }
  inbound.decoded =
      proto::DecodeFailure{proto::DecodeError::NotSealed,
                           std::string("a ") + proto::to_string(proto::type_of(*message)) +
                               " in clear on a sealed connection"};
  return inbound;
}

}  // namespace rdmax
