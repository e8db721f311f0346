#pragma once
// The receiver's half of a version-2 session's rules (docs/PROTOCOL.md 7.5), as pure
// bookkeeping: which entries are in flight and where each stands, which slots the sender
// holds a credit for, and whether an Offer, a FileChunk or a FileDone obeys the rules. The
// driver (receiver/) asks it before it acts on any of them.
//
// Each entry moves through the machine both sides share (protocol/entry_machine.hpp):
// Offered (the driver checks it and creates the file), Taken (Take sent; its chunks
// arrive), Finished (FileDone arrived; its chunks still being stored), Verifying (every chunk
// stored: the driver verifies and commits), and then settled: Refuse or FileVerdict sent, and
// the entry forgotten. A directory goes from Offered straight to settled.
//
// Slots are shared by every file of the session: Idle, Credited (the sender holds it) or
// Storing (a chunk of some entry is being hashed and written from it).
//
// The ledger holds each entry in flight as one object, from its Offer to its settlement, of
// the type it is made for: the driver's own entry (receiver/incoming_entry.hpp: its file, its
// digest, what it holds of it), a ReceiveEntry in the ledger's tests and fuzzer. It makes it
// from the Offer and hands it back, typed, when it is settled.

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "protocol/entry_machine.hpp"
#include "protocol/enum_names.hpp"
#include "protocol/step_refusal.hpp"
#include "protocol/stripes.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

// The receive ledger's own rules (a step its entry's machine refuses, a FileChunk of an
// entry not taken or a second FileDone, is an EntryFault: protocol/step_refusal.hpp).
enum class ReceiveRule : std::uint8_t {
  EntryOutOfOrder,  // an Offer's entry is not the next number
  TooManyEntries,   // more Offers than Open.entry_count
  TooManyInFlight,  // more than kMaxEntriesInFlight entries unsettled
  TooManyBytes,     // the offered files' sizes exceed Open.total_bytes
  UnknownEntry,     // a message about an entry not in flight (never offered, or settled)
  SlotOutOfRange,
  SlotNotCredited,
  WrongOffset,
  WrongLength,
  PastEnd,
  // A FileAbort of a file offered with its digest (only one offered without it is read
  // before its digest is known, and may be abandoned: 7.9).
  OfferedWithDigest,
  // A FileDone without the digest of a file offered without it, or with one for a file
  // offered with its digest (7.9); or with a digest for an entry joined to a striped file.
  DigestMisplaced,
  // One file over several connections (7.12): a striped Offer or a Join where this
  // connection was not answered Stripes (or a Join on the lead, a striped Offer on a member).
  NotStriping,
  JoinOutOfOrder,    // a Join's entry is not the next number after the Offers and Joins
  AlreadyJoined,     // a second Join of the same striped entry on this connection
  ChunkClaimed,      // a chunk of a striped file that a connection of its group sent already
  StripeUnfinished,  // the striped entry's FileDone before every chunk of it was sent
};
using ReceiveError = StepRefusal<ReceiveRule>;

enum class ReceiveSlotState : std::uint8_t { Idle, Credited, Storing };
// This connection's place in a stripe group (7.12): set when Stripes is about to go (before
// the Accept), never otherwise. The lead may offer striped files, a member may Join them.
enum class StripeRole : std::uint8_t { None, Lead, Member };

// What the rules know of an entry. The driver's entries extend it.
struct ReceiveEntry {
  ReceiveEntry() = default;
  explicit ReceiveEntry(const Offer& offer)
      : kind(offer.kind), size(offer.size), digest_at_end(offer.digest_at_end) {}
  ReceiveEntry(const ReceiveEntry&) = delete;
  ReceiveEntry& operator=(const ReceiveEntry&) = delete;

  EntryKind kind = EntryKind::File;
  EntryState state = EntryState::Offered;
  // One file over several connections (7.12): offered striped (on the group's lead), or an
  // entry joined to such a file (on a member; `size` is the file's). Either takes its
  // chunks at any offset of the file's grid that no connection of the group claimed before.
  bool striped = false;
  std::optional<std::uint32_t> joined_to;  // the lead's entry number
  std::shared_ptr<StripeClaims> claims;    // the file's, shared by the group's entries
  std::uint64_t size = 0;
  bool digest_at_end = false;    // offered without its digest: its FileDone carries it
  std::uint64_t received = 0;    // bytes of accepted FileChunks
  std::uint32_t storing = 0;     // its chunks still being stored
  std::uint64_t done_total = 0;  // FileDone.total_bytes

  // Its last job runs: verifying and committing it, or discarding what it stored.
  bool last_job() const {
    return state == EntryState::Verifying || state == EntryState::Discarding;
  }
};

// `E`: the kind of entry the ledger holds (made from an Offer).
template <class E>
requires std::derived_from<E, ReceiveEntry> && std::constructible_from<E, const Offer&>
class BasicReceiveLedger {
 public:
  using Entry = E;
  using EntryState = proto::EntryState;
  using SlotState = ReceiveSlotState;
  using StripeRole = proto::StripeRole;
  using Entries = std::map<std::uint32_t, std::unique_ptr<E>>;

  BasicReceiveLedger() = default;
  BasicReceiveLedger(const Open& open, std::uint32_t slot_size, std::uint32_t slot_count)
      : open_(open), slot_size_(slot_size), slots_(slot_count) {}

  void set_stripe_role(StripeRole role) { stripe_role_ = role; }
  StripeRole stripe_role() const { return stripe_role_; }

  // An Offer arrived: on success the entry is Offered, made from that Offer, and the
  // ledger's until it is settled.
  [[nodiscard]] std::optional<ReceiveError> offer(const Offer& o) {
    if (offered_ >= open_.entry_count) return ReceiveRule::TooManyEntries;
    if (o.entry != offered_) return ReceiveRule::EntryOutOfOrder;
    if (entries_.size() >= kMaxEntriesInFlight) return ReceiveRule::TooManyInFlight;
    // Computed without overflow: offered_bytes_ <= total_bytes always.
    if (o.size > open_.total_bytes - offered_bytes_) return ReceiveRule::TooManyBytes;
    if (o.striped && stripe_role_ != StripeRole::Lead) return ReceiveRule::NotStriping;
    offered_bytes_ += o.size;
    ++offered_;
    E& e = *(entries_[o.entry] = std::make_unique<E>(o));
    e.striped = o.striped;
    e.state = EntryState::Waiting;
    advance_own(e.kind, e.state, EntryEvent::Offer);  // Waiting: a new entry
    return std::nullopt;
  }
  // Holds is about to go (7.9): Offered -> Held, until the sender's Continue, which
  // continued() checks (Held -> Continued: the driver answers it as an Offer, and no second
  // Holds may go).
  void hold_for_continue(std::uint32_t id) {
    if (E* e = entry(id)) advance_own(e->kind, e->state, EntryEvent::Holds);
  }
  [[nodiscard]] std::optional<ReceiveError> continued(const Continue& c) {
    E* e = entry(c.entry);
    if (e == nullptr) return ReceiveRule::UnknownEntry;
    if (auto fault = advance(e->kind, e->state, EntryEvent::Continue)) return *fault;
    return std::nullopt;
  }
  // A FileAbort (7.9): Taken or Held -> Abandoning; the driver discards the file once
  // its chunks are stored (start_discarding) and settles it with FileVerdict(Abandoned). One
  // for an entry settled while it was received (its write failed: the sender has that
  // verdict) changes nothing.
  [[nodiscard]] std::optional<ReceiveError> abort(const FileAbort& a) {
    E* e = entry(a.entry);
    if (e == nullptr) {
      if (abandoned(a.entry)) return std::nullopt;
      return ReceiveRule::UnknownEntry;
    }
    if (!e->digest_at_end) return ReceiveRule::OfferedWithDigest;
    if (auto fault = advance(e->kind, e->state, EntryEvent::Abort)) return *fault;
    return std::nullopt;
  }
  // An Abandoning entry with no chunk being stored is discarded (-> Discarding): true once.
  bool start_discarding(std::uint32_t id) { return start_last_job(id, EntryState::Abandoning); }
  // The driver took the file (Take is about to go): Offered -> Taken. With `start` (a
  // Resume's offset, PROTOCOL.md 7.6) the bytes before it count as received, and the
  // first FileChunk must start there (a striped file's: any chunk from there on). A step of
  // our own, like settle(): one the entry's machine refuses (an entry not in flight, a
  // directory, one taken already) is a bug of the driver's, std::logic_error, and nothing
  // changes.
  void take(std::uint32_t id, std::uint64_t start = 0) {
    E* e = entry(id);
    if (e == nullptr) throw std::logic_error("the receiver took an entry that is not in flight");
    advance_own(e->kind, e->state, EntryEvent::Take);
    e->received = std::min(start, e->size);
    if (e->striped) e->claims = std::make_shared<StripeClaims>(e->size, slot_size_, e->received);
  }
  // A Join on a member (7.12): checked for this connection (its role, the entry's number, the
  // entries in flight, one Join per striped entry). The driver then looks the lead's entry up
  // and either joins it (joined(): the entry is Taken, its chunks claimed in `claims`) or
  // refuses it (Refuse; the number is used either way).
  [[nodiscard]] std::optional<ReceiveError> join(const Join& j) {
    if (stripe_role_ != StripeRole::Member) return ReceiveRule::NotStriping;
    // Numbered after every Offer the Open announced, in order (u64: no overflow).
    if (std::uint64_t{j.entry} != std::uint64_t{open_.entry_count} + joins_)
      return ReceiveRule::JoinOutOfOrder;
    if (entries_.size() >= kMaxEntriesInFlight) return ReceiveRule::TooManyInFlight;
    for (const auto& [id, e] : entries_)
      if (e->joined_to == j.lead_entry) return ReceiveRule::AlreadyJoined;
    ++joins_;
    return std::nullopt;
  }
  // `made`: the entry joined, made from the striped file's Offer.
  void joined(const Join& j, std::uint64_t size, std::shared_ptr<StripeClaims> claims,
              std::unique_ptr<E> made = std::make_unique<E>()) {
    E& e = *(entries_[j.entry] = std::move(made));
    e.kind = EntryKind::File;
    e.size = size;
    e.joined_to = j.lead_entry;
    e.claims = std::move(claims);
    e.state = EntryState::Waiting;
    advance_own(e.kind, e.state, EntryEvent::Offer);
    advance_own(e.kind, e.state, EntryEvent::Take);
  }
  // Refuse, Have or FileVerdict is about to go (`answer`: Bad, Have or Good, a step of the
  // entry's machine like any other: one it refuses is a bug of ours, std::logic_error, and
  // nothing changes): the entry is forgotten (handed back: null if it was not in flight). Its
  // chunks still being stored keep their slots Storing until stored(). A file settled while
  // Receiving (its write failed) is remembered as abandoned: the FileChunks the sender sent
  // before it saw the FileVerdict are still to come, and only free their slots
  // (discard_chunk()).
  std::unique_ptr<E> settle(std::uint32_t id, EntryEvent answer) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return nullptr;
    const bool receiving = it->second->state == EntryState::Taken;
    advance_own(it->second->kind, it->second->state, answer);
    if (receiving) abandoned_.push_back(id);
    std::unique_ptr<E> settled = std::move(it->second);
    entries_.erase(it);
    return settled;
  }
  [[nodiscard]] bool abandoned(std::uint32_t id) const {
    return std::find(abandoned_.begin(), abandoned_.end(), id) != abandoned_.end();
  }
  // A FileChunk for an abandoned entry: its slot must be Credited, and becomes Idle (the
  // driver credits it back). False: the slot rules are broken.
  [[nodiscard]] bool discard_chunk(const FileChunk& c) {
    if (!abandoned(c.entry) || c.slot >= slots_.size() ||
        slots_[c.slot].state != SlotState::Credited)
      return false;
    slots_[c.slot].state = SlotState::Idle;
    return true;
  }

  // Marks the slot Credited (its Credit is about to go). Only from Idle, and only while
  // a byte may still come (wants_data()).
  [[nodiscard]] bool grant(std::uint32_t slot) {
    if (closed_ || slot >= slots_.size() || slots_[slot].state != SlotState::Idle || !wants_data())
      return false;
    slots_[slot].state = SlotState::Credited;
    return true;
  }
  // A FileChunk: on success the slot is Storing and the entry's received() advances.
  [[nodiscard]] std::optional<ReceiveError> accept_chunk(const FileChunk& c) {
    E* found = entry(c.entry);
    if (found == nullptr) return ReceiveRule::UnknownEntry;
    E& e = *found;
    EntryState next = e.state;
    if (auto fault = advance(e.kind, next, EntryEvent::Chunk)) return *fault;
    if (c.slot >= slots_.size()) return ReceiveRule::SlotOutOfRange;
    if (e.received == e.size) return ReceiveRule::PastEnd;
    if (slots_[c.slot].state != SlotState::Credited) return ReceiveRule::SlotNotCredited;
    if (e.claims) {
      // A striped file's chunk: anywhere on its grid, once in the group (7.12).
      if (c.offset >= e.size || c.offset % slot_size_ != 0) return ReceiveRule::WrongOffset;
      if (c.length == 0 || c.length != std::min<std::uint64_t>(slot_size_, e.size - c.offset))
        return ReceiveRule::WrongLength;
      if (!e.claims->claim(c.offset, c.length)) return ReceiveRule::ChunkClaimed;
    } else {
      if (c.offset != e.received) return ReceiveRule::WrongOffset;
      // Never forms offset + length, which could overflow.
      const std::uint64_t expected = std::min<std::uint64_t>(slot_size_, e.size - e.received);
      if (c.length == 0 || c.length != expected) return ReceiveRule::WrongLength;
    }
    slots_[c.slot] = {SlotState::Storing, c.entry};
    ++storing_;
    ++e.storing;
    if (e.claims) e.claims->store_started();
    e.received += c.length;
    return std::nullopt;
  }
  // The chunk in `slot` is stored: the slot becomes Idle. Returns true when it should be
  // credited back (wants_data()); the driver then calls grant().
  bool stored(std::uint32_t slot, std::uint32_t id) {
    if (slot >= slots_.size() || !slots_[slot].storing(id)) return false;
    slots_[slot].state = SlotState::Idle;
    --storing_;
    if (E* e = entry(id); e != nullptr && e->storing > 0) {
      --e->storing;
      if (e->claims) e->claims->store_ended();
    }
    return !closed_ && wants_data();
  }
  // An entry's stores were cancelled (it was settled early, or the connection ends): its
  // Storing slots become Idle. Returns them (the driver credits them back, if wanted).
  std::vector<std::uint32_t> release_slots_of(std::uint32_t id) {
    std::vector<std::uint32_t> released;
    for (std::uint32_t slot = 0; slot < slots_.size(); ++slot) {
      if (!slots_[slot].storing(id)) continue;
      slots_[slot].state = SlotState::Idle;
      --storing_;
      released.push_back(slot);
    }
    if (E* e = entry(id)) {
      if (e->claims)
        for (std::uint32_t i = 0; i < e->storing; ++i) e->claims->store_ended();
      e->storing = 0;
    }
    return released;
  }
  // A FileDone: Taken -> Finished. A joined entry's carries no digest (its total is what it
  // sent); a striped entry's comes once every chunk of the file is claimed. One for an entry
  // settled while it was received (its write failed: the sender sent it before it saw that
  // FileVerdict) changes nothing.
  [[nodiscard]] std::optional<ReceiveError> file_done(const FileDone& d) {
    E* e = entry(d.entry);
    if (e == nullptr) {
      if (abandoned(d.entry)) return std::nullopt;
      return ReceiveRule::UnknownEntry;
    }
    // The machine first (is a FileDone due at all?), then the form the entry's Offer set.
    EntryState next = e->state;
    if (auto fault = advance(e->kind, next, EntryEvent::FileDone)) return *fault;
    const bool digest_due = e->digest_at_end && !e->joined_to;
    if (digest_due != d.digest.has_value()) return ReceiveRule::DigestMisplaced;
    if (e->striped && e->claims && !e->claims->all_claimed()) return ReceiveRule::StripeUnfinished;
    e->state = next;
    e->done_total = d.total_bytes;
    return std::nullopt;
  }
  // A Finished entry with no chunk being stored starts verifying (-> Verifying): true once.
  bool start_verifying(std::uint32_t id) { return start_last_job(id, EntryState::Finished); }
  // The connection ends: no slot is credited from now on.
  void close() {
    closed_ = true;
    for (Slot& slot : slots_)
      if (slot.state == SlotState::Credited) slot.state = SlotState::Idle;
  }
  bool closed() const { return closed_; }
  // The session was cut short: every entry in flight is handed back, none is settled.
  Entries drop_entries() { return std::exchange(entries_, {}); }

  // Id and Bye: allowed once every entry was offered and settled.
  [[nodiscard]] bool all_settled() const {
    return offered_ == open_.entry_count && entries_.empty();
  }
  // A byte may still arrive: an entry is still to be offered and the sizes offered so far
  // are below Open.total_bytes, or a file taken or being checked has bytes not received.
  [[nodiscard]] bool wants_data() const {
    // A file still to be offered may have bytes. Open.total_bytes is an upper bound
    // (PROTOCOL.md 7.5): once every entry is offered, only what was offered counts.
    if (offered_ < open_.entry_count && offered_bytes_ < open_.total_bytes) return true;
    for (const auto& [id, e] : entries_) {
      // A striped file wants data until every chunk is claimed, an entry joined to it until
      // its FileDone (what it carries is the sender's choice).
      if (e->claims) {
        if (e->state == EntryState::Taken && (e->joined_to || !e->claims->all_claimed()))
          return true;
        continue;
      }
      if ((e->state == EntryState::Offered || e->state == EntryState::Held ||
           e->state == EntryState::Continued || e->state == EntryState::Taken) &&
          e->received < e->size)
        return true;
    }
    return false;
  }

  // A number past the Offers the Open announced: a Join's (7.12).
  bool joined_number(std::uint32_t id) const { return id >= open_.entry_count; }
  E* entry(std::uint32_t id) {
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : it->second.get();
  }
  const E* entry(std::uint32_t id) const {
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : it->second.get();
  }
  const Entries& entries() const { return entries_; }
  SlotState slot_state(std::uint32_t slot) const {
    return slot < slots_.size() ? slots_[slot].state : SlotState::Idle;
  }
  std::vector<SlotState> slot_states() const {
    std::vector<SlotState> states;
    for (const Slot& slot : slots_) states.push_back(slot.state);
    return states;
  }
  std::uint32_t slot_count() const { return static_cast<std::uint32_t>(slots_.size()); }
  std::uint32_t slot_size() const { return slot_size_; }
  std::uint32_t offered() const { return offered_; }
  std::uint32_t storing() const { return storing_; }

 private:
  // An entry in state `when` with no chunk being stored starts its last job (verifying, or
  // discarding what it stored): the machine's Stored, once.
  bool start_last_job(std::uint32_t id, EntryState when) {
    E* e = entry(id);
    if (e == nullptr || e->state != when || e->storing > 0) return false;
    // A striped file is verified once the chunks every connection of its group carried are
    // stored (its FileDone came once all were claimed).
    if (when == EntryState::Finished && e->striped && e->claims && e->claims->stores_running())
      return false;
    advance_own(e->kind, e->state, EntryEvent::Stored);
    return true;
  }

  Open open_{};
  std::uint32_t slot_size_ = 0;
  // One slot: where it stands, and whose chunk it holds while Storing.
  struct Slot {
    SlotState state = SlotState::Idle;
    std::uint32_t entry = 0;
    bool storing(std::uint32_t id) const { return state == SlotState::Storing && entry == id; }
  };
  std::vector<Slot> slots_;
  Entries entries_;                       // in flight
  std::vector<std::uint32_t> abandoned_;  // settled while Receiving
  std::uint32_t offered_ = 0;
  std::uint64_t offered_bytes_ = 0;
  StripeRole stripe_role_ = StripeRole::None;
  std::uint32_t joins_ = 0;  // Joins numbered so far (after Open.entry_count's Offers)
  std::uint32_t storing_ = 0;
  bool closed_ = false;
};

// The ledger of the rules alone: its tests and fuzzer.
using ReceiveLedger = BasicReceiveLedger<ReceiveEntry>;

}  // namespace rdmax::proto
