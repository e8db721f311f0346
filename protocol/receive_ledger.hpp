#pragma once
// The receiver's half of the data-phase rules (docs/PROTOCOL.md 5.3-5.4), as pure
// bookkeeping: which slots the sender holds a credit for, and whether a Chunk obeys the
// rules. The driver (receiver/) asks it before it revokes a slot's key and hands the
// chunk to be stored, and again when a stored chunk's slot could be credited back.
//
// Per slot: Credited (the sender holds its credit: the receiver sent a Credit and has not
// received a Chunk for it since), Storing (a Chunk arrived; its bytes are being hashed and
// written), or Idle (neither: before its first credit, once every byte has arrived, or
// after Done).

#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/chunk_plan.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

enum class ChunkError : std::uint8_t {
  SlotOutOfRange,   // slot >= slot_count
  SlotNotCredited,  // the sender does not hold that slot's credit
  WrongOffset,      // offset != the bytes received so far
  WrongLength,      // length != min(slot_size, file_size - offset)
  PastEnd,          // every byte has arrived already (includes length 0)
};
const char* to_string(ChunkError);

class ReceiveLedger {
 public:
  enum class SlotState : std::uint8_t { Idle, Credited, Storing };

  ReceiveLedger() = default;
  // slot_count >= 1; slot_size >= 1.
  // `start`: the offset of a Resume (PROTOCOL.md 7.6), a multiple of slot_size: the bytes
  // before it count as received, and the first chunk must start there.
  ReceiveLedger(std::uint64_t file_size, std::uint32_t slot_size, std::uint32_t slot_count,
                std::uint64_t start = 0);

  // Marks the slot Credited: the driver is about to send its Credit. Only from Idle, and
  // only while some byte has not arrived and close() was not called (so an empty file gets
  // no Credit). Returns false (and changes nothing) otherwise or for a slot out of range.
  [[nodiscard]] bool grant(std::uint32_t slot);

  // Checks a Chunk against the rules. On success the slot becomes Storing and received()
  // advances by chunk.length; on failure nothing changes.
  [[nodiscard]] std::optional<ChunkError> accept_chunk(const Chunk& chunk);

  // The chunk in `slot` is stored: the slot becomes Idle. Returns true when the slot
  // should be credited back (some byte of the file has not arrived yet); the driver then
  // calls grant(). Returns false for a slot that was not Storing.
  bool stored(std::uint32_t slot);

  // Done arrived, or the connection ends: no slot is credited from now on (Credited slots
  // become Idle; Storing ones stay Storing until stored()).
  void close();

  SlotState state(std::uint32_t slot) const;
  std::uint32_t slot_count() const { return static_cast<std::uint32_t>(slots_.size()); }
  std::uint64_t received() const { return received_; }
  bool complete() const { return received_ == plan_.file_size; }
  std::uint32_t storing() const { return storing_; }  // slots whose chunk is being stored
  const ChunkPlan& plan() const { return plan_; }

 private:
  ChunkPlan plan_{};
  std::vector<SlotState> slots_;
  std::uint64_t received_ = 0;
  std::uint32_t storing_ = 0;
  bool closed_ = false;
};

}  // namespace rdmax::proto
