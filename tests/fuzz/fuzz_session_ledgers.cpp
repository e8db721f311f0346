// Fuzz target for the version-2 session ledgers (protocol/session_send_ledger.hpp,
// protocol/session_receive_ledger.hpp), the way fuzz_ledgers drives the single-file ones:
// the input runs both ledgers through any sequence of calls and of decoded session
// messages, and after each call the checks below compare what the ledger did with what its
// contract lets an observer predict, and check its invariants: never more than
// kMaxEntriesInFlight entries unsettled, every byte of a file accepted once and in order,
// slot and byte accounting that adds up, and a failed call that changes nothing.
//
// Input: a setup (the entries, slot size and count, the sender's limit, an Open that may
// lie), then operations, one tag byte each plus arguments; bytes missing at the end read
// as zero. Between the ledgers sits a wire of Messages, each encoded and decoded on the way
// (so the session messages the ledgers see are decoded ones). The honest operations play
// both drivers by the protocol in any interleaving; as long as only they have run
// ("clean"), no delivered message may be refused and both sides must end settled together.
// The hostile operations (a message decoded from raw bytes, a driver call with any values)
// end that.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "protocol/session_receive_ledger.hpp"
#include "protocol/session_send_ledger.hpp"
#include "protocol/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace rdmax::proto;
using RState = SessionReceiveLedger::EntryState;
using SState = SessionSendLedger::EntryState;
using SlotState = SessionReceiveLedger::SlotState;

class Input {
 public:
  explicit Input(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool empty() const { return bytes_.empty(); }
  std::uint8_t u8() {
    if (bytes_.empty()) return 0;
    const std::uint8_t b = bytes_[0];
    bytes_ = bytes_.subspan(1);
    return b;
  }
  std::uint64_t little_endian(int size) {
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i) v |= std::uint64_t{u8()} << (8 * i);
    return v;
  }
  std::uint16_t u16() { return static_cast<std::uint16_t>(little_endian(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(little_endian(4)); }
  std::uint64_t u64() { return little_endian(8); }
  // Mostly a small number (a real entry or slot), sometimes any value.
  std::uint32_t small() {
    const std::uint8_t b = u8();
    return b < 0xF0 ? b % 48U : u32();
  }

 private:
  std::span<const std::uint8_t> bytes_;
};

struct Setup {
  std::vector<SessionSendLedger::EntryPlan> entries;
  Open open;
  Accept accept;
  std::uint32_t max_active = 0;
  bool honest = true;  // the Open tells the truth
};

Setup read_setup(Input& in) {
  Setup s;
  const std::uint32_t n = 1 + in.u8() % 40U;  // beyond kMaxEntriesInFlight on purpose
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint8_t b = in.u8();
    SessionSendLedger::EntryPlan p;
    if (b & 0x80) {
      p.kind = EntryKind::Directory;
    } else {
      switch (b % 4) {
        case 0:
          p.size = in.u8();
          break;
        case 1:
          p.size = in.u16();
          break;
        case 2:
          p.size = 0;
          break;
        default:
          p.size = in.u32();  // many chunks with a small slot
      }
    }
    total += p.size;
    s.entries.push_back(p);
  }
  const std::uint8_t slot = in.u8();
  s.accept.slot_size = slot >= 0xF0 ? kMinSlotSize : 1 + slot % 16U;
  const std::uint8_t count = in.u8();
  s.accept.slot_count = count >= 0xF0 ? kMaxSlotCount : 1 + count % 8U;
  s.accept.region_addr = std::uint64_t{in.u32()} << 12;
  s.max_active = in.u8() % 10U;
  s.open.entry_count = n;
  s.open.total_bytes = total;
  switch (in.u8() % 8) {  // an Open that lies about the session
    case 0:
      s.open.total_bytes = in.u64();
      s.honest = false;
      break;
    case 1:
      s.open.entry_count = 1 + in.u8();
      s.honest = false;
      break;
    default:
      break;
  }
  return s;
}

// The SessionSendLedger and a model of what its contract says it does.
class SenderCheck {
 public:
  explicit SenderCheck(const Setup& s)
      : ledger_(s.entries, s.accept, s.max_active),
        setup_(s),
        model_(s.entries.size()),
        held_(s.accept.slot_count, false),
        rkey_(s.accept.slot_count, 0),
        in_flight_(s.accept.slot_count, 0),
        owner_(s.accept.slot_count, 0) {
    FUZZ_CHECK(ledger_.entry_count() == s.entries.size());
    FUZZ_CHECK(ledger_.active_slots() == std::min(s.accept.slot_count, std::max(s.max_active, 1U)));
    check();
  }

  const SessionSendLedger& ledger() const { return ledger_; }
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

  std::optional<SessionReplyError> taken(std::uint32_t entry) {
    std::optional<SessionReplyError> expected;
    const SState s = state_of(entry);
    if (s == SState::Waiting || s == SState::Settled) {
      expected = SessionReplyError::UnknownEntry;
    } else if (setup_.entries[entry].kind != EntryKind::File) {
      expected = SessionReplyError::NotAFile;
    } else if (s != SState::Offered) {
      expected = SessionReplyError::AlreadyTaken;
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

  std::optional<SessionReplyError> settled(std::uint32_t entry, bool good) {
    std::optional<SessionReplyError> expected;
    const SState s = state_of(entry);
    if (s == SState::Waiting || s == SState::Settled) {
      expected = SessionReplyError::UnknownEntry;
    } else if (good && setup_.entries[entry].kind == EntryKind::File && s != SState::Finished) {
      expected = SessionReplyError::TooEarly;
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
    }
    check();
    return error;
  }

  std::optional<SessionSendLedger::Planned> next_chunk() {
    std::optional<std::uint32_t> slot;
    if (!taken_order_.empty()) {
      for (std::uint32_t s = 0; s < ledger_.active_slots() && !slot; ++s)
        if (held_[s] && in_flight_[s] == 0) slot = s;
    }
    const auto p = ledger_.next_chunk();
    FUZZ_CHECK(p.has_value() == slot.has_value());
    if (p) {
      const std::uint32_t entry = taken_order_.front();
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
      if (m.next_offset == size) taken_order_.erase(taken_order_.begin());
      held_[*slot] = false;
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

  SessionSendLedger ledger_;
  Setup setup_;
  std::vector<Model> model_;
  std::vector<bool> held_;                // a Credit accepted and not used yet
  std::vector<std::uint32_t> rkey_;       // of that Credit
  std::vector<std::uint32_t> in_flight_;  // length of the chunk in a busy slot
  std::vector<std::uint32_t> owner_;      // and its entry
  std::vector<std::uint32_t> taken_order_;
  std::uint32_t next_ = 0;
  std::uint64_t sent_ = 0;
  std::uint64_t completed_ = 0;
  bool directories_allowed_ = true;
};

// The SessionReceiveLedger, likewise.
class ReceiverCheck {
 public:
  explicit ReceiverCheck(const Setup& s)
      : ledger_(s.open, s.accept.slot_size, s.accept.slot_count), setup_(s) {
    FUZZ_CHECK(ledger_.slot_count() == s.accept.slot_count);
    check();
  }

  const SessionReceiveLedger& ledger() const { return ledger_; }

  std::optional<SessionError> offer(const Offer& o) {
    const Snapshot before = snapshot();
    std::optional<SessionError> expected;
    if (ledger_.offered() >= setup_.open.entry_count) {
      expected = SessionError::TooManyEntries;
    } else if (o.entry != ledger_.offered()) {
      expected = SessionError::EntryOutOfOrder;
    } else if (ledger_.entries().size() >= kMaxEntriesInFlight) {
      expected = SessionError::TooManyInFlight;
    } else if (o.size > setup_.open.total_bytes - offered_bytes_) {
      expected = SessionError::TooManyBytes;
    }
    const auto error = ledger_.offer(o);
    FUZZ_CHECK(error == expected);
    if (error) {
      FUZZ_CHECK(snapshot() == before);
    } else {
      offered_bytes_ += o.size;
      FUZZ_CHECK(ledger_.offered() == before.offered + 1);
      const auto* e = ledger_.entry(o.entry);
      FUZZ_CHECK(e != nullptr && e->state == RState::Checking && e->size == o.size &&
                 e->kind == o.kind && e->received == 0 && e->storing == 0);
    }
    check();
    return error;
  }

  void take(std::uint32_t id) {
    const auto* e = ledger_.entry(id);
    const bool moves = e != nullptr && e->state == RState::Checking;
    ledger_.take(id);
    if (moves) FUZZ_CHECK(ledger_.entry(id)->state == RState::Receiving);
    check();
  }

  void settle(std::uint32_t id) {
    const auto* e = ledger_.entry(id);
    const bool in_flight = e != nullptr;
    const bool abandons = in_flight && e->state == RState::Receiving;
    const std::size_t count = ledger_.entries().size();
    ledger_.settle(id);
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

  std::optional<SessionError> accept_chunk(const FileChunk& c) {
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

  std::optional<SessionError> file_done(const FileDone& d) {
    const Snapshot before = snapshot();
    const auto* e = ledger_.entry(d.entry);
    std::optional<SessionError> expected;
    if (e == nullptr) {
      expected = SessionError::UnknownEntry;
    } else if (e->state != RState::Receiving) {
      expected = SessionError::EntryNotReceiving;
    }
    const auto error = ledger_.file_done(d);
    FUZZ_CHECK(error == expected);
    if (error) {
      FUZZ_CHECK(snapshot() == before);
    } else {
      FUZZ_CHECK(ledger_.entry(d.entry)->state == RState::Draining);
    }
    check();
    return error;
  }

  bool start_verifying(std::uint32_t id) {
    const auto* e = ledger_.entry(id);
    const bool expected = e != nullptr && e->state == RState::Draining && e->storing == 0;
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

  bool closed() const { return closed_; }

 private:
  struct Snapshot {
    std::vector<std::uint64_t> fields;
    std::uint32_t offered = 0;
    std::uint32_t storing = 0;
    bool operator==(const Snapshot&) const = default;
  };
  Snapshot snapshot() const {
    Snapshot s;
    for (const auto& [id, e] : ledger_.entries()) {
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

  // The rules in the order session_receive_ledger.cpp applies them.
  std::optional<SessionError> expected_chunk_error(const FileChunk& c) const {
    const auto* e = ledger_.entry(c.entry);
    if (e == nullptr) return SessionError::UnknownEntry;
    if (e->state != RState::Receiving) return SessionError::EntryNotReceiving;
    if (c.slot >= setup_.accept.slot_count) return SessionError::SlotOutOfRange;
    if (e->received == e->size) return SessionError::PastEnd;
    if (ledger_.slot_state(c.slot) != SlotState::Credited) return SessionError::SlotNotCredited;
    if (c.offset != e->received) return SessionError::WrongOffset;
    const std::uint64_t expected =
        std::min<std::uint64_t>(setup_.accept.slot_size, e->size - e->received);
    if (c.length == 0 || c.length != expected) return SessionError::WrongLength;
    return std::nullopt;
  }

  void check() const {
    FUZZ_CHECK(ledger_.entries().size() <= kMaxEntriesInFlight);
    FUZZ_CHECK(ledger_.offered() <= setup_.open.entry_count);
    FUZZ_CHECK(offered_bytes_ <= setup_.open.total_bytes);
    std::uint64_t storing_of_entries = 0;
    std::uint64_t received = 0;
    for (const auto& [id, e] : ledger_.entries()) {
      FUZZ_CHECK(id < ledger_.offered());
      FUZZ_CHECK(!ledger_.abandoned(id));
      FUZZ_CHECK(e.received <= e.size);
      // Whole slots, except the file's last chunk.
      FUZZ_CHECK(e.received == e.size || e.received % setup_.accept.slot_size == 0);
      if (e.state == RState::Checking) FUZZ_CHECK(e.received == 0 && e.storing == 0);
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

  SessionReceiveLedger ledger_;
  Setup setup_;
  std::uint64_t offered_bytes_ = 0;
  std::uint64_t accepted_bytes_ = 0;  // of every accepted FileChunk
  bool closed_ = false;
};

// Every message crosses the wire encoded and decoded: it must come back as itself.
Message over_the_wire(const Message& m) {
  const std::vector<std::uint8_t> bytes = encode(m, kVersion2);
  FUZZ_CHECK(!bytes.empty());
  auto decoded = decode(bytes);
  auto* message = std::get_if<Message>(&decoded);
  FUZZ_CHECK(message != nullptr && *message == m);
  return *message;
}

// Both ledgers, both drivers, and the wire between them.
class Conversation {
 public:
  explicit Conversation(const Setup& s) : setup_(s), sender_(s), receiver_(s), clean_(s.honest) {}

  void run(Input& in) {
    while (!in.empty()) {
      step(in);
      if (clean_) check_agreement();
    }
  }

 private:
  enum Op : std::uint8_t {
    // Hostile: a message decoded from raw bytes, a driver call with any values.
    RawMessage,
    AnyReceiverCall,
    AnySenderCall,
    Close,
    ForbidDirectories,
    // The protocol, in any interleaving.
    SendOffer,
    SendChunk,
    CompleteChunk,
    SendFileDone,
    DeliverToReceiver,
    DeliverToSender,
    GrantAll,
    Decide,
    Store,
    Verify,
    FailFile,
    AllowDirectories,
    kOps
  };

  void step(Input& in) {
    switch (static_cast<Op>(in.u8() % kOps)) {
      case RawMessage:
        raw_message(in);
        break;
      case AnyReceiverCall:
        any_receiver_call(in);
        break;
      case AnySenderCall:
        any_sender_call(in);
        break;
      case Close:
        receiver_.close();
        clean_ = false;
        break;
      case ForbidDirectories:
        sender_.allow_directories(false);
        break;
      case AllowDirectories:
        sender_.allow_directories(true);
        break;
      case SendOffer:
        if (const auto entry = sender_.next_offer()) {
          const auto& plan = setup_.entries[*entry];
          Offer o;
          o.entry = *entry;
          o.kind = plan.kind;
          o.size = plan.size;
          o.path = "e" + std::to_string(*entry);
          to_receiver_.push_back(over_the_wire(o));
        }
        break;
      case SendChunk:
        if (const auto p = sender_.next_chunk())
          to_receiver_.push_back(over_the_wire(FileChunk{p->entry, p->slot, p->offset, p->length}));
        break;
      case CompleteChunk:
        (void)sender_.completed(sender_.nth_busy(in.u8()));
        break;
      case SendFileDone:
        if (const auto entry = sender_.next_file_done())
          to_receiver_.push_back(over_the_wire(FileDone{*entry, setup_.entries[*entry].size}));
        break;
      case DeliverToReceiver:
        deliver_to_receiver();
        break;
      case DeliverToSender:
        deliver_to_sender();
        break;
      case GrantAll:
        for (std::uint32_t s = 0; s < setup_.accept.slot_count; ++s) grant(s);
        break;
      case Decide:
        decide(in.u8());
        break;
      case Store:
        store(in.u8());
        break;
      case Verify:
        verify(in.u8());
        break;
      case FailFile:
        fail_file(in.u8());
        break;
      case kOps:
        break;
    }
  }

  // The receiver's side of one message, as receiver/connection_session.cpp handles it.
  std::optional<SessionError> receive(const Message& m) {
    if (const auto* o = std::get_if<Offer>(&m)) return receiver_.offer(*o);
    if (const auto* c = std::get_if<FileChunk>(&m)) {
      if (receiver_.ledger().abandoned(c->entry)) {
        if (!receiver_.discard_chunk(*c)) return SessionError::SlotNotCredited;
        grant(c->slot);
        return std::nullopt;
      }
      const auto error = receiver_.accept_chunk(*c);
      if (!error) storing_.push_back({c->slot, c->entry});
      return error;
    }
    if (const auto* d = std::get_if<FileDone>(&m)) {
      if (receiver_.ledger().abandoned(d->entry)) return std::nullopt;
      const auto error = receiver_.file_done(*d);
      if (!error) (void)receiver_.start_verifying(d->entry);
      return error;
    }
    return std::nullopt;
  }

  // The sender's side of one message.
  bool send_side_ok(const Message& m) {
    if (const auto* t = std::get_if<Take>(&m)) return !sender_.taken(t->entry);
    if (const auto* r = std::get_if<Refuse>(&m)) return !sender_.settled(r->entry, false);
    if (const auto* v = std::get_if<FileVerdict>(&m))
      return !sender_.settled(v->entry, v->code == VerdictCode::Good);
    if (const auto* c = std::get_if<Credit>(&m)) return !sender_.credit(*c);
    return true;
  }

  void deliver_to_receiver() {
    if (to_receiver_.empty()) return;
    const Message m = to_receiver_.front();
    to_receiver_.pop_front();
    const auto error = receive(m);
    if (clean_) FUZZ_CHECK(!error);
  }

  void deliver_to_sender() {
    if (to_sender_.empty()) return;
    const Message m = to_sender_.front();
    to_sender_.pop_front();
    const bool ok = send_side_ok(m);
    if (clean_) FUZZ_CHECK(ok);
  }

  void grant(std::uint32_t slot) {
    if (receiver_.grant(slot)) to_sender_.push_back(over_the_wire(Credit{slot, next_key_++}));
  }

  // Settles an entry and tells the sender.
  void settle(std::uint32_t entry, const Message& reply) {
    for (std::uint32_t slot : receiver_.release_slots_of(entry)) grant(slot);
    std::erase_if(storing_, [&](const Storing& s) { return s.entry == entry; });
    receiver_.settle(entry);
    to_sender_.push_back(over_the_wire(reply));
  }

  std::vector<std::uint32_t> entries_in(RState state) const {
    std::vector<std::uint32_t> ids;
    for (const auto& [id, e] : receiver_.ledger().entries())
      if (e.state == state) ids.push_back(id);
    return ids;
  }

  // The receiver's driver checked an offered entry: a directory is made (settled at once),
  // a file taken or refused.
  void decide(std::uint8_t n) {
    const auto checking = entries_in(RState::Checking);
    if (checking.empty()) return;
    const std::uint32_t id = checking[n % checking.size()];
    if (receiver_.ledger().entry(id)->kind == EntryKind::Directory) {
      settle(id, FileVerdict{id, VerdictCode::Good, {}});
    } else if (n & 0x80) {
      settle(id, Refuse{id, RejectReason::Exists, "exists"});
    } else {
      receiver_.take(id);
      to_sender_.push_back(over_the_wire(Take{id}));
      // Credits go out once there are files to fill them.
      for (std::uint32_t s = 0; s < setup_.accept.slot_count; ++s) grant(s);
    }
  }

  void store(std::uint8_t n) {
    if (storing_.empty()) return;
    const std::size_t i = n % storing_.size();
    const Storing s = storing_[i];
    storing_.erase(storing_.begin() + static_cast<std::ptrdiff_t>(i));
    if (receiver_.stored(s.slot, s.entry)) grant(s.slot);
    (void)receiver_.start_verifying(s.entry);
  }

  void verify(std::uint8_t n) {
    const auto verifying = entries_in(RState::Verifying);
    if (verifying.empty()) return;
    const std::uint32_t id = verifying[n % verifying.size()];
    const VerdictCode code = n & 0x80 ? VerdictCode::HashMismatch : VerdictCode::Good;
    settle(id, FileVerdict{id, code, {}});
  }

  // A write failed mid-file: the entry is abandoned with a bad verdict.
  void fail_file(std::uint8_t n) {
    const auto receiving = entries_in(RState::Receiving);
    if (receiving.empty()) return;
    const std::uint32_t id = receiving[n % receiving.size()];
    settle(id, FileVerdict{id, VerdictCode::StorageError, {}});
  }

  // Raw bytes behind a valid version-2 header of a session type (or Credit): whatever
  // decodes goes to the side that receives it.
  void raw_message(Input& in) {
    static constexpr std::uint16_t kTypes[] = {4, 14, 15, 16, 17, 18, 19, 20};
    const std::uint16_t type = kTypes[in.u8() % std::size(kTypes)];
    const std::size_t length = in.u8() % 64U;
    std::vector<std::uint8_t> bytes = {0x52, 0x4D, 0x41, 0x58, 2, 0};
    bytes.push_back(static_cast<std::uint8_t>(type));
    bytes.push_back(static_cast<std::uint8_t>(type >> 8));
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
    bytes.insert(bytes.end(), 4, 0);
    for (std::size_t i = 0; i < length; ++i) bytes.push_back(in.u8());
    auto decoded = decode(bytes);
    const auto* m = std::get_if<Message>(&decoded);
    if (m == nullptr) return;
    clean_ = false;
    if (std::holds_alternative<Offer>(*m) || std::holds_alternative<FileChunk>(*m) ||
        std::holds_alternative<FileDone>(*m)) {
      (void)receive(*m);
    } else {
      (void)send_side_ok(*m);
    }
  }

  void any_receiver_call(Input& in) {
    clean_ = false;
    const std::uint32_t id = in.small();
    const std::uint32_t slot = in.small();
    switch (in.u8() % 9) {
      case 0:
        receiver_.take(id);
        break;
      case 1:
        receiver_.settle(id);
        break;
      case 2:
        (void)receiver_.grant(slot);
        break;
      case 3:
        (void)receiver_.stored(slot, id);
        break;
      case 4:
        (void)receiver_.release_slots_of(id);
        break;
      case 5:
        (void)receiver_.start_verifying(id);
        break;
      case 6:
        (void)receiver_.file_done(FileDone{id, in.u64()});
        break;
      case 7:
        (void)receiver_.discard_chunk(FileChunk{id, slot, in.u64(), in.u32()});
        break;
      default:
        (void)receiver_.accept_chunk(any_chunk(in, id, slot));
    }
  }

  // A FileChunk near the right one for the entry (offset and length right, off by a little,
  // or anything).
  FileChunk any_chunk(Input& in, std::uint32_t id, std::uint32_t slot) {
    FileChunk c{id, slot, 0, 0};
    std::uint64_t received = 0;
    std::uint64_t left = 0;
    if (const auto* e = receiver_.ledger().entry(id)) {
      received = e->received;
      left = e->size - e->received;
    }
    const std::uint8_t mode = in.u8();
    c.offset = mode % 3 == 0 ? received
               : mode % 3 == 1
                   ? received + static_cast<std::uint64_t>(static_cast<std::int8_t>(in.u8()))
                   : in.u64();
    const auto right =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(setup_.accept.slot_size, left));
    c.length = mode / 3 % 3 == 0 ? right
               : mode / 3 % 3 == 1
                   ? right + static_cast<std::uint32_t>(static_cast<std::int8_t>(in.u8()))
                   : in.u32();
    return c;
  }

  void any_sender_call(Input& in) {
    clean_ = false;
    const std::uint32_t value = in.small();
    switch (in.u8() % 4) {
      case 0:
        (void)sender_.taken(value);
        break;
      case 1:
        (void)sender_.settled(value, in.u8() & 1);
        break;
      case 2:
        (void)sender_.credit(Credit{value, in.u32()});
        break;
      default:
        (void)sender_.completed(value);
    }
  }

  // While only the protocol ran: the bytes on the wire and in storage add up, and once the
  // wire is quiet both sides agree on whether the session is over.
  void check_agreement() const {
    FUZZ_CHECK(receiver_.ledger().storing() == storing_.size());
    if (to_receiver_.empty() && to_sender_.empty())
      FUZZ_CHECK(sender_.ledger().all_settled() == receiver_.ledger().all_settled());
    if (sender_.ledger().all_settled()) FUZZ_CHECK(receiver_.ledger().all_settled());
  }

  struct Storing {
    std::uint32_t slot = 0;
    std::uint32_t entry = 0;
  };

  Setup setup_;
  SenderCheck sender_;
  ReceiverCheck receiver_;
  std::deque<Message> to_receiver_;
  std::deque<Message> to_sender_;
  std::vector<Storing> storing_;  // accepted chunks not yet stored
  std::uint32_t next_key_ = 1;
  bool clean_ = true;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(std::span<const std::uint8_t>(data, size));
  const Setup setup = read_setup(in);
  Conversation(setup).run(in);
  return 0;
}
