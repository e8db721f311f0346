// The receiver's answers in a session (docs/PROTOCOL.md 7.5-7.9), the sender's side: the
// machine lets them through only InSession (GotAnswer -> TakeAnswer); here each is held
// against the entry or slot it names (the ledger, the resume rules, what our Continue
// said), and one that does not fit is a ProtocolViolation. A good one moves the entry on,
// then pump() sends what is due.

#include <spdlog/spdlog.h>

#include "protocol/names.hpp"
#include "protocol/refusals.hpp"
#include "protocol/sizes.hpp"
#include "protocol/transfer_rules.hpp"
#include "sender/connection.hpp"

namespace rdmax::sender {

std::optional<SenderInput::Answer> Connection::answer_in(const proto::Message& message) {
  if (const auto* m = std::get_if<proto::Credit>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Take>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Resume>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Have>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Holds>(&message)) return *m;
  if (const auto* m = std::get_if<proto::Refuse>(&message)) return *m;
  if (const auto* m = std::get_if<proto::FileVerdict>(&message)) return *m;
  return std::nullopt;
}

void Connection::take_answer(const SenderInput::Answer& answer) {
  if (const auto* m = std::get_if<proto::Credit>(&answer)) {
    if (auto error = ledger_.credit(*m))
      return violation(std::string("bad credit: ") + proto::to_string(*error));
    if (data_began_ == Clock::time_point{}) data_began_ = Clock::now();
    return pump();
  }
  if (const auto* m = std::get_if<proto::Take>(&answer)) {
    if (auto error = ledger_.taken(m->entry))
      return violation(std::string("bad Take: ") + proto::to_string(*error));
    start_tree_at(offered(m->entry), 0);
    return pump();
  }
  if (const auto* m = std::get_if<proto::Resume>(&answer)) {
    if (m->entry < entries_.size()) {
      const proto::ResumeFacts facts{plan_.algorithm, m->offset, planned(m->entry).size,
                                     accept_.slot_size, result(m->entry).resumed_from > 0};
      if (const auto problem = proto::check_resume(facts))
        return violation("bad Resume: " + proto::describe(*problem, facts));
      // After our Continue (7.9): at most where it continued, from the prefix we checked.
      if (!planned(m->entry).digest_known) {
        const OutgoingEntry* e = open_entry(m->entry);
        if (e == nullptr || !e->continued || m->offset > e->continued->length)
          return violation("bad Resume: past what we continued from");
      }
    }
    if (auto error = ledger_.taken(m->entry, m->offset))
      return violation(std::string("bad Resume: ") + proto::to_string(*error));
    start_tree_at(offered(m->entry), m->offset);
    result(m->entry).resumed_from = m->offset;
    spdlog::info("{}: the receiver has its first {} already: resuming there",
                 proto::quoted_for_log(planned(m->entry).local_path),
                 proto::format_size(m->offset));
    return pump();
  }
  if (const auto* m = std::get_if<proto::Have>(&answer)) {
    if (m->entry < entries_.size()) {
      if (m->digest != planned(m->entry).digest) return violation("bad Have: another digest");
      // A file offered without its digest is had only after our Continue from its size (7.9).
      const OutgoingEntry* e = open_entry(m->entry);
      if (!planned(m->entry).digest_known && (e == nullptr || !e->continued_whole))
        return violation("bad Have: for a file offered without its digest, before a Continue");
    }
    if (auto error = ledger_.had(m->entry))
      return violation(std::string("bad Have: ") + proto::to_string(*error));
    spdlog::info("{}: skipped, identical on the receiver",
                 proto::quoted_for_log(planned(m->entry).local_path));
    EntryResult had{.status = EntryResult::Status::Good, .outcome = proto::SenderOutcome::Success};
    had.identical = true;
    settle(m->entry, std::move(had));
    return pump();
  }
  if (const auto* m = std::get_if<proto::Holds>(&answer)) {
    if (m->entry >= entries_.size() || planned(m->entry).digest_known)
      return violation("bad Holds: for a file offered with its digest");
    if (auto error = ledger_.held(m->entry))
      return violation(std::string("bad Holds: ") + proto::to_string(*error));
    check_holds(*m);
    return pump();
  }
  if (const auto* m = std::get_if<proto::Refuse>(&answer)) {
    if (auto error = ledger_.settled(m->entry, false))
      return violation(std::string("bad Refuse: ") + proto::to_string(*error));
    const std::string detail = std::string(proto::to_string(m->reason)) +
                               (m->text.empty() ? "" : ": ") + proto::escape_for_log(m->text);
    // --name can rename only the one file of a command line.
    const bool one_file =
        plan_.entries.size() == 1 && plan_.entries.front().kind == proto::EntryKind::File;
    spdlog::error("{}: refused by the receiver ({}); {}",
                  proto::quoted_for_log(planned(m->entry).local_path), detail,
                  proto::refusal_next_step(m->reason, one_file ? proto::RefusalScope::File
                                                               : proto::RefusalScope::Entry));
    settle(m->entry, {.status = EntryResult::Status::Refused,
                      .outcome = proto::SenderOutcome::Rejected,
                      .detail = detail});
    return pump();
  }
  if (const auto* m = std::get_if<proto::FileVerdict>(&answer)) {
    if (take_verdict(*m)) pump();
  }
}

bool Connection::take_verdict(const proto::FileVerdict& m) {
  // Abandoned answers our FileAbort (PROTOCOL.md 7.9), and nothing else.
  const bool abandoned = ledger_.state(m.entry) == proto::EntryState::Abandoning;
  if (m.code == proto::VerdictCode::Abandoned && !abandoned) {
    violation("FileVerdict(Abandoned) for an entry that was not abandoned");
    return false;
  }
  const bool good = m.code == proto::VerdictCode::Good;
  if (auto error = ledger_.settled(m.entry, good)) {
    violation(std::string("bad FileVerdict: ") + proto::to_string(*error));
    return false;
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

}  // namespace rdmax::sender
