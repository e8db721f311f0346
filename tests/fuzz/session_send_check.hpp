#pragma once
// fuzz_session_ledgers: the SendLedger beside a model of its contract, checked
// after every call.

// The includes and the names the checks share.
#include "tests/fuzz/session_ledger_input.hpp"

namespace rdmax::fuzz {

// The SendLedger and a model of what its contract says it does.
class SenderCheck {
 public:
  explicit SenderCheck(const Setup& s)
      : ledger_(s.entries, s.accept, s.max_active),
        setup_(s),
        model_(s.entries.size()),
        held_(s.accept.slot_count, false),
        rkey_(s.accept.slot_count, 0),
        in_flight_(s.accept.slot_count, 0),
        owner_(s.accept.slot_count, 0),
        out_(s.accept.slot_count, false) {
    FUZZ_CHECK(ledger_.entry_count() == s.entries.size());
    FUZZ_CHECK(ledger_.active_slots() == std::min(s.accept.slot_count, std::max(s.max_active, 1U)));
    check();
  }

  const SendLedger& ledger() const { return ledger_; }
  void allow_directories(bool allowed) {
    ledger_.allow_directories(allowed);
    directories_allowed_ = allowed;
  }

  std::optional<std::uint32_t> next_offer() {
    std::optional<std::uint32_t> expected;
    if (next_ < model_.size() && unsettled() < kMaxEntriesInFlight) {
      const bool directory = setup_.entries[next_].kind == EntryKind::Directory;
      if (!directory || (directories_allowed_ && files_unsettled() == 0)) expected = next_;
    }
    const auto offered = ledger_.next_offer();
    FUZZ_CHECK(offered == expected);
    if (offered) {
      model_[*offered].state = SState::Offered;
      ++next_;
    }
    check();
    return offered;
  }

  std::optional<ReplyError> taken(std::uint32_t entry) {
    std::optional<ReplyError> expected;
    const SState s = state_of(entry);
    if (entry >= model_.size()) {
      expected = ReplyRule::UnknownEntry;
    } else if (s != SState::Offered || setup_.entries[entry].kind != EntryKind::File) {
      expected = machine_refusal(setup_.entries[entry].kind, s, EntryEvent::Take);
    }
    const auto error = ledger_.taken(entry);
    FUZZ_CHECK(error == expected);
    if (!error) {
      model_[entry].state = SState::Taken;
      if (setup_.entries[entry].size > 0) taken_order_.push_back(entry);
    }
    check();
    return error;
  }

  std::optional<ReplyError> settled(std::uint32_t entry, bool good) {
    std::optional<ReplyError> expected;
    const SState s = state_of(entry);
    if (entry >= model_.size()) {
      expected = ReplyRule::UnknownEntry;
    } else if (s == SState::Waiting || s == SState::Settled ||
               (good && setup_.entries[entry].kind == EntryKind::File && s != SState::Finished)) {
      expected =
          machine_refusal(setup_.entries[entry].kind, s, good ? EntryEvent::Good : EntryEvent::Bad);
    }
    const auto error = ledger_.settled(entry, good);
    FUZZ_CHECK(error == expected);
    if (!error) {
      model_[entry].state = SState::Settled;
      std::erase(taken_order_, entry);
    }
    check();
    return error;
  }

  std::optional<CreditError> credit(const Credit& c) {
    const auto error = ledger_.credit(c);
    if (c.slot >= held_.size()) {
      FUZZ_CHECK(error == CreditError::SlotOutOfRange);
    } else if (held_[c.slot]) {
      FUZZ_CHECK(error == CreditError::AlreadyHeld);
    } else {
      FUZZ_CHECK(!error);
      held_[c.slot] = true;
      rkey_[c.slot] = c.rkey;
      if (out_[c.slot]) {  // its chunk is stored: its file has one fewer out
        out_[c.slot] = false;
        --model_[owner_[c.slot]].chunks_out;
      }
    }
    check();
    return error;
  }

  std::optional<SendLedger::Planned> next_chunk() {
    std::optional<std::uint32_t> slot;
    if (!taken_order_.empty()) {
      for (std::uint32_t s = 0; s < ledger_.active_slots() && !slot; ++s)
        if (held_[s] && in_flight_[s] == 0) slot = s;
    }
    const auto p = ledger_.next_chunk();
    FUZZ_CHECK(p.has_value() == slot.has_value());
    if (p) {
      // Of the oldest kInterleavedFiles taken files, the one with the fewest chunks out (the
      // oldest of those).
      std::uint32_t entry = taken_order_.front();
      for (std::size_t i = 1; i < std::min(taken_order_.size(), kInterleavedFiles); ++i)
        if (model_[taken_order_[i]].chunks_out < model_[entry].chunks_out) entry = taken_order_[i];
      Model& m = model_[entry];
      const std::uint64_t size = setup_.entries[entry].size;
      FUZZ_CHECK(p->entry == entry && p->slot == *slot && p->rkey == rkey_[*slot]);
      FUZZ_CHECK(m.state == SState::Taken);
      FUZZ_CHECK(p->offset == m.next_offset);
      FUZZ_CHECK(p->length ==
                 std::min<std::uint64_t>(setup_.accept.slot_size, size - m.next_offset));
      FUZZ_CHECK(p->length > 0);
      FUZZ_CHECK(p->remote_addr ==
                 setup_.accept.region_addr + std::uint64_t{*slot} * setup_.accept.slot_size);
      m.next_offset += p->length;
      ++m.chunks_in_flight;
      ++m.chunks_out;
      if (m.next_offset == size) std::erase(taken_order_, entry);
      held_[*slot] = false;
      out_[*slot] = true;
      in_flight_[*slot] = p->length;
      owner_[*slot] = entry;
      sent_ += p->length;
    }
    check();
    return p;
  }

  std::uint32_t completed(std::uint32_t slot) {
    const std::uint32_t expected = slot < in_flight_.size() ? in_flight_[slot] : 0;
    const std::uint32_t length = ledger_.completed(slot);
    FUZZ_CHECK(length == expected);
    if (expected != 0) {
      in_flight_[slot] = 0;
      completed_ += expected;
      Model& m = model_[owner_[slot]];
      if (m.chunks_in_flight > 0) --m.chunks_in_flight;
    }
    check();
    return length;
  }

  std::optional<std::uint32_t> next_file_done() {
    const auto done = ledger_.next_file_done();
    if (done) {
      FUZZ_CHECK(*done < model_.size());
      Model& m = model_[*done];
      FUZZ_CHECK(m.state == SState::Taken && m.chunks_in_flight == 0 &&
                 m.next_offset == setup_.entries[*done].size);
      m.state = SState::Finished;
    } else {
      for (std::uint32_t e = 0; e < model_.size(); ++e) {
        const Model& m = model_[e];
        FUZZ_CHECK(!(m.state == SState::Taken && m.chunks_in_flight == 0 &&
                     m.next_offset == setup_.entries[e].size));
      }
    }
    check();
    return done;
  }

  std::uint32_t nth_busy(std::uint8_t n) const {
    std::vector<std::uint32_t> busy;
    for (std::uint32_t s = 0; s < in_flight_.size(); ++s)
      if (in_flight_[s] != 0) busy.push_back(s);
    return busy.empty() ? 0 : busy[n % busy.size()];
  }

 private:
  struct Model {
    SState state = SState::Waiting;
    std::uint64_t next_offset = 0;
    std::uint32_t chunks_in_flight = 0;
    std::uint32_t chunks_out = 0;  // planned, their slots not credited back since
  };

  SState state_of(std::uint32_t entry) const {
    return entry < model_.size() ? model_[entry].state : SState::Settled;
  }
  std::uint32_t unsettled() const {
    return static_cast<std::uint32_t>(std::count_if(
        model_.begin(), model_.end(),
        [](const Model& m) { return m.state != SState::Waiting && m.state != SState::Settled; }));
  }
  std::uint32_t files_unsettled() const {
    std::uint32_t n = 0;
    for (std::uint32_t e = 0; e < model_.size(); ++e) {
      const SState s = model_[e].state;
      if (setup_.entries[e].kind == EntryKind::File && s != SState::Waiting && s != SState::Settled)
        ++n;
    }
    return n;
  }

  void check() const {
    FUZZ_CHECK(ledger_.unsettled_offers() == unsettled());
    FUZZ_CHECK(ledger_.unsettled_offers() <= kMaxEntriesInFlight);
    bool all_settled = true;
    for (std::uint32_t e = 0; e < model_.size(); ++e) {
      FUZZ_CHECK(ledger_.state(e) == model_[e].state);
      FUZZ_CHECK(model_[e].next_offset <= setup_.entries[e].size);
      all_settled = all_settled && model_[e].state == SState::Settled;
    }
    FUZZ_CHECK(ledger_.state(static_cast<std::uint32_t>(model_.size())) == SState::Settled);
    FUZZ_CHECK(ledger_.all_settled() == all_settled);
    FUZZ_CHECK(ledger_.bytes_completed() == completed_ && completed_ <= sent_);
    std::uint64_t in_flight = 0;
    for (std::uint32_t s = 0; s < in_flight_.size(); ++s) {
      in_flight += in_flight_[s];
      if (s >= ledger_.active_slots()) FUZZ_CHECK(in_flight_[s] == 0);
    }
    FUZZ_CHECK(sent_ - completed_ == in_flight);
  }

  SendLedger ledger_;
  Setup setup_;
  std::vector<Model> model_;
  std::vector<bool> held_;                // a Credit accepted and not used yet
  std::vector<std::uint32_t> rkey_;       // of that Credit
  std::vector<std::uint32_t> in_flight_;  // length of the chunk in a busy slot
  std::vector<std::uint32_t> owner_;      // and its entry
  std::vector<bool> out_;                 // its chunk not stored yet (no Credit since)
  std::vector<std::uint32_t> taken_order_;
  std::uint32_t next_ = 0;
  std::uint64_t sent_ = 0;
  std::uint64_t completed_ = 0;
  bool directories_allowed_ = true;
};

}  // namespace rdmax::fuzz
