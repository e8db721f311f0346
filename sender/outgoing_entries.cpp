#include "sender/outgoing_entries.hpp"

#include <spdlog/spdlog.h>

#include "protocol/names.hpp"
#include "protocol/refusals.hpp"
#include "protocol/sizes.hpp"
#include "protocol/transfer_rules.hpp"
#include "sender/stripe_link.hpp"

namespace rdmax::sender {

OutgoingEntries::OutgoingEntries(const SenderSettings& settings, TransferPlan& plan,
                                 std::vector<std::uint32_t> entries, SenderHooks& hooks)
    : settings_(settings), plan_(plan), entries_(std::move(entries)), hooks_(hooks) {}

std::uint64_t OutgoingEntries::total_bytes() const {
  std::uint64_t total = 0;
  for (std::uint32_t index : entries_) total += plan_.entries[index].size;
  return total;
}

void OutgoingEntries::start(const proto::Accept& accept, std::uint32_t slots,
                            bool directories_allowed) {
  slot_size_ = accept.slot_size;
  std::vector<proto::EntryPlan> plans;
  plans.reserve(entries_.size());
  for (std::uint32_t index : entries_)
    plans.push_back(
        {plan_.entries[index].kind, plan_.entries[index].size, !plan_.entries[index].digest_known});
  ledger_ = Ledger(std::move(plans), accept, slots);
  ledger_.allow_directories(directories_allowed);
  // A file to stripe waits until the group's other connections were answered (7.12).
  if (settings_.stripes != nullptr)
    ledger_.hold_back([this](std::uint32_t entry) {
      return !settings_.stripes->offer_striped(entries_[entry]).has_value();
    });
}

OutgoingEntry* OutgoingEntries::open_entry(std::uint32_t entry) {
  OutgoingEntry* e = held(entry);
  return e == nullptr || e->state == proto::EntryState::Settled ? nullptr : e;
}

void OutgoingEntries::send_offers() {
  const auto make = [this](std::uint32_t entry) {
    auto e =
        std::make_unique<OutgoingEntry>(entry, planned(entry), result(entry), plan_.source_dir);
    e->plan_index = entries_[entry];
    e->striped = settings_.stripes != nullptr &&
                 settings_.stripes->offer_striped(entries_[entry]).value_or(false);
    return e;
  };
  while (auto entry = ledger_.next_offer(make)) {
    proto::Offer offer = offer_of(*entry, planned(*entry));
    offer.striped = offered(*entry).striped;
    if (offer.striped)
      spdlog::info("{}: striped over the connections ({})",
                   proto::quoted_for_log(planned(*entry).local_path),
                   proto::format_size(planned(*entry).size));
    hooks_.send(offer, 0);
  }
}

bool OutgoingEntries::send_file_dones() {
  while (const auto due = ledger_.file_done_due()) {
    OutgoingEntry& e = offered(*due);
    if (e.striped_file_changed()) {
      abort_if_due(e);  // its FileAbort instead: nothing of it is kept
      if (ledger_.state(*due) != proto::EntryState::Taken) {
        e.close();
        continue;
      }
    }
    const auto entry = ledger_.next_file_done();
    e.close();  // every chunk of it has been read and written
    proto::FileDone done{*entry, e.planned.size};
    if (e.lead != nullptr) {  // a member's part of a striped file: what it sent (7.12)
      const OutgoingEntry& own = *ledger_.entry(*entry);
      done.total_bytes = own.stripe ? own.stripe->handed(own.member) : 0;
      hooks_.send(done, 0);
      continue;
    }
    if (e.digest_in_flight()) {
      done.digest = e.digest_at_end(digest_terms(), plan_.learned);
      if (!done.digest) {  // a chunk could not be hashed: nothing to vouch for
        spdlog::error("{}: cannot compute its digest", proto::quoted_for_log(e.planned.local_path));
        hooks_.raise(input<proto::SenderEvent::LocalFailure>(
            SenderInput::Abort{proto::ErrorCode::Internal, "cannot hash a file"}));
        return false;
      }
    }
    hooks_.send(done, 0);
  }
  return true;
}

void OutgoingEntries::settle(std::uint32_t entry, EntryResult settled) {
  if (OutgoingEntry* e = held(entry)) {
    e->close();
    // A hash of its bytes that still runs keeps it (and its hasher) until it is over.
    if (!e->hashing()) ledger_.drop(entry);
  }
  ++(settled.status == EntryResult::Status::Good ? good_ : failures_);
  EntryResult& kept = result(entry);
  settled.bytes = kept.bytes;
  settled.resumed_from = kept.resumed_from;
  settled.zero_copy = kept.zero_copy;
  settled.receiver = std::move(kept.receiver);
  kept = std::move(settled);
  if (plan_.on_settled) plan_.on_settled(entries_[entry]);
}

void OutgoingEntries::close_windows() {
  for (const auto& [entry, e] : ledger_.entries()) e->windows.reset();
}

void OutgoingEntries::end(proto::SenderOutcome outcome) {
  for (const auto& [entry, e] : ledger_.entries()) e->file.reset();
  // What this connection did not settle ends as the connection did.
  for (std::uint32_t index : entries_)
    if (plan_.results[index].status == EntryResult::Status::NotSent)
      plan_.results[index].outcome = outcome;
}

bool OutgoingEntries::take(const SenderInput::Answer& answer) {
  if (const auto* m = std::get_if<proto::Take>(&answer)) {
    if (auto error = ledger_.taken(m->entry))
      return broken(std::string("bad Take: ") + proto::to_string(*error));
    if (is_joined(m->entry)) return true;  // joined (7.12): its chunks come from the plan
    offered(m->entry).start_tree_at(digest_terms(), 0);
    if (offered(m->entry).striped)
      settings_.stripes->striped_taken(entries_[m->entry], m->entry, 0, slot_size_);
    return true;
  }
  if (const auto* m = std::get_if<proto::Resume>(&answer)) {
    if (m->entry < entries_.size()) {
      const proto::ResumeFacts facts{plan_.algorithm, m->offset, planned(m->entry).size, slot_size_,
                                     result(m->entry).resumed_from > 0};
      if (const auto problem = proto::check_resume(facts))
        return broken("bad Resume: " + proto::describe(*problem, facts));
    }
    if (auto error = ledger_.resumed(m->entry, m->offset))
      return broken(std::string("bad Resume: ") + proto::to_string(*error));
    offered(m->entry).start_tree_at(digest_terms(), m->offset);
    result(m->entry).resumed_from = m->offset;
    if (offered(m->entry).striped)
      settings_.stripes->striped_taken(entries_[m->entry], m->entry, m->offset, slot_size_);
    spdlog::info("{}: the receiver has its first {} already: resuming there",
                 proto::quoted_for_log(planned(m->entry).local_path),
                 proto::format_size(m->offset));
    return true;
  }
  if (const auto* m = std::get_if<proto::Have>(&answer)) {
    if (auto error = ledger_.had(m->entry))
      return broken(std::string("bad Have: ") + proto::to_string(*error));
    // (The ledger says whether a Have may come; its digest is ours to compare. A bad one
    // ends the session, so the entry the ledger settled is never counted good.)
    if (m->digest != planned(m->entry).digest) return broken("bad Have: another digest");
    spdlog::info("{}: skipped, identical on the receiver",
                 proto::quoted_for_log(planned(m->entry).local_path));
    EntryResult had{.status = EntryResult::Status::Good, .outcome = proto::SenderOutcome::Success};
    had.identical = true;
    settle(m->entry, std::move(had));
    return true;
  }
  if (const auto* m = std::get_if<proto::Holds>(&answer)) {
    if (auto error = ledger_.held(m->entry))
      return broken(std::string("bad Holds: ") + proto::to_string(*error));
    check_holds(*m);
    return true;
  }
  if (const auto* m = std::get_if<proto::Refuse>(&answer)) {
    if (auto error = ledger_.settled(m->entry, false))
      return broken(std::string("bad Refuse: ") + proto::to_string(*error));
    if (is_joined(m->entry)) {  // the other connections carry its chunks (7.12)
      spdlog::debug("not joined: {}", proto::escape_for_log(m->text));
      settle_joined(m->entry, false);
      return true;
    }
    const std::string detail = std::string(proto::to_string(m->reason)) +
                               (m->text.empty() ? "" : ": ") + proto::escape_for_log(m->text);
    // --name can rename only the one file of a command line.
    const bool one_file = this->one_file();
    spdlog::error("{}: refused by the receiver ({}); {}",
                  proto::quoted_for_log(planned(m->entry).local_path), detail,
                  proto::refusal_next_step(m->reason, one_file ? proto::RefusalScope::File
                                                               : proto::RefusalScope::Entry));
    settle(m->entry, {.status = EntryResult::Status::Refused,
                      .outcome = proto::SenderOutcome::Rejected,
                      .detail = detail});
    return true;
  }
  return take_verdict(std::get<proto::FileVerdict>(answer));
}

bool OutgoingEntries::take_verdict(const proto::FileVerdict& m) {
  const bool abandoned = ledger_.state(m.entry) == proto::EntryState::Abandoning;
  if (auto error = ledger_.verdict(m.entry, m.code))
    return broken(std::string("bad FileVerdict: ") + proto::to_string(*error));
  const bool good = m.code == proto::VerdictCode::Good;
  if (is_joined(m.entry)) {
    settle_joined(m.entry, good);
    return true;
  }
  const std::string& path = planned(m.entry).local_path;
  if (m.code == proto::VerdictCode::Interrupted) {
    spdlog::error(
        "{}: interrupted (a connection of its stripe group ended); run the command "
        "again to resume it",
        proto::quoted_for_log(path));
    settle(m.entry, {.status = EntryResult::Status::Failed,
                     .outcome = proto::SenderOutcome::ReceiverFailed,
                     .detail = "interrupted: run again to resume"});
  } else if (abandoned && m.code == proto::VerdictCode::Abandoned) {
    settle(m.entry, {.status = EntryResult::Status::Failed,
                     .outcome = proto::SenderOutcome::LocalFailure,
                     .detail = "changed while it was being sent: not kept"});
  } else if (good) {
    spdlog::debug("{}: verified", proto::quoted_for_log(path));
    settle(m.entry,
           {.status = EntryResult::Status::Good, .outcome = proto::SenderOutcome::Success});
  } else {
    const bool stored = m.code == proto::VerdictCode::StorageError;
    spdlog::error("{}: verdict {}{}", proto::quoted_for_log(path), proto::to_string(m.code),
                  stored ? " (the receiver could not store it)" : "");
    settle(m.entry, {.status = EntryResult::Status::Failed,
                     .outcome = stored ? proto::SenderOutcome::ReceiverFailed
                                       : proto::SenderOutcome::HashMismatch,
                     .detail = proto::to_string(m.code)});
  }
  return true;
}

void OutgoingEntries::settle_joined(std::uint32_t entry, bool good) {
  const std::uint32_t index = index_of(entry);
  if (OutgoingEntry* e = held(entry)) {
    // Its part did not arrive: the file cannot complete (the receiver interrupts it too).
    if (!good && e->stripe) (void)e->stripe->lose(e->member);
    e->close();
    if (!e->hashing()) ledger_.drop(entry);
  }
  settings_.stripes->joined_settled(index, good);
}

void OutgoingEntries::join(std::uint32_t index, OutgoingEntries& lead, std::uint32_t lead_entry,
                           std::shared_ptr<proto::StripePlan> plan, std::uint16_t member) {
  PlannedEntry& file = plan_.entries[index];
  const auto make = [&](std::uint32_t entry) {
    joined_[entry] = index;
    auto e = std::make_unique<OutgoingEntry>(entry, file, plan_.results[index], plan_.source_dir);
    e->lead = &lead;
    e->lead_entry = lead_entry;
    e->plan_index = index;
    return e;
  };
  const std::uint32_t entry = ledger_.join(file.size, std::move(plan), member, make);
  hooks_.send(proto::Join{entry, lead_entry}, 0);
}

void OutgoingEntries::fold_from_member(std::uint32_t entry, std::uint64_t offset,
                                       std::uint32_t length, std::vector<merkle::Node> nodes,
                                       const std::string& error) {
  OutgoingEntry* e = held(entry);
  if (e == nullptr || !e->digest_in_flight()) return;
  e->digest_made(digest_terms());
  fold(entry, offset, length, std::move(nodes), error);
  hooks_.pump();  // its FileDone may be due
}

bool OutgoingEntries::broken(const std::string& why) {
  hooks_.violation(why);
  return false;
}

}  // namespace rdmax::sender
