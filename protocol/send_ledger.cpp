#include "protocol/send_ledger.hpp"

#include <algorithm>

namespace rdmax::proto {

const char* to_string(CreditError e) {
  switch (e) {
    case CreditError::SlotOutOfRange:
      return "SlotOutOfRange";
    case CreditError::AlreadyHeld:
      return "AlreadyHeld";
  }
  return "?";
}

SendLedger::SendLedger(std::uint64_t file_size, const Accept& accept,
                       std::uint32_t max_active_slots, std::uint64_t start)
    : plan_{file_size, accept.slot_size},
      region_addr_{accept.region_addr},
      credited_(accept.slot_count, false),
      busy_(accept.slot_count, false),
      rkey_(accept.slot_count, 0),
      length_(accept.slot_count, 0),
      offset_(accept.slot_count, 0) {
  // max_active_slots 0 breaks the precondition; taken as 1 so that a non-empty file can
  // still be sent. No more active slots than chunks: an empty file has none.
  const std::uint32_t wanted = std::min(accept.slot_count, std::max(max_active_slots, 1U));
  // A resume (PROTOCOL.md 7.6) starts at a chunk boundary; the driver checked it is one.
  if (accept.slot_size > 0) next_chunk_ = std::min(start / accept.slot_size, plan_.chunk_count());
  active_slots_ = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(wanted, plan_.chunk_count() - next_chunk_));
}

std::optional<CreditError> SendLedger::credit(const Credit& credit) {
  if (credit.slot >= credited_.size()) return CreditError::SlotOutOfRange;
  if (credited_[credit.slot]) return CreditError::AlreadyHeld;
  credited_[credit.slot] = true;
  rkey_[credit.slot] = credit.rkey;
  return std::nullopt;
}

std::optional<SendLedger::Planned> SendLedger::next() {
  if (next_chunk_ >= plan_.chunk_count()) return std::nullopt;
  for (std::uint32_t slot = 0; slot < active_slots_; ++slot) {
    if (!credited_[slot] || busy_[slot]) continue;
    Planned p;
    p.slot = slot;
    p.offset = plan_.offset(next_chunk_);
    p.length = plan_.length(next_chunk_);
    // slot * slot_size < 2^64 (both are 32-bit); the sum wraps only for a region the
    // receiver could not have registered, and unsigned wrap-around is defined.
    p.remote_addr = region_addr_ + std::uint64_t{slot} * plan_.chunk_size;
    p.rkey = rkey_[slot];
    credited_[slot] = false;
    busy_[slot] = true;
    length_[slot] = p.length;
    offset_[slot] = p.offset;
    ++busy_count_;
    ++next_chunk_;
    bytes_sent_ += p.length;
    return p;
  }
  return std::nullopt;
}

std::uint32_t SendLedger::completed(std::uint32_t slot) {
  if (slot >= busy_.size() || !busy_[slot]) return 0;
  busy_[slot] = false;
  --busy_count_;
  const std::uint32_t length = length_[slot];
  length_[slot] = 0;
  bytes_completed_ += length;
  return length;
}

std::uint64_t SendLedger::offset_in_flight(std::uint32_t slot) const {
  return busy(slot) ? offset_[slot] : 0;
}

bool SendLedger::all_done() const {
  return next_chunk_ >= plan_.chunk_count() && busy_count_ == 0;
}

bool SendLedger::credited(std::uint32_t slot) const {
  return slot < credited_.size() && credited_[slot];
}

bool SendLedger::busy(std::uint32_t slot) const {
  return slot < busy_.size() && busy_[slot];
}

}  // namespace rdmax::proto
