#include "protocol/seal.hpp"

#include <algorithm>
#include <iterator>

#include "protocol/byte_order.hpp"

namespace rdmax::proto {

std::string_view seal_label(SealPurpose purpose) {
  switch (purpose) {
    case SealPurpose::MessagesToReceiver:
      return "rdmax seal v2 messages s>r";
    case SealPurpose::MessagesToSender:
      return "rdmax seal v2 messages r>s";
    case SealPurpose::ChunksToReceiver:
      return "rdmax seal v2 chunks s>r";
  }
  return {};
}

SealNonce seal_nonce(std::uint64_t counter) {
  SealNonce nonce{};
  detail::ByteWriter w(std::span<std::uint8_t>(nonce).subspan(4));
  w.u64(counter);
  return nonce;
}

ChunkAad chunk_aad(std::uint32_t entry, std::uint64_t offset, std::uint32_t length) {
  ChunkAad aad{};
  detail::ByteWriter w(aad);
  w.u32(entry);
  w.u64(offset);
  w.u32(length);
  return aad;
}

std::array<std::uint8_t, kHeaderSize> sealed_header(std::size_t box_bytes) {
  std::array<std::uint8_t, kHeaderSize> header{};
  detail::ByteWriter w(header);
  w.u32(kMagic);
  w.u16(kVersion2);
  w.u16(static_cast<std::uint16_t>(MessageType::Sealed));
  w.u32(static_cast<std::uint32_t>(2 + box_bytes));  // Sealed's payload: u16 length, the box
  w.u32(0);
  return header;
}

bool ChunkCounters::take(std::uint64_t counter) {
  auto next = runs_.upper_bound(counter);  // the first run that starts above it
  if (next != runs_.begin()) {
    const auto before = std::prev(next);
    if (counter <= before->second) return false;  // seen
    if (before->second + 1 == counter) {          // extends the run below, and may join the next
      before->second = counter;
      if (next != runs_.end() && next->first == counter + 1) {
        before->second = next->second;
        runs_.erase(next);
      }
      return true;
    }
  }
  if (next != runs_.end() && next->first == counter + 1) {  // extends the run above downwards
    const std::uint64_t last = next->second;
    runs_.erase(next);
    runs_.emplace(counter, last);
    return true;
  }
  if (runs_.size() >= kMaxRuns) return false;
  runs_.emplace(counter, counter);
  return true;
}

HelloExtension seal_extension() {
  return {kExtensionSeal, std::string(1, static_cast<char>(kSealSuiteAes256Gcm))};
}

bool asks_to_seal(std::span<const HelloExtension> extensions) {
  return std::any_of(extensions.begin(), extensions.end(),
                     [](const HelloExtension& e) { return e.type == kExtensionSeal; });
}

}  // namespace rdmax::proto
