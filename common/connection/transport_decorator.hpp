#pragma once
// A Transport that adds something to another one, the wire: what it does not override goes
// to the wire unchanged. The version-1 edges are decorators (sender/version1_transport.hpp,
// receiver/hello_edge.hpp): they translate the control messages both ways (send() and what
// poll() delivers) and leave memory, RDMA WRITEs and the connection's end alone.

#include "common/connection/transport.hpp"

namespace rdmax {

class TransportDecorator : public Transport {
 public:
  explicit TransportDecorator(Transport& wire) : wire_(wire) {}

  void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) override {
    wire_.send(message, version, tag);
  }
  std::uint32_t sends_in_flight() const override { return wire_.sends_in_flight(); }
  void write(const Registration& source, std::span<const std::uint8_t> local,
             std::uint64_t remote_addr, std::uint32_t rkey) override {
    wire_.write(source, local, remote_addr, rkey);
  }
  Registration register_memory(std::span<std::uint8_t> memory, Access access) override {
    return wire_.register_memory(memory, access);
  }
  void deregister(const Registration& registration) override { wire_.deregister(registration); }
  std::span<std::uint8_t> allocate(std::size_t bytes) override { return wire_.allocate(bytes); }
  void poll(TransportSink& sink) override { wire_.poll(sink); }
  void disconnect() noexcept override { wire_.disconnect(); }
  void shut_down() noexcept override { wire_.shut_down(); }

 protected:
  Transport& wire() { return wire_; }

 private:
  Transport& wire_;
};

}  // namespace rdmax
