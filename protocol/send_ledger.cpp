#include "protocol/send_ledger.hpp"

#include <algorithm>

namespace rdmax::proto {

SendLedger::SendLedger(std::vector<EntryPlan> entries, const Accept& accept,
                       std::uint32_t max_active_slots)
    : plans_(std::move(entries)),
      slot_size_(accept.slot_size),
      region_addr_(accept.region_addr),
      active_slots_(std::min(accept.slot_count, std::max(max_active_slots, 1U))),
      slots_(accept.slot_count),
      offer_count_(static_cast<std::uint32_t>(plans_.size())) {}

bool SendLedger::files_unsettled() const {
  return files_in_flight_ > 0;
}

std::optional<std::uint32_t> SendLedger::next_offer(const MakeEntry& make) {
  if (next_offer_ >= offer_count_ || in_flight_ >= kMaxEntriesInFlight) return std::nullopt;
  if (held_back_ && held_back_(next_offer_)) return std::nullopt;
  if (plans_[next_offer_].kind == EntryKind::Directory &&
      (!directories_allowed_ || files_unsettled()))
    return std::nullopt;
  const std::uint32_t entry = next_offer_++;
  Entry& e = *(entries_[entry] = make ? make(entry) : std::make_unique<Entry>());
  e.state = EntryState::Waiting;
  advance_own(plans_[entry].kind, e.state, EntryEvent::Offer);  // Waiting
  open_entries_.push_back(entry);
  ++in_flight_;
  if (plans_[entry].kind == EntryKind::File) ++files_in_flight_;
  return entry;
}

namespace {
ReplyError reply_error(EntryFault fault) {
  switch (fault) {
    case EntryFault::NotAFile:
      return ReplyError::NotAFile;
    case EntryFault::AlreadyTaken:
    case EntryFault::NotTaken:
    case EntryFault::Held:
    case EntryFault::NotHeld:
      return ReplyError::AlreadyTaken;
    case EntryFault::TooEarly:
    case EntryFault::Abandoned:
      return ReplyError::TooEarly;
    case EntryFault::NotOffered:
    case EntryFault::AlreadyOffered:
    case EntryFault::Settled:
      break;
  }
  return ReplyError::UnknownEntry;
}
}  // namespace

std::optional<ReplyError> SendLedger::step(std::uint32_t entry, EntryEvent event,
                                           std::uint64_t start) {
  if (entry >= plans_.size()) return ReplyError::UnknownEntry;
  EntryState next = state(entry);
  if (auto fault = advance(plans_[entry].kind, next, event)) return reply_error(*fault);
  // A Resume leaves at least one chunk, and starts where one does (PROTOCOL.md 7.6).
  if (start > 0 && (slot_size_ == 0 || start % slot_size_ != 0 || start >= plans_[entry].size))
    return ReplyError::BadOffset;
  entries_.at(entry)->state = next;  // only an offered entry moves
  return std::nullopt;
}

void SendLedger::forget(std::uint32_t entry) {
  std::erase(taken_order_, entry);  // no more of its chunks
  std::erase(open_entries_, entry);
  --in_flight_;
  if (plans_[entry].kind == EntryKind::File) --files_in_flight_;
  ++settled_;
}

std::optional<ReplyError> SendLedger::taken(std::uint32_t entry, std::uint64_t start) {
  if (auto error = step(entry, EntryEvent::Take, start)) return error;
  Entry& e = *entries_.at(entry);
  e.next_offset = start;
  if (plans_[entry].size > start || e.stripe) taken_order_.push_back(entry);
  return std::nullopt;
}

bool SendLedger::stripe(std::uint32_t entry, std::shared_ptr<StripePlan> plan) {
  Entry* e = this->entry(entry);
  if (e == nullptr || e->state != EntryState::Taken || e->chunks_out > 0 || e->stripe) return false;
  e->stripe = std::move(plan);
  e->member = 0;
  return true;
}

std::uint32_t SendLedger::join(std::uint64_t size, std::shared_ptr<StripePlan> plan,
                               std::uint16_t member, const MakeEntry& make) {
  const auto entry = static_cast<std::uint32_t>(plans_.size());
  plans_.push_back({EntryKind::File, size});
  Entry& e = *(entries_[entry] = make ? make(entry) : std::make_unique<Entry>());
  e.state = EntryState::Waiting;
  advance_own(EntryKind::File, e.state, EntryEvent::Offer);
  e.stripe = std::move(plan);
  e.member = member;
  open_entries_.push_back(entry);
  ++in_flight_;
  ++files_in_flight_;
  return entry;
}

std::optional<ReplyError> SendLedger::had(std::uint32_t entry) {
  if (auto error = step(entry, EntryEvent::Have)) return error;
  forget(entry);
  return std::nullopt;
}

std::optional<ReplyError> SendLedger::held(std::uint32_t entry) {
  return step(entry, EntryEvent::Holds);
}

std::optional<ReplyError> SendLedger::continued(std::uint32_t entry) {
  return step(entry, EntryEvent::Continue);
}

std::optional<ReplyError> SendLedger::abandon(std::uint32_t entry) {
  if (auto error = step(entry, EntryEvent::Abort)) return error;
  std::erase(taken_order_, entry);  // no more of its chunks
  return std::nullopt;
}

std::optional<ReplyError> SendLedger::settled(std::uint32_t entry, bool good) {
  // A good verdict answers a FileDone (or is a directory's); a bad one may come at any
  // time (the receiver's write failed mid-file).
  if (auto error = step(entry, good ? EntryEvent::Good : EntryEvent::Bad)) return error;
  forget(entry);
  return std::nullopt;
}

std::optional<CreditError> SendLedger::credit(const Credit& c) {
  if (c.slot >= slots_.size()) return CreditError::SlotOutOfRange;
  Slot& slot = slots_[c.slot];
  if (slot.credited) return CreditError::AlreadyHeld;
  slot.credited = true;
  if (slot.out) {  // its chunk is stored: the file has one fewer at the receiver
    slot.out = false;
    if (Entry* e = entry(slot.owner)) {
      --e->chunks_out;
      if (e->stripe) (void)e->stripe->stored(e->member, slot.offset);  // false: a lost member's
    }
  }
  slot.rkey = c.rkey;
  return std::nullopt;
}

std::optional<std::uint32_t> SendLedger::next_chunk_slot() const {
  if (taken_order_.empty()) return std::nullopt;
  for (std::uint32_t slot = 0; slot < active_slots_; ++slot)
    if (slots_[slot].credited && !slots_[slot].busy && !slots_[slot].held) return slot;
  return std::nullopt;
}

std::uint32_t SendLedger::next_chunk_entry() const {
  return next_chunk_entry(taken_order_);
}

std::uint32_t SendLedger::next_chunk_entry(const std::vector<std::uint32_t>& order) const {
  const std::size_t candidates = std::min<std::size_t>(order.size(), kInterleavedFiles);
  std::uint32_t best = order.front();
  for (std::size_t i = 1; i < candidates; ++i) {
    const std::uint32_t entry = order[i];
    if (entries_.at(entry)->chunks_out < entries_.at(best)->chunks_out) best = entry;
  }
  return best;
}

std::optional<SendLedger::Planned> SendLedger::next_chunk() {
  const auto slot = next_chunk_slot();
  if (!slot) return std::nullopt;
  std::uint32_t entry = next_chunk_entry();
  // A striped file's next chunk is whatever its plan hands this connection; none left: it
  // has no more chunks here (7.12).
  std::optional<StripePlan::Chunk> drawn;
  while (entries_.at(entry)->stripe &&
         !(drawn = entries_.at(entry)->stripe->next(entries_.at(entry)->member))) {
    std::erase(taken_order_, entry);
    if (taken_order_.empty()) return std::nullopt;
    entry = next_chunk_entry();
  }
  Entry& p = *entries_.at(entry);
  const std::uint64_t offset = drawn ? drawn->offset : p.next_offset;
  const std::uint64_t left = plans_[entry].size - offset;
  Planned planned{
      entry,
      *slot,
      offset,
      drawn ? drawn->length : static_cast<std::uint32_t>(std::min<std::uint64_t>(slot_size_, left)),
      region_addr_ + std::uint64_t{*slot} * slot_size_,
      slots_[*slot].rkey};
  Slot& used = slots_[*slot];
  used.offset = offset;
  used.credited = false;
  used.busy = true;
  used.out = true;
  used.length = planned.length;
  used.owner = entry;
  ++p.chunks_in_flight;
  ++p.chunks_out;
  if (drawn) return planned;
  p.next_offset += planned.length;
  if (p.next_offset == plans_[entry].size) std::erase(taken_order_, entry);
  return planned;
}

void SendLedger::unplan(const Planned& c) {
  if (c.slot >= slots_.size() || !slots_[c.slot].busy || slots_[c.slot].owner != c.entry) return;
  Slot& slot = slots_[c.slot];
  slot.busy = false;
  slot.credited = true;
  slot.length = 0;
  const bool out = slot.out;  // (a Credit may have come for it already)
  slot.out = false;
  Entry* p = entry(c.entry);
  if (p == nullptr) return;
  if (p->chunks_in_flight > 0) --p->chunks_in_flight;
  if (out) --p->chunks_out;
  // A striped file's chunk cannot go back to its plan (another connection may be past it):
  // the file cannot complete, and this connection's part ends (the caller abandons it).
  if (p->stripe) {
    (void)p->stripe->lose(p->member);
    return;
  }
  p->next_offset = c.offset;
}

std::optional<std::uint32_t> SendLedger::next_chunk_length() const {
  if (!next_chunk_slot()) return std::nullopt;
  // As next_chunk() chooses: a striped file whose plan has nothing left for us is passed over.
  std::vector<std::uint32_t> order = taken_order_;
  std::uint32_t entry = next_chunk_entry(order);
  while (const auto& stripe = entries_.at(entry)->stripe) {
    if (const auto length = stripe->peek(entries_.at(entry)->member)) return length;
    std::erase(order, entry);
    if (order.empty()) return std::nullopt;
    entry = next_chunk_entry(order);
  }
  const std::uint64_t left = plans_[entry].size - entries_.at(entry)->next_offset;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(slot_size_, left));
}

std::uint32_t SendLedger::completed(std::uint32_t slot) {
  if (slot >= slots_.size() || !slots_[slot].busy) return 0;
  slots_[slot].busy = false;
  const std::uint32_t length = slots_[slot].length;
  slots_[slot].length = 0;
  bytes_completed_ += length;
  if (Entry* e = entry(slots_[slot].owner); e != nullptr && e->chunks_in_flight > 0)
    --e->chunks_in_flight;
  return length;
}

void SendLedger::hold(std::uint32_t slot) {
  if (slot >= slots_.size() || slots_[slot].held) return;
  slots_[slot].held = true;
  if (Entry* e = entry(slots_[slot].owner)) ++e->chunks_held;
}

void SendLedger::release(std::uint32_t slot) {
  if (slot >= slots_.size() || !slots_[slot].held) return;
  slots_[slot].held = false;
  if (Entry* e = entry(slots_[slot].owner); e != nullptr && e->chunks_held > 0) --e->chunks_held;
}

std::optional<std::uint32_t> SendLedger::file_done_due() const {
  for (std::uint32_t entry : open_entries_) {  // at most kMaxEntriesInFlight
    const Entry& p = *entries_.at(entry);
    const bool sent =
        p.stripe ? p.stripe->all_handed() && !p.stripe->interrupted() && p.members_pending == 0
                 : p.next_offset == plans_[entry].size;
    if (p.state == EntryState::Taken && sent && p.chunks_in_flight == 0 && p.chunks_held == 0)
      return entry;
  }
  return std::nullopt;
}

std::optional<std::uint32_t> SendLedger::next_file_done() {
  const auto entry = file_done_due();
  if (entry)
    advance_own(plans_[*entry].kind, entries_.at(*entry)->state,
                EntryEvent::FileDone);  // Taken: a file
  return entry;
}

SendLedger::EntryState SendLedger::state(std::uint32_t entry) const {
  if (const Entry* e = this->entry(entry)) return e->state;
  // Not held: still to be offered, or settled and dropped (or no entry of the session).
  return entry < offer_count_ && entry >= next_offer_ ? EntryState::Waiting : EntryState::Settled;
}

SendLedger::Entry* SendLedger::entry(std::uint32_t entry) const {
  const auto it = entries_.find(entry);
  return it == entries_.end() ? nullptr : it->second.get();
}

void SendLedger::drop(std::uint32_t entry) {
  if (state(entry) == EntryState::Settled) entries_.erase(entry);
}

}  // namespace rdmax::proto
