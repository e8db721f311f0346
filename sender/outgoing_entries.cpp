#include "sender/outgoing_entries.hpp"

#include <spdlog/spdlog.h>

#include "protocol/names.hpp"
#include "protocol/refusals.hpp"
#include "protocol/sizes.hpp"
#include "protocol/transfer_rules.hpp"

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
  std::vector<proto::SendLedger::EntryPlan> plans;
  plans.reserve(entries_.size());
  for (std::uint32_t index : entries_)
    plans.push_back({plan_.entries[index].kind, plan_.entries[index].size});
  ledger_ = proto::SendLedger(std::move(plans), accept, slots);
  ledger_.allow_directories(directories_allowed);
}

OutgoingEntry* OutgoingEntries::open_entry(std::uint32_t entry) {
  OutgoingEntry* e = held(entry);
  return e == nullptr || e->state == proto::EntryState::Settled ? nullptr : e;
}

void OutgoingEntries::send_offers() {
  const auto make = [this](std::uint32_t entry) {
    return std::make_unique<OutgoingEntry>(entry, planned(entry), result(entry));
  };
  while (auto entry = ledger_.next_offer(make)) {
    hooks_.send(offer_of(*entry, planned(*entry)), 0);
  }
}

bool OutgoingEntries::send_file_dones() {
  while (auto entry = ledger_.next_file_done()) {
    OutgoingEntry& e = offered(*entry);
    e.close();  // every chunk of it has been read and written
    proto::FileDone done{*entry, e.planned.size};
    if (e.digest_in_flight()) {
      done.digest = digest_at_end(e);
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
  for (const auto& [entry, e] : ledger_.entries()) static_cast<OutgoingEntry&>(*e).windows.reset();
}

void OutgoingEntries::end(proto::SenderOutcome outcome) {
  for (const auto& [entry, e] : ledger_.entries()) static_cast<OutgoingEntry&>(*e).file.reset();
  // What this connection did not settle ends as the connection did.
  for (std::uint32_t index : entries_)
    if (plan_.results[index].status == EntryResult::Status::NotSent)
      plan_.results[index].outcome = outcome;
}

bool OutgoingEntries::take(const SenderInput::Answer& answer) {
  if (const auto* m = std::get_if<proto::Take>(&answer)) {
    if (auto error = ledger_.taken(m->entry))
      return broken(std::string("bad Take: ") + proto::to_string(*error));
    start_tree_at(offered(m->entry), 0);
    return true;
  }
  if (const auto* m = std::get_if<proto::Resume>(&answer)) {
    if (m->entry < entries_.size()) {
      const proto::ResumeFacts facts{plan_.algorithm, m->offset, planned(m->entry).size, slot_size_,
                                     result(m->entry).resumed_from > 0};
      if (const auto problem = proto::check_resume(facts))
        return broken("bad Resume: " + proto::describe(*problem, facts));
      // After our Continue (7.9): at most where it continued, from the prefix we checked.
      if (!planned(m->entry).digest_known) {
        const OutgoingEntry* e = open_entry(m->entry);
        if (e == nullptr || !e->continued || m->offset > e->continued->length)
          return broken("bad Resume: past what we continued from");
      }
    }
    if (auto error = ledger_.taken(m->entry, m->offset))
      return broken(std::string("bad Resume: ") + proto::to_string(*error));
    start_tree_at(offered(m->entry), m->offset);
    result(m->entry).resumed_from = m->offset;
    spdlog::info("{}: the receiver has its first {} already: resuming there",
                 proto::quoted_for_log(planned(m->entry).local_path),
                 proto::format_size(m->offset));
    return true;
  }
  if (const auto* m = std::get_if<proto::Have>(&answer)) {
    if (m->entry < entries_.size()) {
      if (m->digest != planned(m->entry).digest) return broken("bad Have: another digest");
      // A file offered without its digest is had only after our Continue from its size (7.9).
      const OutgoingEntry* e = open_entry(m->entry);
      if (!planned(m->entry).digest_known && (e == nullptr || !e->continued_whole))
        return broken("bad Have: for a file offered without its digest, before a Continue");
    }
    if (auto error = ledger_.had(m->entry))
      return broken(std::string("bad Have: ") + proto::to_string(*error));
    spdlog::info("{}: skipped, identical on the receiver",
                 proto::quoted_for_log(planned(m->entry).local_path));
    EntryResult had{.status = EntryResult::Status::Good, .outcome = proto::SenderOutcome::Success};
    had.identical = true;
    settle(m->entry, std::move(had));
    return true;
  }
  if (const auto* m = std::get_if<proto::Holds>(&answer)) {
    if (m->entry >= entries_.size() || planned(m->entry).digest_known)
      return broken("bad Holds: for a file offered with its digest");
    if (auto error = ledger_.held(m->entry))
      return broken(std::string("bad Holds: ") + proto::to_string(*error));
    check_holds(*m);
    return true;
  }
  if (const auto* m = std::get_if<proto::Refuse>(&answer)) {
    if (auto error = ledger_.settled(m->entry, false))
      return broken(std::string("bad Refuse: ") + proto::to_string(*error));
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
  // Abandoned answers our FileAbort (PROTOCOL.md 7.9), and nothing else.
  const bool abandoned = ledger_.state(m.entry) == proto::EntryState::Abandoning;
  if (m.code == proto::VerdictCode::Abandoned && !abandoned) {
    return broken("FileVerdict(Abandoned) for an entry that was not abandoned");
  }
  const bool good = m.code == proto::VerdictCode::Good;
  if (auto error = ledger_.settled(m.entry, good)) {
    return broken(std::string("bad FileVerdict: ") + proto::to_string(*error));
  }
  const std::string& path = planned(m.entry).local_path;
  if (abandoned && m.code == proto::VerdictCode::Abandoned) {
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

bool OutgoingEntries::broken(const std::string& why) {
  hooks_.violation(why);
  return false;
}

}  // namespace rdmax::sender
