#include "protocol/receive_ledger.hpp"

#include <algorithm>

namespace rdmax::proto {

const char* to_string(ChunkError e) {
  switch (e) {
    case ChunkError::SlotOutOfRange:
      return "SlotOutOfRange";
    case ChunkError::SlotNotCredited:
      return "SlotNotCredited";
    case ChunkError::WrongOffset:
      return "WrongOffset";
    case ChunkError::WrongLength:
      return "WrongLength";
    case ChunkError::PastEnd:
      return "PastEnd";
  }
  return "?";
}

ReceiveLedger::ReceiveLedger(std::uint64_t file_size, std::uint32_t slot_size,
                             std::uint32_t slot_count, std::uint64_t start)
    : plan_{file_size, slot_size},
      slots_(slot_count, SlotState::Idle),
      received_(std::min(start, file_size)) {}

bool ReceiveLedger::grant(std::uint32_t slot) {
  // Once every byte has arrived (an empty file: from the start) no slot is credited.
  if (closed_ || complete() || slot >= slots_.size()) return false;
  if (slots_[slot] != SlotState::Idle) return false;
  slots_[slot] = SlotState::Credited;
  return true;
}

std::optional<ChunkError> ReceiveLedger::accept_chunk(const Chunk& chunk) {
  if (chunk.slot >= slots_.size()) return ChunkError::SlotOutOfRange;
  if (complete()) return ChunkError::PastEnd;
  if (slots_[chunk.slot] != SlotState::Credited) return ChunkError::SlotNotCredited;
  if (chunk.offset != received_) return ChunkError::WrongOffset;
  // received_ is a whole number of chunks here, so this is plan_.length(received_ /
  // chunk_size) without the division (chunk_size 0 would divide by zero) and without ever
  // forming offset + length, which could overflow near 2^64.
  const std::uint64_t left = plan_.file_size - received_;
  const std::uint64_t expected = std::min<std::uint64_t>(plan_.chunk_size, left);
  if (chunk.length == 0 || chunk.length != expected) return ChunkError::WrongLength;
  slots_[chunk.slot] = SlotState::Storing;
  ++storing_;
  received_ += chunk.length;  // <= file_size: length <= file_size - received_
  return std::nullopt;
}

bool ReceiveLedger::stored(std::uint32_t slot) {
  if (slot >= slots_.size() || slots_[slot] != SlotState::Storing) return false;
  slots_[slot] = SlotState::Idle;
  --storing_;
  return !complete() && !closed_;
}

void ReceiveLedger::close() {
  closed_ = true;
  std::replace(slots_.begin(), slots_.end(), SlotState::Credited, SlotState::Idle);
}

ReceiveLedger::SlotState ReceiveLedger::state(std::uint32_t slot) const {
  return slot < slots_.size() ? slots_[slot] : SlotState::Idle;
}

}  // namespace rdmax::proto
