#pragma once
// fuzz_session_ledgers' second world: one file striped over a group of two connections
// (docs/PROTOCOL.md 7.12). Both ledgers of each connection, the StripePlan the two senders
// draw chunks from and the StripeClaims the two receivers share, joined as the drivers join
// them (sender/transfer_run.cpp joins the member once the lead's entry is taken; the receiver
// joins the member's entry to the lead's).
//
// The honest operations play the protocol in any interleaving; hostile ones send chunks
// anywhere on either connection, the lead's FileDone early, Joins with any numbers, and lose
// the member's connection. Checked after each operation:
//   - a chunk is accepted once in the group, on the grid, at or past the resume offset, with
//     its whole length (whichever connection it came on);
//   - the plan hands each chunk to one sender once;
//   - the claims say "all claimed" exactly when every byte from the resume offset was
//     accepted, and the lead's FileDone is accepted only then;
//   - the file is verified only once no connection still stores a chunk of it;
//   - after the member is lost, the lead's FileDone never becomes due;
//   - while only the protocol ran, no message is refused, and once both parts are done the
//     file is verified and both senders settled.
// Input: a setup (file size, slot size, each side's slots, a resume offset, a member whose
// Open says total_bytes 0), then operations, one tag byte each plus arguments.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "protocol/receive_ledger.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/stripe_plan.hpp"
#include "protocol/stripes.hpp"
#include "protocol/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/session_ledger_input.hpp"
#include "tests/fuzz/session_ledger_ops.hpp"

namespace rdmax::fuzz {

class StripeConversation {
 public:
  explicit StripeConversation(Input& in) {
    switch (in.u8() % 3) {
      case 0:
        size_ = 1 + in.u8();
        break;
      case 1:
        size_ = 1 + in.u16();
        break;
      default:
        size_ = 1 + in.u32() % (1U << 20);
    }
    const std::uint8_t slot = in.u8();
    slot_ = slot >= 0xF0 ? kMinSlotSize : 1 + slot % 16U;
    const std::uint32_t chunks = static_cast<std::uint32_t>((size_ + slot_ - 1) / slot_);
    const std::uint8_t resume = in.u8();
    from_ = resume & 1 ? std::uint64_t{resume / 2U % chunks} * slot_ : 0;
    member_refused_ = in.u8() % 8 == 0;  // its Open said total_bytes 0: a Join is refused
    for (int side = 0; side < 2; ++side) {
      const std::uint32_t count = 1 + in.u8() % 4U;
      Accept accept{std::uint64_t{0x1000} << side, 0, slot_, count};
      Open open;
      open.entry_count = side == 0 ? 1 : 0;
      open.total_bytes = side == 0 || member_refused_ ? (side == 0 ? size_ : 0) : size_;
      sides_[side].send =
          SendLedger(side == 0 ? std::vector<SendLedger::EntryPlan>{{EntryKind::File, size_}}
                               : std::vector<SendLedger::EntryPlan>{},
                     accept, count);
      sides_[side].receive = ReceiveLedger(open, slot_, count);
      sides_[side].receive.set_stripe_role(side == 0 ? ReceiveLedger::StripeRole::Lead
                                                     : ReceiveLedger::StripeRole::Member);
    }
  }

  void run(Input& in) {
    while (!in.empty()) {
      step(in);
      check();
    }
    // While only the protocol ran, the file verified means every byte crossed once.
    if (clean_ && done_) FUZZ_CHECK(accepted_bytes_ == size_ - from_ && sides_[1].storing.empty());
  }

 private:
  struct Storing {
    std::uint32_t slot = 0;
    std::uint32_t entry = 0;
  };
  struct Side {
    SendLedger send;
    ReceiveLedger receive;
    std::uint32_t entry = 0;  // its entry of the file (the lead's 0; the member's Join number)
    bool taken = false;       // the receiver took it (the sender was told)
    bool finished = false;    // its FileDone accepted, its verdict not yet given
    bool settled = false;
    std::vector<std::uint32_t> sending;  // slots of FileChunk SENDs not yet completed
    std::vector<Storing> storing;        // accepted chunks not yet stored
    std::uint32_t next_key = 1;
  };

  void step(Input& in) {
    const auto op = static_cast<StripeOp>(in.u8() % kStripeOps);
    Side& side = sides_[in.u8() & 1];
    switch (op) {
      case LeadOffers:
        return lead_offers();
      case MemberJoins:
        return member_joins();
      case GrantSlot:
        return grant(side, in.u8() % std::max(1U, side.receive.slot_count()));
      case SendAChunk:
        return send_a_chunk(side);
      case CompleteASend:
        if (!side.sending.empty()) {
          const std::size_t i = in.u8() % side.sending.size();
          FUZZ_CHECK(side.send.completed(side.sending[i]) > 0);
          side.sending.erase(side.sending.begin() + static_cast<std::ptrdiff_t>(i));
        }
        return;
      case StoreAChunk:
        return store_a_chunk(side, in.u8());
      case MemberDone:
        return part_done(sides_[1]);
      case LeadDone:
        return part_done(sides_[0]);
      case ChunkAnywhere:
        return chunk_anywhere(side, in);
      case EarlyLeadDone:
        return early_lead_done(in);
      case AnyJoin:
        clean_ = false;
        (void)sides_[1].receive.join(Join{in.small(), in.small()});
        return;
      case MemberLost:
        if (plan_) {
          (void)plan_->lose(1);
          member_lost_ = true;
          clean_ = false;
        }
        return;
      case kStripeOps:
        return;
    }
  }

  // The lead offers the file striped; its receiver takes it (or resumes it from `from_`), and
  // the sender's run makes the plan.
  void lead_offers() {
    Side& lead = sides_[0];
    if (offered_) return;
    const auto entry = lead.send.next_offer();
    FUZZ_CHECK(entry.has_value() && *entry == 0);
    offered_ = true;
    Offer o;
    o.entry = 0;
    o.kind = EntryKind::File;
    o.size = size_;
    o.path = "big";
    o.striped = true;
    const auto error = lead.receive.offer(o);
    FUZZ_CHECK(!error);
    lead.receive.take(0, from_);
    lead.taken = true;
    FUZZ_CHECK(!lead.send.taken(0, from_));
    plan_ = std::make_shared<StripePlan>(size_, slot_, from_, 2);
    FUZZ_CHECK(lead.send.stripe(0, plan_));
    claims_ = lead.receive.entry(0)->claims;
    FUZZ_CHECK(claims_ != nullptr);
  }

  // The member joins the taken file; its receiver joins the entry to the lead's (or refuses
  // it: the member's Open said it carries nothing).
  void member_joins() {
    Side& member = sides_[1];
    if (!plan_ || joined_ || member_lost_ || sides_[0].settled) return;
    joined_ = true;
    member.entry = member.send.join(size_, plan_, 1);
    const Join join{member.entry, 0};
    const auto error = member.receive.join(join);  // a hostile Join may have taken its number
    if (clean_) FUZZ_CHECK(!error);
    sides_[0].send.entry(0)->members_pending = 1;
    if (member_refused_ || error) {  // Refuse: the run counts it settled
      FUZZ_CHECK(!member.send.settled(member.entry, false));
      member.settled = true;
      sides_[0].send.entry(0)->members_pending = 0;
      return;
    }
    member.receive.joined(join, size_, claims_);
    member.taken = true;
    FUZZ_CHECK(!member.send.taken(member.entry));
  }

  void grant(Side& side, std::uint32_t slot) {
    if (!side.receive.grant(slot)) return;
    const auto error = side.send.credit(Credit{slot, side.next_key++});
    if (clean_) FUZZ_CHECK(!error);
  }

  // The sender's next chunk, drawn from the plan, and the receiver's answer to it.
  void send_a_chunk(Side& side) {
    const auto p = side.send.next_chunk();
    if (!p) return;
    drawn(p->offset);
    side.sending.push_back(p->slot);
    const FileChunk c{p->entry, p->slot, p->offset, p->length};
    const auto error = side.receive.accept_chunk(c);
    if (clean_) FUZZ_CHECK(!error);
    if (!error) accepted(side, c);
  }

  void store_a_chunk(Side& side, std::uint8_t n) {
    if (side.storing.empty()) return;
    const std::size_t i = n % side.storing.size();
    const Storing s = side.storing[i];
    side.storing.erase(side.storing.begin() + static_cast<std::ptrdiff_t>(i));
    if (side.receive.stored(s.slot, s.entry)) grant(side, s.slot);
    for (Side& any : sides_) verify_if_ready(any);
  }

  // A part's FileDone (the member's: what it was handed; the lead's: the file's size).
  void part_done(Side& side) {
    const bool lead = &side == &sides_[0];
    const auto entry = side.send.next_file_done();
    if (!entry) return;
    FUZZ_CHECK(!member_lost_ || !lead);  // an interrupted file is never done
    FUZZ_CHECK(*entry == side.entry);
    if (lead) FUZZ_CHECK(plan_->all_handed());
    const FileDone done{*entry, lead ? size_ : plan_->handed(1)};
    const auto error = side.receive.file_done(done);
    if (clean_) FUZZ_CHECK(!error);
    if (error) return;
    if (lead) FUZZ_CHECK(claims_->all_claimed());
    side.finished = true;
    verify_if_ready(side);
  }

  // A Finished entry starts verifying once none of its chunks is stored anywhere (the striped
  // file: on no connection of the group); the verdict settles both ledgers.
  void verify_if_ready(Side& side) {
    if (!side.finished || side.settled) return;
    if (!side.receive.start_verifying(side.entry)) return;
    const bool lead = &side == &sides_[0];
    if (lead) FUZZ_CHECK(!claims_->stores_running());
    (void)side.receive.settle(side.entry, EntryEvent::Good);
    side.settled = true;
    const auto error = side.send.settled(side.entry, true);
    if (clean_) FUZZ_CHECK(!error);
    if (lead) {
      done_ = true;
    } else if (auto* e = sides_[0].send.entry(0); e != nullptr && e->members_pending > 0) {
      --e->members_pending;  // the run's joined_settled()
    }
  }

  // A FileChunk with any offset and length, on either connection's entry or another number.
  void chunk_anywhere(Side& side, Input& in) {
    clean_ = false;
    const std::uint8_t mode = in.u8();
    FileChunk c{mode & 1 ? side.entry : in.small(), in.u8() % 8U, 0, 0};
    const std::uint64_t chunks = (size_ + slot_ - 1) / slot_;
    c.offset = mode & 2 ? in.u64() : std::uint64_t{in.u32() % (chunks + 1)} * slot_;
    const std::uint64_t right =
        c.offset < size_ ? std::min<std::uint64_t>(slot_, size_ - c.offset) : 0;
    c.length = mode & 4 ? in.u32() : static_cast<std::uint32_t>(right);
    if (!side.receive.accept_chunk(c)) accepted(side, c);
  }

  // The lead's FileDone whenever: accepted only once every chunk is claimed.
  void early_lead_done(Input& in) {
    clean_ = false;
    Side& lead = sides_[0];
    const FileDone done{0, in.u8() & 1 ? size_ : in.u64()};
    if (lead.receive.file_done(done)) return;
    FUZZ_CHECK(claims_ && claims_->all_claimed());
    lead.finished = true;
    verify_if_ready(lead);
  }

  // Bookkeeping of what crossed, checked as it is recorded.
  void drawn(std::uint64_t offset) { FUZZ_CHECK(drawn_.insert(offset).second); }
  void accepted(Side& side, const FileChunk& c) {
    // Accepted for the striped file: once in the group, on the grid, its whole length.
    if (c.entry == side.entry && side.taken) {
      FUZZ_CHECK(accepted_.insert(c.offset).second);
      FUZZ_CHECK(c.offset >= from_ && c.offset < size_ && c.offset % slot_ == 0);
      FUZZ_CHECK(c.length == std::min<std::uint64_t>(slot_, size_ - c.offset));
      accepted_bytes_ += c.length;
    }
    side.storing.push_back({c.slot, c.entry});
  }

  void check() const {
    if (claims_) FUZZ_CHECK(claims_->all_claimed() == (accepted_bytes_ == size_ - from_));
    if (member_lost_) FUZZ_CHECK(!sides_[0].send.file_done_due().has_value() || done_);
  }

  std::uint64_t size_ = 1;
  std::uint32_t slot_ = 1;
  std::uint64_t from_ = 0;
  bool member_refused_ = false;
  Side sides_[2];
  std::shared_ptr<StripePlan> plan_;
  std::shared_ptr<StripeClaims> claims_;
  std::set<std::uint64_t> drawn_;
  std::set<std::uint64_t> accepted_;
  std::uint64_t accepted_bytes_ = 0;
  bool offered_ = false;
  bool joined_ = false;
  bool member_lost_ = false;
  bool done_ = false;
  bool clean_ = true;
};

}  // namespace rdmax::fuzz
