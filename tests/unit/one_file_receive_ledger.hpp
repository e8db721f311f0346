#pragma once
// The receiver's data-phase rules for one file (docs/PROTOCOL.md 5.3-5.4) as the receiver
// applies them: a session of one file entry in its ReceiveLedger, which is how the
// receiver serves a Hello (receiver/hello_edge.hpp). The version-1 view of that ledger, for
// the tests that pin the one-file rules (receive_ledger_test.cpp) and run them against the
// sender's one-file ledger (one_file_send_ledger.hpp; ledger_simulation_test.cpp,
// tests/fuzz/fuzz_ledgers.cpp): a Chunk is entry 0's FileChunk, Done closes it.

#include <cstdint>
#include <optional>

#include "protocol/chunk_plan.hpp"
#include "protocol/receive_ledger.hpp"
#include "protocol/wire.hpp"

namespace rdmax::test {

// The one-file names of the session ledger's chunk errors.
enum class ChunkError : std::uint8_t {
  SlotOutOfRange,
  SlotNotCredited,
  WrongOffset,
  WrongLength,
  PastEnd
};

inline const char* to_string(ChunkError e) {
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

class OneFileReceiveLedger {
 public:
  using SlotState = proto::ReceiveLedger::SlotState;

  OneFileReceiveLedger() = default;
  // `start`: a Resume's offset (PROTOCOL.md 7.6).
  OneFileReceiveLedger(std::uint64_t file_size, std::uint32_t slot_size, std::uint32_t slot_count,
                       std::uint64_t start = 0)
      : plan_{file_size, slot_size},
        ledger_(proto::Open{proto::DigestAlgorithm::WholeFileSha256, 0, 0, 1, file_size}, slot_size,
                slot_count) {
    proto::Offer offer;
    offer.size = file_size;
    offer.path = "f";
    (void)ledger_.offer(offer);
    ledger_.take(0, start);
  }

  [[nodiscard]] bool grant(std::uint32_t slot) { return ledger_.grant(slot); }
  [[nodiscard]] std::optional<ChunkError> accept_chunk(const proto::Chunk& c) {
    const auto error = ledger_.accept_chunk(proto::FileChunk{0, c.slot, c.offset, c.length});
    if (!error) return std::nullopt;
    using E = proto::ReceiveError;
    switch (*error) {
      case E::SlotOutOfRange:
        return ChunkError::SlotOutOfRange;
      case E::SlotNotCredited:
        return ChunkError::SlotNotCredited;
      case E::WrongOffset:
        return ChunkError::WrongOffset;
      case E::WrongLength:
        return ChunkError::WrongLength;
      default:
        return ChunkError::PastEnd;
    }
  }
  bool stored(std::uint32_t slot) { return ledger_.stored(slot, 0); }
  void close() { ledger_.close(); }

  SlotState state(std::uint32_t slot) const { return ledger_.slot_state(slot); }
  std::uint32_t slot_count() const { return ledger_.slot_count(); }
  std::uint64_t received() const {
    const auto* entry = ledger_.entry(0);
    return entry != nullptr ? entry->received : 0;
  }
  bool complete() const { return received() == plan_.file_size; }
  std::uint32_t storing() const { return ledger_.storing(); }
  const proto::ChunkPlan& plan() const { return plan_; }

 private:
  proto::ChunkPlan plan_{};
  proto::ReceiveLedger ledger_;
};

}  // namespace rdmax::test
