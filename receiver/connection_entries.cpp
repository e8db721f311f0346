// A session's entries (docs/PROTOCOL.md 7.5): many on one connection, several in flight,
// sharing the connection's window. The state machine keeps the connection's state
// (InSession); the ReceiveLedger keeps each entry's and each slot's, and every rule
// the sender must obey is checked there before anything is done.

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>

#include "common/error.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"
#include "protocol/receiver_rules.hpp"
#include "protocol/sizes.hpp"
#include "receiver/connection.hpp"
#include "receiver/output_tree.hpp"

namespace rdmax::receiver {

namespace {
using Input = ReceiverInput;

// Offer.path is at most 2048 bytes; with a SUBDIR in front it must still leave room in
// PATH_MAX (4096) for DIR itself.
constexpr std::size_t kMaxPathBeneathDir = 3072;

// How long a sender may take to hash what we hold of a file before its Continue (PROTOCOL.md
// 7.9), when that is longer than --timeout: minutes of reading at disk speed.
constexpr std::chrono::seconds kHeldWait{600};

}  // namespace

Connection::SessionEntry* Connection::session_entry(std::uint32_t id) {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.get();
}

void Connection::expect_next() {
  // Our own work (creating, storing, committing) is what the sender waits for: no
  // deadline for it then. Otherwise the sender owes the next message.
  bool own_work = ledger_.storing() > 0;
  bool held = false;
  for (const auto& [id, entry] : ledger_.entries()) {
    if (entry.state == proto::EntryState::Offered || entry.state == proto::EntryState::Continued ||
        entry.verifying)
      own_work = true;
    if (entry.state == proto::EntryState::Held) held = true;
  }
  if (own_work) return expect_own_work("entries to be stored");
  // The sender hashes what we hold of a file before its Continue (PROTOCOL.md 7.9): a
  // large file takes a while, so --timeout is not held against it, up to a bound.
  if (held)
    return expect("the sender's Continue",
                  std::max<Clock::duration>(context_.options.timeout, kHeldWait));
  expect(ledger_.all_settled() ? "Id or Bye" : "the sender's next entry or chunk",
         context_.options.timeout);
}

void Connection::check_offer(const proto::Offer& offer) {
  const auto& o = context_.options;
  if (auto error = ledger_.offer(offer)) {
    return dispatch({Event::ProtocolViolation,
                     Input::Abort{proto::ErrorCode::ProtocolViolation,
                                  std::string("bad Offer: ") + proto::to_string(*error)}});
  }
  auto& entry = *entries_.emplace(offer.entry, std::make_unique<SessionEntry>()).first->second;
  entry.offer = offer;
  const std::uint32_t id = offer.entry;
  auto refuse = [&](proto::RejectReason reason, std::string text) {
    dispatch({proto::WorkResult::EntryRefused, Input::EntryRefusal{id, reason, std::move(text)}});
  };
  // Cheap checks first (protocol/receiver_rules.hpp): nothing is created for an entry that
  // fails them.
  if (auto refusal = proto::check_offer(offer, o.max_size, terms_.names))
    return refuse(refusal->reason, std::move(refusal->text));
  // A sender key's SUBDIR (--senders): the checked relative path goes beneath it, so no
  // path the sender names can leave it (check_offer refused "..", "/" and empty parts).
  if (!subdir_.empty()) {
    entry.offer.path = subdir_ + "/" + offer.path;
    if (entry.offer.path.size() > kMaxPathBeneathDir)
      return refuse(proto::RejectReason::BadName,
                    "path too long beneath the sender's subdirectory");
  }
  if (offer.kind == proto::EntryKind::Directory) return check_directory(entry);
  if (!offer.digest_at_end) {
    if (!resume_understood_) return create_file(id, std::nullopt);
    return create_file(id,
                       IncomingFile::Resume{context_.partials, offer.digest, o.slot_size, true});
  }
  // Without its digest (PROTOCOL.md 7.9): what is here of it is told first (Holds), for a
  // sender that understands Resume and Have; else it is a new file, and a partial kept for
  // the path is not continued (the sender did not check it).
  if (resume_understood_ && offer.size > 0) return look_for_held(id);
  create_file(id, fresh_partial());
}

void Connection::create_file(std::uint32_t id, std::optional<IncomingFile::Resume> resume) {
  SessionEntry& entry = *session_entry(id);
  expect_next();
  entry.file.emplace(context_.pool, context_.dir_fd, entry.offer.path, context_.options.overwrite,
                     open_.digest_algorithm);
  if (resume) entry.file->set_resume(*resume);
  entry.file->set_direct_io(context_.options.direct_io);
  entry.file->create(
      entry.offer.size, context_.space, [this, id](const IncomingFile::Outcome& outcome) {
        guarded([&] {
          SessionEntry* e = session_entry(id);
          if (state_ != State::InSession || e == nullptr) return;
          using Kind = IncomingFile::Outcome::Kind;
          using R = proto::RejectReason;
          auto refused = [&](R reason, std::string text) {
            dispatch({proto::WorkResult::EntryRefused,
                      Input::EntryRefusal{id, reason, std::move(text)}});
          };
          switch (outcome.kind) {
            case Kind::Ok:
              if (e->file->resumed_from() > 0)
                return dispatch({proto::WorkResult::EntryResumed, Input::EntryTaken{id}});
              return dispatch({proto::WorkResult::EntryTaken, Input::EntryTaken{id}});
            case Kind::Have:
              return dispatch({proto::WorkResult::EntryHave, Input::EntryTaken{id}});
            case Kind::Exists:
              return refused(R::Exists, "a file of that name exists");
            case Kind::NoSpace:
              return refused(R::NoSpace, "not enough free space");
            case Kind::BadPath:
              return refused(R::BadName, outcome.error);
            case Kind::Failed:
              spdlog::error("[{}] cannot create {}: {}", label(),
                            proto::quoted_for_log(e->offer.path), outcome.error);
              return refused(R::Internal, "cannot create the file");
          }
        });
      });
}

void Connection::check_directory(SessionEntry& entry) {
  expect_next();
  struct Result {
    bool ok = true;
    bool bad_path = false;
    std::string error;
  };
  auto result = std::make_shared<Result>();
  const proto::Offer offer = entry.offer;
  const int dir_fd = context_.dir_fd;
  directories_->post(
      [offer, dir_fd, result] {
        try {
          make_directory_beneath(dir_fd, offer.path);
          set_directory_attributes(
              dir_fd, offer.path, static_cast<mode_t>(offer.mode),
              timespec{static_cast<time_t>(offer.mtime_sec), static_cast<long>(offer.mtime_nsec)});
        } catch (const SysError& e) {
          result->ok = false;
          // A symbolic link or a non-directory on the way (receiver/output_tree.hpp).
          result->bad_path = e.error() == ELOOP || e.error() == ENOTDIR;
          result->error = e.what();
        } catch (const std::exception& e) {
          result->ok = false;
          result->error = e.what();
        }
      },
      [this, id = offer.entry, result] {
        guarded([&] {
          if (state_ != State::InSession || session_entry(id) == nullptr) return;
          if (result->ok)
            return dispatch({proto::WorkResult::EntrySettled,
                             Input::EntryVerdict{id, proto::VerdictCode::Good}});
          if (!result->bad_path)
            spdlog::error("[{}] cannot make directory: {}", label(), result->error);
          dispatch(
              {proto::WorkResult::EntryRefused,
               Input::EntryRefusal{
                   id,
                   result->bad_path ? proto::RejectReason::BadName : proto::RejectReason::Internal,
                   result->bad_path ? result->error : "cannot make the directory"}});
        });
      });
}

void Connection::send_take(std::uint32_t id) {
  take_entry(id, 0);
}

void Connection::send_resume(std::uint32_t id) {
  take_entry(id, session_entry(id)->file->resumed_from());
}

// A Take is a Resume from 0 (PROTOCOL.md 7.6): the entry's data begins at `from`.
void Connection::take_entry(std::uint32_t id, std::uint64_t from) {
  SessionEntry& entry = *session_entry(id);
  // The first file taken is the first that needs the window's keys.
  if (!register_window()) {
    return dispatch(
        {proto::WorkResult::EntryRefused,
         Input::EntryRefusal{id, proto::RejectReason::NoMemory, "cannot register memory"}});
  }
  entry.taken = Clock::now();
  ledger_.take(id, from);
  if (from == 0) {
    spdlog::info("[{}] receiving {} ({})", label(), proto::quoted_for_log(entry.offer.path),
                 proto::format_size(entry.offer.size));
    post(proto::Take{id});
  } else {
    spdlog::info("[{}] resuming {} ({}) at {}", label(), proto::quoted_for_log(entry.offer.path),
                 proto::format_size(entry.offer.size), proto::format_size(from));
    post(proto::Resume{id, from});
  }
  grant_idle_slots();
  expect_next();
}

// The file is in place already: settled Good, and nothing of it moves.
void Connection::send_have(std::uint32_t id) {
  SessionEntry& entry = *session_entry(id);
  spdlog::info("[{}] {} ({}) is here already: nothing to receive", label(),
               proto::quoted_for_log(entry.offer.path), proto::format_size(entry.offer.size));
  ++entries_good_;
  ++entries_had_;
  post(proto::Have{id, entry.offer.digest});
  settle_entry(id);
}

void Connection::send_refuse(const ReceiverInput::EntryRefusal& refusal) {
  SessionEntry* entry = session_entry(refusal.entry);
  spdlog::warn("[{}] refused {}: {} {}", label(),
               entry ? proto::quoted_for_log(entry->offer.path) : "?",
               proto::to_string(refusal.reason), refusal.text);
  ++entries_failed_;
  post(proto::Refuse{refusal.entry, refusal.reason, refusal.text.substr(0, proto::kMaxTextBytes)});
  settle_entry(refusal.entry);
}

void Connection::store_chunk(const proto::FileChunk& c) {
  if (ledger_.abandoned(c.entry)) {
    // Written before the sender saw this file's FileVerdict: the slot goes straight back.
    if (!ledger_.discard_chunk(c)) {
      return dispatch({Event::ProtocolViolation,
                       Input::Abort{proto::ErrorCode::ProtocolViolation,
                                    "chunk of an abandoned file in a slot not credited"}});
    }
    revoke_slot(c.slot);
    return grant_slot(c.slot);
  }
  if (auto error = ledger_.accept_chunk(c)) {
    spdlog::warn("[{}] bad chunk: entry {} offset {} length {} slot {}: {}", label(), c.entry,
                 c.offset, c.length, c.slot, proto::to_string(*error));
    return dispatch(
        {Event::ProtocolViolation,
         Input::Abort{proto::ErrorCode::ProtocolViolation,
                      std::string("chunk breaks the data rules: ") + proto::to_string(*error)}});
  }
  // Revoke the slot's key before anyone reads it. RC delivers in order, so the WRITE that
  // filled this slot completed before its FileChunk arrived: nothing legitimate is still
  // landing, and from here a write with that key fails at the writer.
  revoke_slot(c.slot);
  context_.bytes_received += c.length;
  SessionEntry& entry = *session_entry(c.entry);
  const std::uint32_t id = c.entry;
  entry.file->store(
      c.slot, c.offset, slot_bytes(c.slot).first(c.length),
      [this, id](const IncomingFile::Stored& stored) { guarded([&] { on_stored(id, stored); }); });
  expect_next();
}

void Connection::on_stored(std::uint32_t id, const IncomingFile::Stored& stored) {
  if (state_ != State::InSession) return;
  SessionEntry* entry = session_entry(id);
  if (entry == nullptr) return;
  if (!stored.outcome.ok()) {
    spdlog::error("[{}] cannot write {}: {}", label(), proto::quoted_for_log(entry->offer.path),
                  stored.outcome.error);
    // The entry is settled now; its slots are freed once its file's jobs are done.
    return dispatch({proto::WorkResult::EntrySettled,
                     Input::EntryVerdict{id, proto::VerdictCode::StorageError}});
  }
  bytes_stored_ += stored.length;
  dispatch({proto::WorkResult::ChunkStored, Input::StoredSlot{stored.slot, id}});
}

void Connection::send_credit(const ReceiverInput::StoredSlot& stored) {
  // false: nothing more to receive (or the slot did not hold that entry's chunk). Once
  // every byte has arrived no slot is handed back (docs/PROTOCOL.md 5.4).
  if (ledger_.stored(stored.slot, stored.entry)) grant_slot(stored.slot);
  expect_next();
}

void Connection::finish_entries(const ReceiverInput& cause) {
  if (const auto* done = std::get_if<proto::FileDone>(&cause.data)) {
    if (auto error = ledger_.file_done(*done)) {
      return dispatch({Event::ProtocolViolation,
                       Input::Abort{proto::ErrorCode::ProtocolViolation,
                                    std::string("bad FileDone: ") + proto::to_string(*error)}});
    }
  }
  // No byte may come any more: no key of this window works from here (the slots still
  // credited are revoked; a chunk named in them is refused by the ledger anyway).
  if (!ledger_.wants_data()) {
    for (std::uint32_t slot = 0; slot < slot_keys_.size(); ++slot)
      if (ledger_.slot_state(slot) == proto::ReceiveLedger::SlotState::Credited) revoke_slot(slot);
  }
  std::vector<std::uint32_t> ready;
  for (const auto& [id, entry] : ledger_.entries())
    if (entry.state == proto::EntryState::Finished && !entry.verifying && entry.storing == 0)
      ready.push_back(id);
  for (std::uint32_t id : ready)
    if (ledger_.start_verifying(id)) verify_entry(id);
  // Abandoned by the sender (7.9): discarded once none of its chunks is being stored.
  std::vector<std::uint32_t> abandoned;
  for (const auto& [id, entry] : ledger_.entries())
    if (entry.state == proto::EntryState::Abandoning && entry.storing == 0) abandoned.push_back(id);
  for (std::uint32_t id : abandoned) {
    if (ledger_.start_discarding(id)) {
      if (SessionEntry* e = session_entry(id)) e->data_bad = true;  // nothing kept
      dispatch({proto::WorkResult::EntrySettled,
                Input::EntryVerdict{id, proto::VerdictCode::Abandoned}});
    }
  }
  expect_next();
}

void Connection::verify_entry(std::uint32_t id) {
  SessionEntry& entry = *session_entry(id);
  const auto* record = ledger_.entry(id);
  entry.computed = entry.file->finish_hash();
  using Code = proto::VerdictCode;
  // `received` counts the bytes before a Resume offset too (the ledger starts there).
  if (record->received != entry.offer.size || record->done_total != record->received) {
    entry.data_bad = true;
    return dispatch({proto::WorkResult::EntrySettled, Input::EntryVerdict{id, Code::SizeMismatch}});
  }
  if (entry.computed != entry.offer.digest) {
    entry.data_bad = true;
    return dispatch({proto::WorkResult::EntrySettled, Input::EntryVerdict{id, Code::HashMismatch}});
  }
  // A Hello says nothing of its file's mode and time: the file keeps ours (PROTOCOL.md 4.2).
  if (terms_.offers_metadata)
    entry.file->set_metadata(entry.offer.mode, entry.offer.mtime_sec, entry.offer.mtime_nsec);
  entry.committing = true;
  entry.file->commit([this, id](const IncomingFile::Outcome& outcome) {
    if (outcome.ok()) ++context_.files_stored;
    guarded([&] {
      SessionEntry* e = session_entry(id);
      if (e != nullptr) e->committing = false;
      if (state_ != State::InSession || e == nullptr) {
        if (outcome.ok())
          spdlog::warn("[{}] entry {} was committed, but the sender was gone before its verdict",
                       label(), id);
        return;
      }
      if (!outcome.ok())
        spdlog::error("[{}] cannot store {}: {}", label(), proto::quoted_for_log(e->offer.path),
                      outcome.error);
      dispatch({proto::WorkResult::EntrySettled,
                Input::EntryVerdict{id, outcome.ok() ? Code::Good : Code::StorageError}});
      // A shutdown asked for during the commits: their senders have their verdicts first.
      if (shutdown_after_commit_ && !committing()) shut_down();
    });
  });
}

void Connection::send_file_verdict(const ReceiverInput::EntryVerdict& verdict) {
  SessionEntry* entry = session_entry(verdict.entry);
  if (entry == nullptr) return;
  const bool good = verdict.code == proto::VerdictCode::Good;
  (good ? entries_good_ : entries_failed_) += 1;
  if (entry->offer.kind != proto::EntryKind::File) {
    spdlog::debug("[{}] directory {}: {}", label(), proto::quoted_for_log(entry->offer.path),
                  proto::to_string(verdict.code));
  } else if (verdict.code == proto::VerdictCode::Abandoned) {
    spdlog::info("[{}] {}: abandoned by the sender, nothing kept", label(),
                 proto::quoted_for_log(entry->offer.path));
  } else {
    const std::uint64_t from = entry->file ? entry->file->resumed_from() : 0;
    log_file_end(entry->offer.path, entry->offer.size - from, entry->offer.size, entry->taken,
                 entry->computed, proto::to_string(verdict.code));
  }
  post(proto::FileVerdict{verdict.entry, verdict.code, entry->computed});
  settle_entry(verdict.entry);
}

void Connection::settle_entry(std::uint32_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  std::unique_ptr<SessionEntry> entry = std::move(it->second);
  entries_.erase(it);
  ledger_.settle(id);
  // Settled without a commit: a bad verdict, a refusal or a failed store. Nothing of it is
  // kept for a resume.
  if (entry->file && !entry->file->committed()) entry->file->discard();
  retired_.emplace_back(id, std::move(entry));
  reap_retired();
  if (ledger_.all_settled() && open_.entry_count > 1) {
    const double seconds = std::chrono::duration<double>(Clock::now() - data_started_).count();
    spdlog::info(
        "[{}] session: {} entries good ({} here already), {} failed, {} stored in "
        "{:.2f}s",
        label(), entries_good_, entries_had_, entries_failed_, proto::format_size(bytes_stored_),
        seconds);
  }
  expect_next();
}

void Connection::reap_retired() {
  // A retired file whose jobs are all done no longer uses the window: its slots still
  // marked Storing (stores cancelled by discard()) can be credited again.
  for (auto it = retired_.begin(); it != retired_.end();) {
    if (it->second->file && !it->second->file->idle()) {
      ++it;
      continue;
    }
    const std::uint32_t id = it->first;
    it = retired_.erase(it);
    if (state_ != State::InSession) continue;
    for (std::uint32_t slot : ledger_.release_slots_of(id)) grant_slot(slot);
    expect_next();
  }
}

void Connection::discard_files() {
  // The session was interrupted: what each file in flight stored is kept for a resume.
  for (auto& [id, entry] : entries_) {
    if (entry->file && !entry->file->committed()) {
      if (entry->taken != Clock::time_point{}) {
        const auto it = ledger_.entries().find(id);
        const std::uint64_t received = it == ledger_.entries().end() ? 0 : it->second.received;
        log_file_end(entry->offer.path, received, entry->offer.size, entry->taken, {}, nullptr);
      }
      if (entry->data_bad || data_bad_)
        entry->file->discard();
      else
        entry->file->keep();
    }
    retired_.emplace_back(id, std::move(entry));
  }
  entries_.clear();
  if (directories_) directories_->cancel();
}

bool Connection::committing() const {
  for (const auto& [id, entry] : entries_)
    if (entry->committing) return true;
  return false;
}

bool Connection::files_idle() const {
  for (const auto& [id, entry] : entries_)
    if (entry->file && !entry->file->idle()) return false;
  for (const auto& [id, entry] : retired_)
    if (entry->file && !entry->file->idle()) return false;
  return !directories_ || directories_->idle();
}

}  // namespace rdmax::receiver
