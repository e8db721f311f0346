#pragma once
// rdma-send --inject-corruption OFFSET (testing): the byte at OFFSET of every file that long
// is flipped on its way to the wire, after it was read, hashed and sealed, so that the
// receiver must catch it: a sealed chunk that does not open, or a file whose digest does not
// match (tests/e2e/sealing.sh, transfer.sh). A decorator between the driver and
// SealedTransport (sender/connection.cpp), so that it sees the FileChunks in clear: a chunk's
// RDMA WRITE is held until the FileChunk that follows it (SendWindow posts them in that
// order) says where in its file the chunk lies; if it covers OFFSET, the byte is flipped in
// the WRITE's source, and both go on, in order. Every other message, and a WRITE that no
// FileChunk follows, goes on unchanged and in order.
//
// What it may alter: only memory it allocated for the driver, the staging buffer; a chunk
// sent from its file's mapping (--zero-copy) cannot be, and the window copies when asked to
// corrupt (SendWindow::fit). And nothing may read a chunk once its WRITE is posted: a file
// whose digest comes at the end is hashed from its slot on a worker while its chunks go out,
// so a flip would race with that hash. rdma-send turns the digest at the end off with
// --inject-corruption; this refuses the two together.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/connection/transport_decorator.hpp"
#include "sender/sender_settings.hpp"

namespace rdmax::sender {

class CorruptingTransport final : public TransportDecorator {
 public:
  // Flips the byte at settings.inject_corruption. Throws std::logic_error without one, or
  // with settings.digest_at_end.
  CorruptingTransport(Transport& wire, const SenderSettings& settings);

  void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) override;
  void write(const Registration& source, std::span<const std::uint8_t> local,
             std::uint64_t remote_addr, std::uint32_t rkey) override;
  std::span<std::uint8_t> allocate(std::size_t bytes) override;

 private:
  struct HeldWrite {
    Registration source;
    std::span<const std::uint8_t> local;
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0;
  };
  void corrupt(const proto::FileChunk& chunk, const HeldWrite& write);
  void post_held();

  std::uint64_t offset_;
  std::vector<std::span<std::uint8_t>> allocated_;  // what the driver copies chunks into
  std::optional<HeldWrite> held_;
};

}  // namespace rdmax::sender
