#pragma once
// fuzz_session_ledgers: the ReceiveLedger beside a model of its contract,
// checked after every call.

// The includes and the names the checks share.
#include "tests/fuzz/session_ledger_input.hpp"

namespace rdmax::fuzz {

// The ReceiveLedger, likewise.
class ReceiverCheck {
 public:
  explicit ReceiverCheck(const Setup& s)
      : ledger_(s.open, s.accept.slot_size, s.accept.slot_count), setup_(s) {
    FUZZ_CHECK(ledger_.slot_count() == s.accept.slot_count);
    check();
  }

  const ReceiveLedger& ledger() const { return ledger_; }

  std::optional<ReceiveError> offer(const Offer& o) {
    const Snapshot before = snapshot();
    std::optional<ReceiveError> expected;
    if (ledger_.offered() >= setup_.open.entry_count) {
      expected = ReceiveRule::TooManyEntries;
    } else if (o.entry != ledger_.offered()) {
      expected = ReceiveRule::EntryOutOfOrder;
    } else if (ledger_.entries().size() >= kMaxEntriesInFlight) {
      expected = ReceiveRule::TooManyInFlight;
    } else if (o.size > setup_.open.total_bytes - offered_bytes_) {
      expected = ReceiveRule::TooManyBytes;
    }
    const auto error = ledger_.offer(o);
    FUZZ_CHECK(error == expected);
    if (error) {
      FUZZ_CHECK(snapshot() == before);
    } else {
      offered_bytes_ += o.size;
      FUZZ_CHECK(ledger_.offered() == before.offered + 1);
      const auto* e = ledger_.entry(o.entry);
      FUZZ_CHECK(e != nullptr && e->state == RState::Offered && e->size == o.size &&
                 e->kind == o.kind && e->received == 0 && e->storing == 0);
    }
    check();
    return error;
  }

  void take(std::uint32_t id) {
    const auto* e = ledger_.entry(id);
    // The entry machine (protocol/entry_machine.hpp): only an offered file is taken; taking a
    // directory, an entry taken already or one not in flight is a bug of the driver's,
    // refused (std::logic_error) with nothing changed.
    const bool moves = e != nullptr && e->state == RState::Offered && e->kind == EntryKind::File;
    const auto before = e != nullptr ? std::optional(e->state) : std::nullopt;
    bool refused = false;
    try {
      ledger_.take(id);
    } catch (const std::logic_error&) {
      refused = true;
    }
    FUZZ_CHECK(refused == !moves);
    if (moves) FUZZ_CHECK(ledger_.entry(id)->state == RState::Taken);
    if (!moves && before) FUZZ_CHECK(ledger_.entry(id)->state == *before);
    check();
  }

  // Refuse, Have or a FileVerdict goes: an answer the entry's machine refuses is a bug of
  // the driver's, refused with nothing changed.
  void settle(std::uint32_t id, EntryEvent answer) {
    const auto* e = ledger_.entry(id);
    const bool in_flight = e != nullptr;
    const bool abandons = in_flight && e->state == RState::Taken;
    const std::size_t count = ledger_.entries().size();
    if (in_flight) {
      RState model = e->state;
      if (advance(e->kind, model, answer)) {
        const RState before = e->state;
        bool refused = false;
        try {
          (void)ledger_.settle(id, answer);
        } catch (const std::logic_error&) {
          refused = true;
        }
        FUZZ_CHECK(refused && ledger_.entry(id) != nullptr && ledger_.entry(id)->state == before);
        return check();
      }
    }
    (void)ledger_.settle(id, answer);
    FUZZ_CHECK(ledger_.entry(id) == nullptr);
    FUZZ_CHECK(ledger_.entries().size() == count - (in_flight ? 1 : 0));
    if (abandons) FUZZ_CHECK(ledger_.abandoned(id));
    check();
  }

  bool discard_chunk(const FileChunk& c) {
    const bool expected = ledger_.abandoned(c.entry) && c.slot < setup_.accept.slot_count &&
                          ledger_.slot_state(c.slot) == SlotState::Credited;
    const bool discarded = ledger_.discard_chunk(c);
    FUZZ_CHECK(discarded == expected);
    if (discarded) FUZZ_CHECK(ledger_.slot_state(c.slot) == SlotState::Idle);
    check();
    return discarded;
  }

  bool grant(std::uint32_t slot) {
    const bool expected = !closed_ && slot < setup_.accept.slot_count &&
                          ledger_.slot_state(slot) == SlotState::Idle && ledger_.wants_data();
    const bool granted = ledger_.grant(slot);
    FUZZ_CHECK(granted == expected);
    if (granted) FUZZ_CHECK(ledger_.slot_state(slot) == SlotState::Credited);
    check();
    return granted;
  }

  std::optional<ReceiveError> accept_chunk(const FileChunk& c) {
    const Snapshot before = snapshot();
    const auto expected = expected_chunk_error(c);
    const auto error = ledger_.accept_chunk(c);
    FUZZ_CHECK(error == expected);
    if (error) {
      FUZZ_CHECK(snapshot() == before);
    } else {
      const auto* e = ledger_.entry(c.entry);
      // Every byte of the file exactly once, in order.
      FUZZ_CHECK(c.offset + c.length == e->received && c.length > 0);
      FUZZ_CHECK(ledger_.slot_state(c.slot) == SlotState::Storing);
      FUZZ_CHECK(ledger_.storing() == before.storing + 1);
      accepted_bytes_ += c.length;
    }
    check();
    return error;
  }

  bool stored(std::uint32_t slot, std::uint32_t id) {
    const bool was_storing = ledger_.slot_state(slot) == SlotState::Storing;
    const std::uint32_t storing = ledger_.storing();
    const bool again = ledger_.stored(slot, id);
    if (!was_storing) FUZZ_CHECK(!again && ledger_.storing() == storing);
    if (ledger_.storing() != storing) {  // it was this entry's: the slot is free
      FUZZ_CHECK(ledger_.storing() == storing - 1);
      FUZZ_CHECK(ledger_.slot_state(slot) == SlotState::Idle);
      FUZZ_CHECK(again == (!closed_ && ledger_.wants_data()));
    } else {
      FUZZ_CHECK(!again);
    }
    check();
    return again;
  }

  std::vector<std::uint32_t> release_slots_of(std::uint32_t id) {
    const std::uint32_t storing = ledger_.storing();
    const auto released = ledger_.release_slots_of(id);
    FUZZ_CHECK(ledger_.storing() == storing - released.size());
    for (std::uint32_t slot : released) FUZZ_CHECK(ledger_.slot_state(slot) == SlotState::Idle);
    if (const auto* e = ledger_.entry(id)) FUZZ_CHECK(e->storing == 0);
    check();
    return released;
  }

  std::optional<ReceiveError> file_done(const FileDone& d) {
    const Snapshot before = snapshot();
    const auto* e = ledger_.entry(d.entry);
    std::optional<ReceiveError> expected;
    // (One for an entry settled while it was received changes nothing.)
    const bool late = e == nullptr && ledger_.abandoned(d.entry);
    if (e == nullptr) {
      if (!late) expected = ReceiveRule::UnknownEntry;
    } else if (e->state != RState::Taken) {
      expected = machine_refusal(e->kind, e->state, EntryEvent::FileDone);
    } else if (e->digest_at_end != d.digest.has_value()) {
      expected = ReceiveRule::DigestMisplaced;
    }
    const auto error = ledger_.file_done(d);
    FUZZ_CHECK(error == expected);
    if (error || late) {
      FUZZ_CHECK(snapshot() == before);
    } else {
      FUZZ_CHECK(ledger_.entry(d.entry)->state == RState::Finished);
    }
    check();
    return error;
  }

  bool start_verifying(std::uint32_t id) {
    const auto* e = ledger_.entry(id);
    const bool expected = e != nullptr && e->state == RState::Finished && e->storing == 0;
    const bool started = ledger_.start_verifying(id);
    FUZZ_CHECK(started == expected);
    if (started) FUZZ_CHECK(ledger_.entry(id)->state == RState::Verifying);
    check();
    return started;
  }

  void close() {
    ledger_.close();
    closed_ = true;
    check();
  }

 private:
  struct Snapshot {
    std::vector<std::uint64_t> fields;
    std::uint32_t offered = 0;
    std::uint32_t storing = 0;
    bool operator==(const Snapshot&) const = default;
  };
  Snapshot snapshot() const {
    Snapshot s;
    for (const auto& [id, entry] : ledger_.entries()) {
      const auto& e = *entry;
      s.fields.insert(s.fields.end(),
                      {id, static_cast<std::uint64_t>(e.kind), static_cast<std::uint64_t>(e.state),
                       e.size, e.received, e.storing, e.done_total});
    }
    for (std::uint32_t slot = 0; slot < ledger_.slot_count(); ++slot)
      s.fields.push_back(static_cast<std::uint64_t>(ledger_.slot_state(slot)));
    s.offered = ledger_.offered();
    s.storing = ledger_.storing();
    return s;
  }

  // The rules in the order the ledger (protocol/receive_ledger.hpp) applies them.
  std::optional<ReceiveError> expected_chunk_error(const FileChunk& c) const {
    const auto* e = ledger_.entry(c.entry);
    if (e == nullptr) return ReceiveRule::UnknownEntry;
    if (e->state != RState::Taken) return machine_refusal(e->kind, e->state, EntryEvent::Chunk);
    if (c.slot >= setup_.accept.slot_count) return ReceiveRule::SlotOutOfRange;
    if (e->received == e->size) return ReceiveRule::PastEnd;
    if (ledger_.slot_state(c.slot) != SlotState::Credited) return ReceiveRule::SlotNotCredited;
    if (c.offset != e->received) return ReceiveRule::WrongOffset;
    const std::uint64_t expected =
        std::min<std::uint64_t>(setup_.accept.slot_size, e->size - e->received);
    if (c.length == 0 || c.length != expected) return ReceiveRule::WrongLength;
    return std::nullopt;
  }

  void check() const {
    FUZZ_CHECK(ledger_.entries().size() <= kMaxEntriesInFlight);
    FUZZ_CHECK(ledger_.offered() <= setup_.open.entry_count);
    FUZZ_CHECK(offered_bytes_ <= setup_.open.total_bytes);
    std::uint64_t storing_of_entries = 0;
    std::uint64_t received = 0;
    for (const auto& [id, entry] : ledger_.entries()) {
      const auto& e = *entry;
      FUZZ_CHECK(id < ledger_.offered());
      FUZZ_CHECK(!ledger_.abandoned(id));
      FUZZ_CHECK(e.received <= e.size);
      // Whole slots, except the file's last chunk.
      FUZZ_CHECK(e.received == e.size || e.received % setup_.accept.slot_size == 0);
      if (e.state == RState::Offered) FUZZ_CHECK(e.received == 0 && e.storing == 0);
      if (e.kind == EntryKind::Directory) FUZZ_CHECK(e.size == 0);
      storing_of_entries += e.storing;
      received += e.received;
    }
    FUZZ_CHECK(received <= accepted_bytes_ && accepted_bytes_ <= offered_bytes_);
    std::uint32_t storing = 0;
    for (std::uint32_t slot = 0; slot < setup_.accept.slot_count; ++slot) {
      const SlotState s = ledger_.slot_state(slot);
      if (s == SlotState::Storing) ++storing;
      if (closed_) FUZZ_CHECK(s != SlotState::Credited);
    }
    FUZZ_CHECK(ledger_.storing() == storing);
    FUZZ_CHECK(storing_of_entries <= storing);
    FUZZ_CHECK(ledger_.slot_state(setup_.accept.slot_count) == SlotState::Idle);
    FUZZ_CHECK(ledger_.all_settled() ==
               (ledger_.offered() == setup_.open.entry_count && ledger_.entries().empty()));
  }

  ReceiveLedger ledger_;
  Setup setup_;
  std::uint64_t offered_bytes_ = 0;
  std::uint64_t accepted_bytes_ = 0;  // of every accepted FileChunk
  bool closed_ = false;
};

}  // namespace rdmax::fuzz
