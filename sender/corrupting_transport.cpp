#include "sender/corrupting_transport.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>

namespace rdmax::sender {

CorruptingTransport::CorruptingTransport(Transport& wire, const SenderSettings& settings)
    : TransportDecorator(wire), offset_(settings.inject_corruption.value_or(0)) {
  if (!settings.inject_corruption)
    throw std::logic_error("--inject-corruption: no offset to corrupt");
  if (settings.digest_at_end)
    throw std::logic_error(
        "--inject-corruption with the digest at the end: the flip would race with the hash of "
        "the chunk");
}

std::span<std::uint8_t> CorruptingTransport::allocate(std::size_t bytes) {
  const auto memory = wire().allocate(bytes);
  allocated_.push_back(memory);
  return memory;
}

void CorruptingTransport::write(const Registration& source, std::span<const std::uint8_t> local,
                                std::uint64_t remote_addr, std::uint32_t rkey) {
  post_held();  // a WRITE no FileChunk followed: as it was
  held_ = HeldWrite{source, local, remote_addr, rkey};
}

void CorruptingTransport::send(const proto::Message& message, std::uint16_t version,
                               std::uint64_t tag) {
  if (held_) {
    if (const auto* chunk = std::get_if<proto::FileChunk>(&message)) corrupt(*chunk, *held_);
    post_held();
  }
  wire().send(message, version, tag);
}

void CorruptingTransport::corrupt(const proto::FileChunk& chunk, const HeldWrite& write) {
  if (offset_ < chunk.offset || offset_ - chunk.offset >= chunk.length) return;
  if (write.local.size() != chunk.length)
    throw std::logic_error("--inject-corruption: a FileChunk that does not follow its WRITE");
  const std::uint8_t* byte = write.local.data() + (offset_ - chunk.offset);
  for (const auto memory : allocated_) {
    if (byte < memory.data() || byte >= memory.data() + memory.size()) continue;
    memory[static_cast<std::size_t>(byte - memory.data())] ^= 0xFF;
    spdlog::warn("testing: corrupted the byte at offset {} of entry {}", offset_, chunk.entry);
    return;
  }
  throw std::logic_error("--inject-corruption: a chunk not copied through a buffer of ours");
}

void CorruptingTransport::post_held() {
  if (!held_) return;
  const HeldWrite write = *held_;
  held_.reset();
  wire().write(write.source, write.local, write.remote_addr, write.rkey);
}

}  // namespace rdmax::sender
