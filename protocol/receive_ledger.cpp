#include "protocol/receive_ledger.hpp"

#include <algorithm>

namespace rdmax::proto {

ReceiveLedger::ReceiveLedger(const Open& open, std::uint32_t slot_size, std::uint32_t slot_count)
    : open_(open),
      slot_size_(slot_size),
      slots_(slot_count, SlotState::Idle),
      slot_owner_(slot_count, 0) {}

std::optional<ReceiveError> ReceiveLedger::offer(const Offer& o, std::unique_ptr<Entry> made) {
  if (offered_ >= open_.entry_count) return ReceiveError::TooManyEntries;
  if (o.entry != offered_) return ReceiveError::EntryOutOfOrder;
  if (entries_.size() >= kMaxEntriesInFlight) return ReceiveError::TooManyInFlight;
  // Computed without overflow: offered_bytes_ <= total_bytes always.
  if (o.size > open_.total_bytes - offered_bytes_) return ReceiveError::TooManyBytes;
  if (o.striped && stripe_role_ != StripeRole::Lead) return ReceiveError::NotStriping;
  offered_bytes_ += o.size;
  ++offered_;
  if (!made) made = std::make_unique<Entry>(o);
  Entry& e = *(entries_[o.entry] = std::move(made));
  e.striped = o.striped;
  e.state = EntryState::Waiting;
  advance_own(e.kind, e.state, EntryEvent::Offer);  // Waiting: a new entry
  return std::nullopt;
}

void ReceiveLedger::take(std::uint32_t id, std::uint64_t start) {
  auto it = entries_.find(id);
  if (it == entries_.end() || advance(it->second->kind, it->second->state, EntryEvent::Take))
    return;
  Entry& e = *it->second;
  e.received = std::min(start, e.size);
  if (e.striped) e.claims = std::make_shared<StripeClaims>(e.size, slot_size_, e.received);
}

std::optional<ReceiveError> ReceiveLedger::join(const Join& j) {
  if (stripe_role_ != StripeRole::Member) return ReceiveError::NotStriping;
  // Numbered after every Offer the Open announced, in order (u64: no overflow).
  if (std::uint64_t{j.entry} != std::uint64_t{open_.entry_count} + joins_)
    return ReceiveError::JoinOutOfOrder;
  if (entries_.size() >= kMaxEntriesInFlight) return ReceiveError::TooManyInFlight;
  for (const auto& [id, e] : entries_)
    if (e->joined_to == j.lead_entry) return ReceiveError::AlreadyJoined;
  ++joins_;
  return std::nullopt;
}

void ReceiveLedger::joined(const Join& j, std::uint64_t size, std::shared_ptr<StripeClaims> claims,
                           std::unique_ptr<Entry> made) {
  if (!made) made = std::make_unique<Entry>();
  Entry& e = *(entries_[j.entry] = std::move(made));
  e.kind = EntryKind::File;
  e.size = size;
  e.joined_to = j.lead_entry;
  e.claims = std::move(claims);
  e.state = EntryState::Waiting;
  advance_own(e.kind, e.state, EntryEvent::Offer);
  advance_own(e.kind, e.state, EntryEvent::Take);
}

void ReceiveLedger::hold_for_continue(std::uint32_t id) {
  if (auto it = entries_.find(id); it != entries_.end())
    advance_own(it->second->kind, it->second->state, EntryEvent::Holds);
}

std::optional<ReceiveError> ReceiveLedger::continued(const Continue& c) {
  auto it = entries_.find(c.entry);
  if (it == entries_.end()) return ReceiveError::UnknownEntry;
  if (advance(it->second->kind, it->second->state, EntryEvent::Continue))
    return ReceiveError::NotHeld;
  return std::nullopt;
}

std::optional<ReceiveError> ReceiveLedger::abort(const FileAbort& a, bool& dropped) {
  dropped = false;
  auto it = entries_.find(a.entry);
  if (it == entries_.end()) {
    if (!abandoned(a.entry)) return ReceiveError::UnknownEntry;
    dropped = true;  // settled by a failed write; the sender has that verdict
    return std::nullopt;
  }
  if (advance(it->second->kind, it->second->state, EntryEvent::Abort))
    return ReceiveError::EntryNotReceiving;
  return std::nullopt;
}

bool ReceiveLedger::start_discarding(std::uint32_t id) {
  return start_last_job(id, EntryState::Abandoning);
}

std::unique_ptr<ReceiveLedger::Entry> ReceiveLedger::settle(std::uint32_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return nullptr;
  if (it->second->state == EntryState::Taken) abandoned_.push_back(id);
  std::unique_ptr<Entry> settled = std::move(it->second);
  entries_.erase(it);
  return settled;
}

bool ReceiveLedger::abandoned(std::uint32_t id) const {
  return std::find(abandoned_.begin(), abandoned_.end(), id) != abandoned_.end();
}

bool ReceiveLedger::discard_chunk(const FileChunk& c) {
  if (!abandoned(c.entry) || c.slot >= slots_.size() || slots_[c.slot] != SlotState::Credited)
    return false;
  slots_[c.slot] = SlotState::Idle;
  return true;
}

bool ReceiveLedger::grant(std::uint32_t slot) {
  if (closed_ || slot >= slots_.size() || slots_[slot] != SlotState::Idle || !wants_data())
    return false;
  slots_[slot] = SlotState::Credited;
  return true;
}

std::optional<ReceiveError> ReceiveLedger::accept_chunk(const FileChunk& c) {
  auto it = entries_.find(c.entry);
  if (it == entries_.end()) return ReceiveError::UnknownEntry;
  Entry& e = *it->second;
  EntryState next = e.state;
  if (advance(e.kind, next, EntryEvent::Chunk)) return ReceiveError::EntryNotReceiving;
  if (c.slot >= slots_.size()) return ReceiveError::SlotOutOfRange;
  if (e.received == e.size) return ReceiveError::PastEnd;
  if (slots_[c.slot] != SlotState::Credited) return ReceiveError::SlotNotCredited;
  if (e.claims) {
    // A striped file's chunk: anywhere on its grid, once in the group (7.12).
    if (c.offset >= e.size || c.offset % slot_size_ != 0) return ReceiveError::WrongOffset;
    if (c.length == 0 || c.length != std::min<std::uint64_t>(slot_size_, e.size - c.offset))
      return ReceiveError::WrongLength;
    if (!e.claims->claim(c.offset, c.length)) return ReceiveError::ChunkClaimed;
  } else {
    if (c.offset != e.received) return ReceiveError::WrongOffset;
    // Never forms offset + length, which could overflow.
    const std::uint64_t expected = std::min<std::uint64_t>(slot_size_, e.size - e.received);
    if (c.length == 0 || c.length != expected) return ReceiveError::WrongLength;
  }
  slots_[c.slot] = SlotState::Storing;
  slot_owner_[c.slot] = c.entry;
  ++storing_;
  ++e.storing;
  if (e.claims) e.claims->store_started();
  e.received += c.length;
  return std::nullopt;
}

bool ReceiveLedger::stored(std::uint32_t slot, std::uint32_t id) {
  if (slot >= slots_.size() || slots_[slot] != SlotState::Storing || slot_owner_[slot] != id)
    return false;
  slots_[slot] = SlotState::Idle;
  --storing_;
  if (auto it = entries_.find(id); it != entries_.end() && it->second->storing > 0) {
    --it->second->storing;
    if (it->second->claims) it->second->claims->store_ended();
  }
  return !closed_ && wants_data();
}

std::vector<std::uint32_t> ReceiveLedger::release_slots_of(std::uint32_t id) {
  std::vector<std::uint32_t> released;
  for (std::uint32_t slot = 0; slot < slots_.size(); ++slot) {
    if (slots_[slot] != SlotState::Storing || slot_owner_[slot] != id) continue;
    slots_[slot] = SlotState::Idle;
    --storing_;
    released.push_back(slot);
  }
  if (auto it = entries_.find(id); it != entries_.end()) {
    if (it->second->claims)
      for (std::uint32_t i = 0; i < it->second->storing; ++i) it->second->claims->store_ended();
    it->second->storing = 0;
  }
  return released;
}

std::optional<ReceiveError> ReceiveLedger::file_done(const FileDone& d) {
  auto it = entries_.find(d.entry);
  if (it == entries_.end()) return ReceiveError::UnknownEntry;
  // The machine first (is a FileDone due at all?), then the form the entry's Offer set.
  EntryState next = it->second->state;
  if (advance(it->second->kind, next, EntryEvent::FileDone)) return ReceiveError::EntryNotReceiving;
  const Entry& e = *it->second;
  const bool digest_due = e.digest_at_end && !e.joined_to;
  if (digest_due != d.digest.has_value()) return ReceiveError::DigestMisplaced;
  if (e.striped && e.claims && !e.claims->all_claimed()) return ReceiveError::StripeUnfinished;
  it->second->state = next;
  it->second->done_total = d.total_bytes;
  return std::nullopt;
}

bool ReceiveLedger::start_verifying(std::uint32_t id) {
  return start_last_job(id, EntryState::Finished);
}

bool ReceiveLedger::start_last_job(std::uint32_t id, EntryState when) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second->state != when || it->second->verifying ||
      it->second->storing > 0)
    return false;
  // A striped file is verified once the chunks every connection of its group carried are
  // stored (its FileDone came once all were claimed).
  if (when == EntryState::Finished && it->second->striped && it->second->claims &&
      it->second->claims->stores_running())
    return false;
  it->second->verifying = true;
  return true;
}

void ReceiveLedger::close() {
  closed_ = true;
  std::replace(slots_.begin(), slots_.end(), SlotState::Credited, SlotState::Idle);
}

bool ReceiveLedger::all_settled() const {
  return offered_ == open_.entry_count && entries_.empty();
}

bool ReceiveLedger::wants_data() const {
  // A file still to be offered may have bytes. Open.total_bytes is an upper bound
  // (PROTOCOL.md 7.5): once every entry is offered, only what was offered counts.
  if (offered_ < open_.entry_count && offered_bytes_ < open_.total_bytes) return true;
  for (const auto& [id, e] : entries_) {
    // A striped file wants data until every chunk is claimed, an entry joined to it until
    // its FileDone (what it carries is the sender's choice).
    if (e->claims) {
      if (e->state == EntryState::Taken && (e->joined_to || !e->claims->all_claimed())) return true;
      continue;
    }
    if ((e->state == EntryState::Offered || e->state == EntryState::Held ||
         e->state == EntryState::Continued || e->state == EntryState::Taken) &&
        e->received < e->size)
      return true;
  }
  return false;
}

ReceiveLedger::Entry* ReceiveLedger::entry(std::uint32_t id) {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.get();
}

const ReceiveLedger::Entry* ReceiveLedger::entry(std::uint32_t id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.get();
}

ReceiveLedger::SlotState ReceiveLedger::slot_state(std::uint32_t slot) const {
  return slot < slots_.size() ? slots_[slot] : SlotState::Idle;
}

}  // namespace rdmax::proto
