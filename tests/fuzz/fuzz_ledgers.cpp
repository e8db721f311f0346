// Fuzz target for the data-phase ledgers of one file: the sender's and the receiver's
// session ledgers serving one entry (tests/unit/one_file_send_ledger.hpp,
// tests/unit/one_file_receive_ledger.hpp). The unit tests pin each rule and one honest conversation
// at a time; this target lets the input drive both ledgers through any sequence of calls with any
// values, the way a hostile peer or a buggy driver could, and checks after each call that
// the ledger did what its contract says, given what it showed before the call, and that
// its invariants hold.
//
// Input: a setup (file size, slot size, slot count, the sender's limit, region address),
// then operations, one tag byte each plus its arguments; bytes missing at the end read as
// zero, so every input means something. Between the ledgers sits a wire: next() puts its
// Chunk on a queue to the receiver, the receiver's grants put Credits on a queue to the
// sender, and operations deliver, complete and store in any order the protocol allows. As
// long as only those have run ("clean"), no call may fail and both sides must agree on the
// bytes; the operations with arbitrary values end that.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "protocol/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "tests/unit/one_file_receive_ledger.hpp"
#include "tests/unit/one_file_send_ledger.hpp"

namespace {

using namespace rdmax::proto;
using rdmax::test::ChunkError;
using ReceiveLedger = rdmax::test::OneFileReceiveLedger;
using SendLedger = rdmax::test::OneFileSendLedger;
using SlotState = ReceiveLedger::SlotState;

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();

class Input : public rdmax::fuzz::FuzzInput {
 public:
  using FuzzInput::FuzzInput;
  // Mostly a slot near the range (so that most calls hit a real slot), sometimes any value.
  std::uint32_t slot() { return mostly_below(10); }
};

struct Setup {
  std::uint64_t file_size = 0;
  std::uint32_t slot_size = 1;
  std::uint32_t slot_count = 0;
  std::uint32_t max_active = 0;
  std::uint64_t region_addr = 0;
};

// Small sizes let an input reach the end of the file; the others test the arithmetic.
Setup read_setup(Input& in) {
  Setup s;
  switch (in.u8() % 4) {
    case 0:
      s.file_size = in.u8();
      break;
    case 1:
      s.file_size = in.little_endian(2);
      break;
    case 2:
      s.file_size = in.u64();
      break;
    default:
      s.file_size = kU64Max - in.u8();
  }
  // Never 0: decode() rejects an Accept.slot_size below kMinSlotSize, and the ledgers
  // require it to be positive.
  switch (in.u8() % 4) {
    case 0:
      s.slot_size = 1 + in.u8() % 16;
      break;
    case 1:
      s.slot_size = static_cast<std::uint32_t>(in.little_endian(2));
      break;
    case 2:
      s.slot_size = in.u32();
      break;
    default:
      s.slot_size = kU32Max - in.u8();
  }
  s.slot_size = std::max(s.slot_size, 1U);
  const std::uint8_t count = in.u8();
  s.slot_count = count >= 0xF0 ? kMaxSlotCount : count % 9U;
  s.max_active = in.u8() % 10U;
  s.region_addr = in.u64();
  return s;
}

// The SendLedger, and what its contract lets an observer predict about each call.
class SenderCheck {
 public:
  explicit SenderCheck(const Setup& s)
      : ledger_(s.file_size, Accept{s.region_addr, 0, s.slot_size, s.slot_count}, s.max_active),
        setup_(s),
        rkey_(s.slot_count, 0),
        held_(s.slot_count, false),
        in_flight_(s.slot_count, 0) {
    const std::uint64_t limit = std::min(s.slot_count, std::max(s.max_active, 1U));
    FUZZ_CHECK(ledger_.active_slots() == std::min(limit, ledger_.plan().chunk_count()));
    FUZZ_CHECK(ledger_.slot_count() == s.slot_count);
    check();
  }

  const SendLedger& ledger() const { return ledger_; }

  std::optional<CreditError> credit(const Credit& c) {
    const auto error = ledger_.credit(c);
    if (c.slot >= setup_.slot_count) {
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

  std::optional<SendLedger::Planned> next() {
    const std::uint64_t sent_before = ledger_.bytes_sent();
    std::optional<std::uint32_t> expected;
    if (handed_ < ledger_.plan().chunk_count()) {
      for (std::uint32_t s = 0; s < ledger_.active_slots() && !expected; ++s)
        if (held_[s] && in_flight_[s] == 0) expected = s;
    }
    const auto p = ledger_.next();
    FUZZ_CHECK(p.has_value() == expected.has_value());
    if (p) {
      FUZZ_CHECK(p->slot == *expected);
      // Handed out only with a credit it had not used yet: never twice on one credit.
      FUZZ_CHECK(held_[p->slot]);
      FUZZ_CHECK(p->rkey == rkey_[p->slot]);
      FUZZ_CHECK(p->offset == sent_before && p->offset == ledger_.plan().offset(handed_));
      FUZZ_CHECK(p->length == ledger_.plan().length(handed_) && p->length > 0);
      FUZZ_CHECK(p->remote_addr == setup_.region_addr + std::uint64_t{p->slot} * setup_.slot_size);
      FUZZ_CHECK(ledger_.bytes_sent() == sent_before + p->length);
      held_[p->slot] = false;
      in_flight_[p->slot] = p->length;
      ++handed_;
    } else {
      FUZZ_CHECK(ledger_.bytes_sent() == sent_before);
    }
    check();
    return p;
  }

  std::uint32_t completed(std::uint32_t slot) {
    const std::uint64_t before = ledger_.bytes_completed();
    const std::uint32_t length = ledger_.completed(slot);
    const std::uint32_t expected = slot < setup_.slot_count ? in_flight_[slot] : 0;
    FUZZ_CHECK(length == expected);
    FUZZ_CHECK(ledger_.bytes_completed() == before + length);
    if (expected != 0) in_flight_[slot] = 0;
    check();
    return length;
  }

 private:
  void check() {
    FUZZ_CHECK(ledger_.bytes_completed() <= ledger_.bytes_sent());
    FUZZ_CHECK(ledger_.bytes_sent() <= setup_.file_size);
    FUZZ_CHECK(ledger_.bytes_sent() >= last_sent_ && ledger_.bytes_completed() >= last_completed_);
    std::uint64_t in_flight_bytes = 0;
    bool any_busy = false;
    for (std::uint32_t s = 0; s < setup_.slot_count; ++s) {
      FUZZ_CHECK(ledger_.credited(s) == held_[s]);
      FUZZ_CHECK(ledger_.busy(s) == (in_flight_[s] != 0));
      // Only the active slots are ever written.
      if (s >= ledger_.active_slots()) FUZZ_CHECK(!ledger_.busy(s));
      in_flight_bytes += in_flight_[s];
      any_busy = any_busy || ledger_.busy(s);
    }
    FUZZ_CHECK(!ledger_.credited(setup_.slot_count) && !ledger_.busy(setup_.slot_count));
    FUZZ_CHECK(ledger_.bytes_sent() - ledger_.bytes_completed() == in_flight_bytes);
    FUZZ_CHECK(ledger_.all_done() == (handed_ == ledger_.plan().chunk_count() && !any_busy));
    if (ledger_.all_done()) {
      FUZZ_CHECK(ledger_.bytes_completed() == setup_.file_size);
      FUZZ_CHECK(ledger_.bytes_sent() == setup_.file_size);
    }
    last_sent_ = ledger_.bytes_sent();
    last_completed_ = ledger_.bytes_completed();
  }

  SendLedger ledger_;
  Setup setup_;
  std::vector<std::uint32_t> rkey_;       // of the latest Credit accepted
  std::vector<bool> held_;                // a Credit accepted and not used by next() yet
  std::vector<std::uint32_t> in_flight_;  // length of the chunk handed out, until completed
  std::uint64_t handed_ = 0;              // chunks handed out by next()
  std::uint64_t last_sent_ = 0;
  std::uint64_t last_completed_ = 0;
};

// The ReceiveLedger, likewise.
class ReceiverCheck {
 public:
  explicit ReceiverCheck(const Setup& s)
      : ledger_(s.file_size, s.slot_size, s.slot_count), setup_(s) {
    for (std::uint32_t i = 0; i < s.slot_count; ++i)
      FUZZ_CHECK(ledger_.state(i) == SlotState::Idle);
    check();
  }

  const ReceiveLedger& ledger() const { return ledger_; }

  bool grant(std::uint32_t slot) {
    const bool expected = slot < setup_.slot_count && ledger_.state(slot) == SlotState::Idle &&
                          !closed_ && !ledger_.complete();
    const std::uint64_t received = ledger_.received();
    const bool granted = ledger_.grant(slot);
    FUZZ_CHECK(granted == expected);
    if (granted) FUZZ_CHECK(ledger_.state(slot) == SlotState::Credited);
    FUZZ_CHECK(ledger_.received() == received);
    check();
    return granted;
  }

  std::optional<ChunkError> accept(const Chunk& c) {
    const std::uint64_t received = ledger_.received();
    const std::uint32_t storing = ledger_.storing();
    const auto expected = expected_error(c);
    const auto error = ledger_.accept_chunk(c);
    FUZZ_CHECK(error == expected);
    if (error) {
      FUZZ_CHECK(ledger_.received() == received && ledger_.storing() == storing);
    } else {
      // Every byte exactly once, in order: this chunk starts where the last one ended.
      FUZZ_CHECK(c.offset == received && c.length > 0);
      FUZZ_CHECK(ledger_.received() == received + c.length);
      FUZZ_CHECK(ledger_.storing() == storing + 1);
      FUZZ_CHECK(ledger_.state(c.slot) == SlotState::Storing);
    }
    check();
    return error;
  }

  bool stored(std::uint32_t slot) {
    const bool was_storing = slot < setup_.slot_count && ledger_.state(slot) == SlotState::Storing;
    const bool again = ledger_.stored(slot);
    FUZZ_CHECK(again == (was_storing && !ledger_.complete() && !closed_));
    if (was_storing) FUZZ_CHECK(ledger_.state(slot) == SlotState::Idle);
    check();
    return again;
  }

  void close() {
    std::vector<SlotState> before;
    for (std::uint32_t s = 0; s < setup_.slot_count; ++s) before.push_back(ledger_.state(s));
    ledger_.close();
    closed_ = true;
    for (std::uint32_t s = 0; s < setup_.slot_count; ++s)
      FUZZ_CHECK(ledger_.state(s) ==
                 (before[s] == SlotState::Credited ? SlotState::Idle : before[s]));
    check();
  }

 private:
  // The rules of docs/PROTOCOL.md 5.4, in the order the header documents.
  std::optional<ChunkError> expected_error(const Chunk& c) const {
    if (c.slot >= setup_.slot_count) return ChunkError::SlotOutOfRange;
    if (ledger_.received() == setup_.file_size) return ChunkError::PastEnd;
    if (ledger_.state(c.slot) != SlotState::Credited) return ChunkError::SlotNotCredited;
    if (c.offset != ledger_.received()) return ChunkError::WrongOffset;
    const std::uint64_t left = setup_.file_size - ledger_.received();
    if (c.length == 0 || c.length != std::min<std::uint64_t>(setup_.slot_size, left))
      return ChunkError::WrongLength;
    return std::nullopt;
  }

  void check() {
    FUZZ_CHECK(ledger_.received() <= setup_.file_size);
    FUZZ_CHECK(ledger_.received() >= last_received_);
    FUZZ_CHECK(ledger_.complete() == (ledger_.received() == setup_.file_size));
    // Chunks are whole slots except the last.
    if (!ledger_.complete()) FUZZ_CHECK(ledger_.received() % setup_.slot_size == 0);
    std::uint32_t storing = 0;
    for (std::uint32_t s = 0; s < setup_.slot_count; ++s) {
      const SlotState state = ledger_.state(s);
      FUZZ_CHECK(state == SlotState::Idle || state == SlotState::Credited ||
                 state == SlotState::Storing);
      if (state == SlotState::Storing) ++storing;
      if (closed_) FUZZ_CHECK(state != SlotState::Credited);
    }
    FUZZ_CHECK(ledger_.storing() == storing);
    FUZZ_CHECK(ledger_.state(setup_.slot_count) == SlotState::Idle);
    last_received_ = ledger_.received();
  }

  ReceiveLedger ledger_;
  Setup setup_;
  bool closed_ = false;
  std::uint64_t last_received_ = 0;
};

// Both ledgers and the wire between them.
class Conversation {
 public:
  explicit Conversation(const Setup& s) : setup_(s), sender_(s), receiver_(s) {}

  void run(Input& in) {
    while (!in.empty()) {
      step(in);
      if (clean_) check_agreement();
    }
  }

 private:
  enum Op : std::uint8_t {
    // With arbitrary values: a hostile peer or a buggy driver.
    AnyCredit,
    AnyChunk,
    AnyGrant,
    AnyStored,
    Close,
    Reorder,
    // What the protocol allows, in any interleaving.
    Next,
    Completed,
    GrantAll,
    DeliverChunk,
    Store,
    DeliverCredit,
    kOps
  };

  void step(Input& in) {
    switch (static_cast<Op>(in.u8() % kOps)) {
      case AnyCredit: {
        const std::uint32_t slot = in.slot();
        (void)sender_.credit(Credit{slot, in.u8()});
        clean_ = false;
        break;
      }
      case AnyChunk:
        (void)receiver_.accept(any_chunk(in));
        clean_ = false;
        break;
      case AnyGrant:
        (void)receiver_.grant(in.slot());
        clean_ = false;
        break;
      case AnyStored:
        receiver_.stored(in.slot());
        clean_ = false;
        break;
      case Close:
        receiver_.close();
        clean_ = false;
        break;
      case Reorder:
        reorder(in.u8());
        break;
      case Next:
        if (const auto p = sender_.next())
          to_receiver_.push_back(Chunk{p->offset, p->length, p->slot});
        break;
      case Completed:
        // Any slot: a completion for one that is not busy is a driver bug the ledger shrugs off.
        (void)sender_.completed(in.u8() % 2 ? in.slot() : nth_busy(in.u8()));
        break;
      case GrantAll:
        // Right after Accept; a no-op later in a clean run (no slot is Idle and grantable).
        for (std::uint32_t s = 0; s < setup_.slot_count; ++s)
          if (receiver_.grant(s)) send_credit(s);
        break;
      case DeliverChunk:
        deliver_chunk();
        break;
      case Store:
        store(in.u8());
        break;
      case DeliverCredit:
        deliver_credit();
        break;
      case kOps:
        break;
    }
  }

  Chunk any_chunk(Input& in) {
    const std::uint64_t received = receiver_.ledger().received();
    const std::uint64_t left = setup_.file_size - received;
    const std::uint32_t right =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(setup_.slot_size, left));
    Chunk c;
    const std::uint8_t mode = in.u8();
    switch (mode % 4) {  // offset: right, near, anything, the end
      case 0:
        c.offset = received;
        break;
      case 1:
        c.offset = received + static_cast<std::int8_t>(in.u8());
        break;
      case 2:
        c.offset = in.u64();
        break;
      default:
        c.offset = setup_.file_size;
    }
    switch (mode / 4 % 4) {  // length: right, near, anything, zero
      case 0:
        c.length = right;
        break;
      case 1:
        c.length = right + static_cast<std::uint32_t>(static_cast<std::int8_t>(in.u8()));
        break;
      case 2:
        c.length = in.u32();
        break;
      default:
        c.length = 0;
    }
    c.slot = in.slot();
    return c;
  }

  std::uint32_t nth_busy(std::uint8_t n) const {
    std::vector<std::uint32_t> busy;
    for (std::uint32_t s = 0; s < setup_.slot_count; ++s)
      if (sender_.ledger().busy(s)) busy.push_back(s);
    return busy.empty() ? 0 : busy[n % busy.size()];
  }

  // A lost or reordered message: only legal when it changes nothing.
  void reorder(std::uint8_t which) {
    auto rotate = [this](auto& queue) {
      if (queue.size() < 2) return;
      queue.push_back(queue.front());
      queue.pop_front();
      clean_ = false;
    };
    if (which % 2) {
      rotate(to_receiver_);
    } else {
      rotate(to_sender_);
    }
  }

  void send_credit(std::uint32_t slot) { to_sender_.push_back(Credit{slot, next_key_++}); }

  void deliver_chunk() {
    if (to_receiver_.empty()) return;
    const Chunk c = to_receiver_.front();
    to_receiver_.pop_front();
    const auto error = receiver_.accept(c);
    if (clean_) FUZZ_CHECK(!error);
    if (!error) storing_.push_back(c.slot);
  }

  void store(std::uint8_t n) {
    if (storing_.empty()) return;
    const std::size_t i = n % storing_.size();
    const std::uint32_t slot = storing_[i];
    storing_.erase(storing_.begin() + static_cast<std::ptrdiff_t>(i));
    // The slot may have been stored already by AnyStored; the check above knows.
    if (receiver_.stored(slot)) {
      FUZZ_CHECK(receiver_.grant(slot));  // Idle, nothing closed, bytes missing
      send_credit(slot);
    }
  }

  void deliver_credit() {
    if (to_sender_.empty()) return;
    const Credit c = to_sender_.front();
    to_sender_.pop_front();
    const auto error = sender_.credit(c);
    if (clean_) FUZZ_CHECK(!error);
  }

  // While only legal operations ran: what the sender sent and the receiver accepted differ
  // by exactly the chunks still on the wire, and a finished sender means a complete file.
  void check_agreement() const {
    std::uint64_t on_wire = 0;
    for (const Chunk& c : to_receiver_) on_wire += c.length;
    FUZZ_CHECK(sender_.ledger().bytes_sent() == receiver_.ledger().received() + on_wire);
    if (sender_.ledger().all_done() && to_receiver_.empty())
      FUZZ_CHECK(receiver_.ledger().complete());
    FUZZ_CHECK(receiver_.ledger().storing() == storing_.size());
  }

  Setup setup_;
  SenderCheck sender_;
  ReceiverCheck receiver_;
  std::deque<Chunk> to_receiver_;
  std::deque<Credit> to_sender_;
  std::vector<std::uint32_t> storing_;  // slots of accepted chunks, not yet stored
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
