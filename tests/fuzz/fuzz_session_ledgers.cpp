// Fuzz target for the version-2 session ledgers (protocol/send_ledger.hpp,
// protocol/receive_ledger.hpp), a session of one entry or many alike (and, for an input whose
// first byte is kStripesWorld, one file striped over two connections: session_stripes.hpp):
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

#include "protocol/receive_ledger.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include "tests/fuzz/session_ledger_input.hpp"
#include "tests/fuzz/session_ledger_ops.hpp"
#include "tests/fuzz/session_receive_check.hpp"
#include "tests/fuzz/session_send_check.hpp"
#include "tests/fuzz/session_stripes.hpp"

namespace {

// (RState, SState, SlotState, Input and the checks: tests/fuzz/session_ledger_input.hpp.)
using namespace rdmax::proto;
using namespace rdmax::fuzz;

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
  using Op = SessionLedgerOp;

  void step(Input& in) {
    switch (static_cast<Op>(in.u8() % kSessionLedgerOps)) {
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
      case kSessionLedgerOps:
        break;
    }
  }

  // The receiver's side of one message, as receiver/incoming_entries.cpp handles it.
  std::optional<ReceiveError> receive(const Message& m) {
    if (const auto* o = std::get_if<Offer>(&m)) return receiver_.offer(*o);
    if (const auto* c = std::get_if<FileChunk>(&m)) {
      if (receiver_.ledger().abandoned(c->entry)) {
        if (!receiver_.discard_chunk(*c)) return ReceiveRule::SlotNotCredited;
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
    const auto* verdict = std::get_if<FileVerdict>(&reply);
    receiver_.settle(entry, std::holds_alternative<Have>(reply)             ? EntryEvent::Have
                            : verdict && verdict->code == VerdictCode::Good ? EntryEvent::Good
                                                                            : EntryEvent::Bad);
    to_sender_.push_back(over_the_wire(reply));
  }

  std::vector<std::uint32_t> entries_in(RState state) const {
    std::vector<std::uint32_t> ids;
    for (const auto& [id, e] : receiver_.ledger().entries())
      if (e->state == state) ids.push_back(id);
    return ids;
  }

  // The receiver's driver checked an offered entry: a directory is made (settled at once),
  // a file taken or refused.
  void decide(std::uint8_t n) {
    const auto checking = entries_in(RState::Offered);
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
    const auto receiving = entries_in(RState::Taken);
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
        receiver_.settle(
            id, std::array{EntryEvent::Have, EntryEvent::Good, EntryEvent::Bad}[in.u8() % 3]);
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
  // One file striped over two connections (session_stripes.hpp), or one session.
  if (size > 0 && data[0] == rdmax::fuzz::kStripesWorld) {
    Input in(std::span<const std::uint8_t>(data + 1, size - 1));
    rdmax::fuzz::StripeConversation(in).run(in);
    return 0;
  }
  Input in(std::span<const std::uint8_t>(data, size));
  const Setup setup = read_setup(in);
  Conversation(setup).run(in);
  return 0;
}
