#pragma once
// The sender's half of a version-2 session's rules (docs/PROTOCOL.md 7.5), as pure
// bookkeeping: which entry to offer next (at most kMaxEntriesInFlight unsettled), which
// chunk of which taken file goes into which credited slot, when a file's FileDone is due,
// and which entries are settled.
//
// Each entry moves through the machine both sides share (protocol/entry_machine.hpp):
// Waiting (not offered yet), Offered, Taken (its chunks go out as credits allow),
// Finished (FileDone sent), Settled (Have, Refuse or FileVerdict received). Each file's
// chunks go out in file order; the chunks of up to kInterleavedFiles taken files (the
// oldest) interleave, each chunk going to the one with the fewest chunks not yet stored at
// the receiver (sent, and its slot not credited back), so that the receiver stores several
// files at once (the kernel writes one file's chunks one at a time). A slot is
// credited (a Credit arrived and no FileChunk has been sent for it since) and busy (our
// FileChunk SEND for it has not completed locally). A Credit may arrive while the slot is
// still busy (the receiver stored the chunk before our SEND's completion was polled): the
// slot is then credited but not used until it is no longer busy.
//
// The ledger holds each entry offered as one object, from its Offer until the driver drops
// it after its settlement, of the type it is made for: the driver's own entry
// (sender/outgoing_entry.hpp: its file, windows, digest in flight), made when the entry is
// offered; a SendEntry in the ledger's tests and fuzzer.

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "protocol/chunk_plan.hpp"
#include "protocol/entry_machine.hpp"
#include "protocol/enum_names.hpp"
#include "protocol/step_refusal.hpp"
#include "protocol/stripe_plan.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

enum class CreditError : std::uint8_t {
  SlotOutOfRange,  // slot >= Accept.slot_count
  AlreadyHeld,     // the sender already holds that slot's credit
};

// The send ledger's own rules for a reply (a step its entry's machine refuses is an
// EntryFault: protocol/step_refusal.hpp).
enum class ReplyRule : std::uint8_t {
  UnknownEntry,  // a reply for an entry number that was never offered or joined
  BadOffset,     // a Resume from 0, not at a chunk boundary, or leaving no chunk to send
  // The digest at the end (PROTOCOL.md 7.9): a Holds for a file offered with its digest.
  NotAsked,
  // A Have of a file offered without its digest before our Continue from its size, or a
  // Resume past the prefix our Continue continued from.
  NotContinued,
  NotForJoin,    // a Join answered other than Take, Refuse or FileVerdict (7.12)
  NotAbandoned,  // a FileVerdict(Abandoned) for an entry we did not abandon (7.9)
  NotStriped,    // a FileVerdict(Interrupted) for an entry neither striped nor joined (7.12)
};
using ReplyError = StepRefusal<ReplyRule>;

// How many taken files the chunks are spread over (above): enough stores at once to keep
// a many-core receiver busy (docs/BENCHMARKS.md), few enough that an interrupted tree leaves
// few partial files.
inline constexpr std::size_t kInterleavedFiles = 8;

struct EntryPlan {
  EntryKind kind = EntryKind::File;
  std::uint64_t size = 0;
  bool digest_at_end = false;  // offered without its digest (PROTOCOL.md 7.9)
};
// A chunk to write: into which slot of the receiver's window, with which key.
struct PlannedChunk {
  std::uint32_t entry = 0;
  std::uint32_t slot = 0;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;
  bool operator==(const PlannedChunk&) const = default;
};

// What the rules know of an offered entry. The driver's entries extend it.
struct SendEntry {
  SendEntry() = default;
  SendEntry(const SendEntry&) = delete;
  SendEntry& operator=(const SendEntry&) = delete;

  EntryState state = EntryState::Waiting;
  std::uint64_t next_offset = 0;  // of the next chunk to write
  std::uint32_t chunks_in_flight = 0;
  std::uint32_t chunks_held = 0;  // being hashed (hold)
  std::uint32_t chunks_out = 0;   // planned, their slots not credited back yet
  // One file over several connections (PROTOCOL.md 7.12): a striped entry (the lead's,
  // member 0) or one joined to it draws its chunks from the file's plan, shared by every
  // connection of the group, instead of next_offset. The lead's FileDone waits for the
  // joined entries of the other connections (`members_pending`, the driver's count).
  std::shared_ptr<StripePlan> stripe;
  std::uint16_t member = 0;
  std::uint32_t members_pending = 0;
  // The digest at the end (7.9): where our Continue said the file continues (0: it differs;
  // its size: it is the receiver's, which may answer Have).
  std::optional<std::uint64_t> continued_from;
};

// `E`: the kind of entry the ledger holds (made by the driver's maker when it is offered).
template <class E>
class BasicSendLedger {
  static_assert(std::derived_from<E, SendEntry>, "a send ledger holds SendEntry objects");

 public:
  using Entry = E;
  using EntryState = proto::EntryState;
  using EntryPlan = proto::EntryPlan;
  using Planned = PlannedChunk;
  // Makes the entry of that number; none given: a plain E (where E can be made so).
  using MakeEntry = std::function<std::unique_ptr<E>(std::uint32_t entry)>;
  using Entries = std::map<std::uint32_t, std::unique_ptr<E>>;

  BasicSendLedger() = default;
  // `entries` in the order they will be offered; the sender writes at most
  // `max_active_slots` slots (>= 1; the lowest-numbered ones).
  BasicSendLedger(std::vector<EntryPlan> entries, const Accept& accept,
                  std::uint32_t max_active_slots);

  // The next entry to offer, if one is waiting and fewer than kMaxEntriesInFlight are
  // unsettled; it becomes Offered, held as what `make` made of it. A directory waits until
  // no file is unsettled (and directories are allowed: see allow_directories), so that its
  // time, set when it is settled, is not changed by files created in it afterwards.
  [[nodiscard]] std::optional<std::uint32_t> next_offer(const MakeEntry& make = nullptr);
  // While false (default true) no directory is offered: the driver holds them back until
  // the files on other connections are settled too.
  void allow_directories(bool allowed) { directories_allowed_ = allowed; }
  // While set, the entry `held_back` returns true for is not offered yet (and nothing after
  // it): a file to stripe waits until every connection of the group was answered.
  void hold_back(std::function<bool(std::uint32_t)> held_back) {
    held_back_ = std::move(held_back);
  }

  // 7.12. A taken (or resumed) entry becomes striped: its chunks come from `plan` as
  // member 0. False if it is not taken or has chunks planned already.
  [[nodiscard]] bool stripe(std::uint32_t entry, std::shared_ptr<StripePlan> plan);
  // A Join (its number: after every entry offered or joined): an entry of `size` bytes that
  // draws its chunks from `plan` as `member`, Offered until its Take. Counted in flight.
  std::uint32_t join(std::uint64_t size, std::shared_ptr<StripePlan> plan, std::uint16_t member,
                     const MakeEntry& make = nullptr);
  // The number of entries the Open announced (Offers); Joins are numbered from here.
  std::uint32_t offer_count() const { return offer_count_; }

  // Replies, each judged here alone: by the entry's machine, then by what our Offer, our
  // Continue or a Join asked. On success the entry's state changes; on failure nothing does.
  // A Take; with `start`, the step a Resume from there makes (resumed() judges its offset
  // first, and is what a driver calls for one).
  [[nodiscard]] std::optional<ReplyError> taken(std::uint32_t entry, std::uint64_t start = 0);
  // A Resume from `offset` (PROTOCOL.md 7.6): the chunks before it are not sent. Never from 0
  // (that is a Take), never of a Join.
  [[nodiscard]] std::optional<ReplyError> resumed(std::uint32_t entry, std::uint64_t offset);
  // A Have: the file is in place already; it is settled good without any of it sent.
  [[nodiscard]] std::optional<ReplyError> had(std::uint32_t entry);
  // The digest at the end (PROTOCOL.md 7.9). A Holds: the entry waits (Held) for the
  // driver's Continue from `from`, which continued() records (Continued: its answer is
  // awaited again, and no second Holds may come).
  [[nodiscard]] std::optional<ReplyError> held(std::uint32_t entry);
  [[nodiscard]] std::optional<ReplyError> continued(std::uint32_t entry, std::uint64_t from);
  // The driver abandons a taken (or digest-asked) file (its FileAbort is about to go): no
  // more of its chunks are planned; its FileVerdict settles it.
  [[nodiscard]] std::optional<ReplyError> abandon(std::uint32_t entry);
  // A Refuse (bad) or a verdict: settled.
  [[nodiscard]] std::optional<ReplyError> settled(std::uint32_t entry, bool good);
  [[nodiscard]] std::optional<ReplyError> verdict(std::uint32_t entry, VerdictCode code);
  [[nodiscard]] std::optional<CreditError> credit(const Credit& credit);

  // The next chunk to write, if a taken file has bytes left and an active slot is credited
  // and not busy. The slot becomes uncredited and busy.
  [[nodiscard]] std::optional<Planned> next_chunk();
  // A chunk next_chunk() planned that is not written after all (its bytes could not be read;
  // the driver abandons its file): its slot is credited and free again.
  void unplan(const Planned& chunk);
  // The length of the chunk next_chunk() would plan now, without planning it (--bwlimit
  // asks whether the bucket holds that much first).
  [[nodiscard]] std::optional<std::uint32_t> next_chunk_length() const;
  // Our FileChunk SEND for `slot` completed; returns its length (0 if the slot was not busy).
  std::uint32_t completed(std::uint32_t slot);
  // The digest in flight: the bytes of the chunk just planned in `slot` are being hashed
  // (hold) until they are (release). A held slot is not written again, and its file's
  // FileDone is not due, until it is released.
  void hold(std::uint32_t slot);
  void release(std::uint32_t slot);
  // A taken file whose every chunk was written and completed: its FileDone goes now (the
  // entry becomes Finished). An empty file is due as soon as it is taken. A striped or joined
  // entry's: once the plan has handed out every chunk, those of this connection completed
  // (and, for the lead, every joined entry settled); never once the plan is interrupted (the
  // receiver settles it Interrupted).
  [[nodiscard]] std::optional<std::uint32_t> next_file_done();
  // The entry next_file_done() would return, left Taken: its sender may still abandon it
  // instead (a striped file found changed once every connection read its part).
  [[nodiscard]] std::optional<std::uint32_t> file_done_due() const;

  EntryState state(std::uint32_t entry) const;
  // The entry offered and not dropped yet, or none.
  E* entry(std::uint32_t entry) const;
  const Entries& entries() const { return entries_; }
  // A settled entry the driver is done with is forgotten (its chunks' completions and
  // Credits still to come find nothing to count).
  void drop(std::uint32_t entry);
  bool all_settled() const { return settled_ == plans_.size(); }
  std::uint32_t unsettled_offers() const { return in_flight_; }
  std::uint64_t bytes_completed() const { return bytes_completed_; }
  std::uint32_t active_slots() const { return active_slots_; }
  std::uint32_t entry_count() const { return static_cast<std::uint32_t>(plans_.size()); }

 private:
  bool files_unsettled() const;
  // The slot and the file of the chunk next_chunk() plans (a slot only when a taken file
  // has bytes left).
  std::optional<std::uint32_t> next_chunk_slot() const;
  // The entry to make of that number.
  std::unique_ptr<E> make_entry(const MakeEntry& make, std::uint32_t entry) const;
  std::uint32_t next_chunk_entry() const;
  std::uint32_t next_chunk_entry(const std::vector<std::uint32_t>& order) const;
  // Moves the entry's machine on a reply (`start`: a Resume's offset; `code`: a verdict's),
  // or says why the reply is not allowed (nothing changes).
  std::optional<ReplyError> step(std::uint32_t entry, EntryEvent event, std::uint64_t start = 0,
                                 std::optional<VerdictCode> code = std::nullopt);
  void forget(std::uint32_t entry);  // settled: off every list

  std::vector<EntryPlan> plans_;
  Entries entries_;  // offered, until dropped
  std::uint32_t slot_size_ = 0;
  std::uint64_t region_addr_ = 0;
  std::uint32_t active_slots_ = 0;
  // What the sender knows of each slot of the receiver's window.
  struct Slot {
    bool credited = false;     // a Credit came and no chunk has used it yet
    bool busy = false;         // a chunk is being written into it
    bool held = false;         // being hashed: not written again until release()
    bool out = false;          // its chunk is not stored yet (no Credit since)
    std::uint32_t rkey = 0;    // the last Credit's
    std::uint32_t length = 0;  // of the chunk in flight in a busy slot
    std::uint32_t owner = 0;   // and its entry
    std::uint64_t offset =
        0;  // and where it is in the file (a striped one's plan learns it stored)
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> taken_order_;   // taken files with chunks left, oldest first
  std::vector<std::uint32_t> open_entries_;  // offered, not settled
  std::uint32_t next_offer_ = 0;
  std::uint32_t in_flight_ = 0;  // offered, not settled
  std::uint32_t files_in_flight_ = 0;
  std::size_t settled_ = 0;
  std::uint64_t bytes_completed_ = 0;
  bool directories_allowed_ = true;
  std::function<bool(std::uint32_t)> held_back_;
  std::uint32_t offer_count_ = 0;  // plans_ before any Join
};

// The ledger of the rules alone: its tests and fuzzer.
using SendLedger = BasicSendLedger<SendEntry>;

template <class E>
std::unique_ptr<E> BasicSendLedger<E>::make_entry(const MakeEntry& make,
                                                  std::uint32_t entry) const {
  if constexpr (std::default_initializable<E>)
    if (!make) return std::make_unique<E>();
  return make(entry);
}

template <class E>
BasicSendLedger<E>::BasicSendLedger(std::vector<EntryPlan> entries, const Accept& accept,
                                    std::uint32_t max_active_slots)
    : plans_(std::move(entries)),
      slot_size_(accept.slot_size),
      region_addr_(accept.region_addr),
      active_slots_(std::min(accept.slot_count, std::max(max_active_slots, 1U))),
      slots_(accept.slot_count),
      offer_count_(static_cast<std::uint32_t>(plans_.size())) {}

template <class E>
bool BasicSendLedger<E>::files_unsettled() const {
  return files_in_flight_ > 0;
}

template <class E>
std::optional<std::uint32_t> BasicSendLedger<E>::next_offer(const MakeEntry& make) {
  if (next_offer_ >= offer_count_ || in_flight_ >= kMaxEntriesInFlight) return std::nullopt;
  if (held_back_ && held_back_(next_offer_)) return std::nullopt;
  if (plans_[next_offer_].kind == EntryKind::Directory &&
      (!directories_allowed_ || files_unsettled()))
    return std::nullopt;
  const std::uint32_t entry = next_offer_++;
  E& e = *(entries_[entry] = make_entry(make, entry));
  e.state = EntryState::Waiting;
  advance_own(plans_[entry].kind, e.state, EntryEvent::Offer);  // Waiting
  open_entries_.push_back(entry);
  ++in_flight_;
  if (plans_[entry].kind == EntryKind::File) ++files_in_flight_;
  return entry;
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::step(std::uint32_t entry, EntryEvent event,
                                                   std::uint64_t start,
                                                   std::optional<VerdictCode> code) {
  if (entry >= plans_.size()) return ReplyRule::UnknownEntry;
  EntryState next = state(entry);
  const EntryPlan& plan = plans_[entry];
  if (auto fault = advance(plan.kind, next, event)) return *fault;
  E& e = *entries_.at(entry);  // only an offered entry moves
  // A Join is answered Take, Refuse or FileVerdict (7.12).
  if (entry >= offer_count_ &&
      (event == EntryEvent::Have || event == EntryEvent::Holds || start > 0))
    return ReplyRule::NotForJoin;
  if (event == EntryEvent::Holds && !plan.digest_at_end) return ReplyRule::NotAsked;
  // Without its digest (7.9) a file is had only once our Continue said it is the receiver's,
  // and resumed only within the prefix it said is.
  if (plan.digest_at_end && event == EntryEvent::Have && e.continued_from != plan.size)
    return ReplyRule::NotContinued;
  if (plan.digest_at_end && start > 0 &&
      !(e.continued_from && *e.continued_from < plan.size && start <= *e.continued_from))
    return ReplyRule::NotContinued;
  // A Resume leaves at least one chunk, and starts where one does (PROTOCOL.md 7.6).
  if (start > 0 && (slot_size_ == 0 || start % slot_size_ != 0 || start >= plan.size))
    return ReplyRule::BadOffset;
  // Abandoned answers our FileAbort (7.9), and nothing else; Interrupted only a striped or
  // joined entry (7.12).
  if (code == VerdictCode::Abandoned && e.state != EntryState::Abandoning)
    return ReplyRule::NotAbandoned;
  if (code == VerdictCode::Interrupted && !e.stripe) return ReplyRule::NotStriped;
  e.state = next;
  return std::nullopt;
}

template <class E>
void BasicSendLedger<E>::forget(std::uint32_t entry) {
  std::erase(taken_order_, entry);  // no more of its chunks
  std::erase(open_entries_, entry);
  --in_flight_;
  if (plans_[entry].kind == EntryKind::File) --files_in_flight_;
  ++settled_;
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::taken(std::uint32_t entry, std::uint64_t start) {
  if (auto error = step(entry, EntryEvent::Take, start)) return error;
  E& e = *entries_.at(entry);
  e.next_offset = start;
  if (plans_[entry].size > start || e.stripe) taken_order_.push_back(entry);
  return std::nullopt;
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::resumed(std::uint32_t entry, std::uint64_t offset) {
  if (offset == 0) return entry >= offer_count_ ? ReplyRule::NotForJoin : ReplyRule::BadOffset;
  return taken(entry, offset);
}

template <class E>
bool BasicSendLedger<E>::stripe(std::uint32_t entry, std::shared_ptr<StripePlan> plan) {
  E* e = this->entry(entry);
  if (e == nullptr || e->state != EntryState::Taken || e->chunks_out > 0 || e->stripe) return false;
  e->stripe = std::move(plan);
  e->member = 0;
  return true;
}

template <class E>
std::uint32_t BasicSendLedger<E>::join(std::uint64_t size, std::shared_ptr<StripePlan> plan,
                                       std::uint16_t member, const MakeEntry& make) {
  const auto entry = static_cast<std::uint32_t>(plans_.size());
  plans_.push_back({EntryKind::File, size});
  E& e = *(entries_[entry] = make_entry(make, entry));
  e.state = EntryState::Waiting;
  advance_own(EntryKind::File, e.state, EntryEvent::Offer);
  e.stripe = std::move(plan);
  e.member = member;
  open_entries_.push_back(entry);
  ++in_flight_;
  ++files_in_flight_;
  return entry;
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::had(std::uint32_t entry) {
  if (auto error = step(entry, EntryEvent::Have)) return error;
  forget(entry);
  return std::nullopt;
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::held(std::uint32_t entry) {
  return step(entry, EntryEvent::Holds);
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::continued(std::uint32_t entry, std::uint64_t from) {
  if (auto error = step(entry, EntryEvent::Continue)) return error;
  entries_.at(entry)->continued_from = from;
  return std::nullopt;
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::abandon(std::uint32_t entry) {
  if (auto error = step(entry, EntryEvent::Abort)) return error;
  std::erase(taken_order_, entry);  // no more of its chunks
  return std::nullopt;
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::settled(std::uint32_t entry, bool good) {
  // A good verdict answers a FileDone (or is a directory's); a bad one may come at any
  // time (the receiver's write failed mid-file).
  if (auto error = step(entry, good ? EntryEvent::Good : EntryEvent::Bad)) return error;
  forget(entry);
  return std::nullopt;
}

template <class E>
std::optional<ReplyError> BasicSendLedger<E>::verdict(std::uint32_t entry, VerdictCode code) {
  const bool good = code == VerdictCode::Good;
  if (auto error = step(entry, good ? EntryEvent::Good : EntryEvent::Bad, 0, code)) return error;
  forget(entry);
  return std::nullopt;
}

template <class E>
std::optional<CreditError> BasicSendLedger<E>::credit(const Credit& c) {
  if (c.slot >= slots_.size()) return CreditError::SlotOutOfRange;
  Slot& slot = slots_[c.slot];
  if (slot.credited) return CreditError::AlreadyHeld;
  slot.credited = true;
  if (slot.out) {  // its chunk is stored: the file has one fewer at the receiver
    slot.out = false;
    if (E* e = entry(slot.owner)) {
      --e->chunks_out;
      if (e->stripe) (void)e->stripe->stored(e->member, slot.offset);  // false: a lost member's
    }
  }
  slot.rkey = c.rkey;
  return std::nullopt;
}

template <class E>
std::optional<std::uint32_t> BasicSendLedger<E>::next_chunk_slot() const {
  if (taken_order_.empty()) return std::nullopt;
  for (std::uint32_t slot = 0; slot < active_slots_; ++slot)
    if (slots_[slot].credited && !slots_[slot].busy && !slots_[slot].held) return slot;
  return std::nullopt;
}

template <class E>
std::uint32_t BasicSendLedger<E>::next_chunk_entry() const {
  return next_chunk_entry(taken_order_);
}

template <class E>
std::uint32_t BasicSendLedger<E>::next_chunk_entry(const std::vector<std::uint32_t>& order) const {
  const std::size_t candidates = std::min<std::size_t>(order.size(), kInterleavedFiles);
  std::uint32_t best = order.front();
  for (std::size_t i = 1; i < candidates; ++i) {
    const std::uint32_t entry = order[i];
    if (entries_.at(entry)->chunks_out < entries_.at(best)->chunks_out) best = entry;
  }
  return best;
}

template <class E>
std::optional<PlannedChunk> BasicSendLedger<E>::next_chunk() {
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
  E& p = *entries_.at(entry);
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

template <class E>
void BasicSendLedger<E>::unplan(const Planned& c) {
  if (c.slot >= slots_.size() || !slots_[c.slot].busy || slots_[c.slot].owner != c.entry) return;
  Slot& slot = slots_[c.slot];
  slot.busy = false;
  slot.credited = true;
  slot.length = 0;
  const bool out = slot.out;  // (a Credit may have come for it already)
  slot.out = false;
  E* p = entry(c.entry);
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

template <class E>
std::optional<std::uint32_t> BasicSendLedger<E>::next_chunk_length() const {
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

template <class E>
std::uint32_t BasicSendLedger<E>::completed(std::uint32_t slot) {
  if (slot >= slots_.size() || !slots_[slot].busy) return 0;
  slots_[slot].busy = false;
  const std::uint32_t length = slots_[slot].length;
  slots_[slot].length = 0;
  bytes_completed_ += length;
  if (E* e = entry(slots_[slot].owner); e != nullptr && e->chunks_in_flight > 0)
    --e->chunks_in_flight;
  return length;
}

template <class E>
void BasicSendLedger<E>::hold(std::uint32_t slot) {
  if (slot >= slots_.size() || slots_[slot].held) return;
  slots_[slot].held = true;
  if (E* e = entry(slots_[slot].owner)) ++e->chunks_held;
}

template <class E>
void BasicSendLedger<E>::release(std::uint32_t slot) {
  if (slot >= slots_.size() || !slots_[slot].held) return;
  slots_[slot].held = false;
  if (E* e = entry(slots_[slot].owner); e != nullptr && e->chunks_held > 0) --e->chunks_held;
}

template <class E>
std::optional<std::uint32_t> BasicSendLedger<E>::file_done_due() const {
  for (std::uint32_t entry : open_entries_) {  // at most kMaxEntriesInFlight
    const E& p = *entries_.at(entry);
    const bool sent =
        p.stripe ? p.stripe->all_handed() && !p.stripe->interrupted() && p.members_pending == 0
                 : p.next_offset == plans_[entry].size;
    if (p.state == EntryState::Taken && sent && p.chunks_in_flight == 0 && p.chunks_held == 0)
      return entry;
  }
  return std::nullopt;
}

template <class E>
std::optional<std::uint32_t> BasicSendLedger<E>::next_file_done() {
  const auto entry = file_done_due();
  if (entry)
    advance_own(plans_[*entry].kind, entries_.at(*entry)->state,
                EntryEvent::FileDone);  // Taken: a file
  return entry;
}

template <class E>
EntryState BasicSendLedger<E>::state(std::uint32_t entry) const {
  if (const E* e = this->entry(entry)) return e->state;
  // Not held: still to be offered, or settled and dropped (or no entry of the session).
  return entry < offer_count_ && entry >= next_offer_ ? EntryState::Waiting : EntryState::Settled;
}

template <class E>
E* BasicSendLedger<E>::entry(std::uint32_t entry) const {
  const auto it = entries_.find(entry);
  return it == entries_.end() ? nullptr : it->second.get();
}

template <class E>
void BasicSendLedger<E>::drop(std::uint32_t entry) {
  if (state(entry) == EntryState::Settled) entries_.erase(entry);
}

}  // namespace rdmax::proto
