#pragma once
// Not used by rdma-send any more (its one driver keeps a SessionSendLedger): kept only as
// ReceiveLedger's counterpart in the ledger simulation and fuzzer, until the receiver serves
// a Hello as entry 0 of a session and both go (docs/DESIGN.md, step 4).
//
// The sender's half of the data-phase rules (docs/PROTOCOL.md 5.2-5.3), as pure
// bookkeeping: which slots it holds a credit for (and the rkey each must be written with),
// which slots still have a Chunk SEND in flight, and which chunk goes next.
//
// Per slot: credited (a Credit arrived and no Chunk has been sent for it since) and busy
// (our Chunk SEND for it has not completed locally). A Credit may arrive while the slot is
// still busy (the receiver stored the chunk before our SEND's completion was polled): the
// slot is then credited but not used until it is no longer busy.

#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/chunk_plan.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

enum class CreditError : std::uint8_t {
  SlotOutOfRange,  // slot >= Accept.slot_count
  AlreadyHeld,     // the sender already holds that slot's credit
};
const char* to_string(CreditError);

class SendLedger {
 public:
  // One chunk to RDMA WRITE now, then announce with Chunk{offset, length, slot}.
  struct Planned {
    std::uint32_t slot = 0;
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    std::uint64_t remote_addr = 0;  // Accept.region_addr + slot * slot_size
    std::uint32_t rkey = 0;         // from the slot's latest Credit
    bool operator==(const Planned&) const = default;
  };

  SendLedger() = default;
  // The sender writes at most `max_active_slots` slots (>= 1, 0 is taken as 1; the
  // lowest-numbered ones, and no more than there are chunks, so none for an empty file);
  // credits for the others are recorded, never used.
  // `start`: a Resume's offset (a multiple of slot_size): chunks before it are not sent, and
  // bytes_sent() counts only the chunks that are.
  SendLedger(std::uint64_t file_size, const Accept& accept, std::uint32_t max_active_slots,
             std::uint64_t start = 0);

  // A Credit arrived. On success the slot is credited with that rkey; on failure nothing
  // changes. Valid in any state of the data phase and after Done (trailing credits).
  [[nodiscard]] std::optional<CreditError> credit(const Credit& credit);

  // The next chunk to send, if a chunk remains and an active slot is credited and not busy
  // (lowest slot first). The slot becomes uncredited and busy; the chunk counts as sent.
  [[nodiscard]] std::optional<Planned> next();

  // Our Chunk SEND for `slot` completed: the slot is no longer busy; returns the length of
  // that chunk (0 if the slot was not busy).
  std::uint32_t completed(std::uint32_t slot);
  // The file offset of the chunk in flight in a busy slot (0 otherwise).
  std::uint64_t offset_in_flight(std::uint32_t slot) const;

  // Every chunk was handed out by next() and every one of them completed.
  bool all_done() const;
  std::uint64_t bytes_sent() const { return bytes_sent_; }            // handed out by next()
  std::uint64_t bytes_completed() const { return bytes_completed_; }  // completed()
  std::uint32_t active_slots() const { return active_slots_; }
  std::uint32_t slot_count() const { return static_cast<std::uint32_t>(credited_.size()); }
  bool credited(std::uint32_t slot) const;
  bool busy(std::uint32_t slot) const;
  const ChunkPlan& plan() const { return plan_; }

 private:
  ChunkPlan plan_{};
  std::uint64_t region_addr_ = 0;
  std::uint32_t active_slots_ = 0;
  std::vector<bool> credited_;
  std::vector<bool> busy_;
  std::vector<std::uint32_t> rkey_;
  std::vector<std::uint32_t> length_;  // of the chunk in flight in each busy slot
  std::vector<std::uint64_t> offset_;  // and its file offset
  std::uint64_t next_chunk_ = 0;
  std::uint64_t bytes_sent_ = 0;
  std::uint64_t bytes_completed_ = 0;
  std::uint32_t busy_count_ = 0;
};

}  // namespace rdmax::proto
