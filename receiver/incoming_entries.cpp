#include "receiver/incoming_entries.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "protocol/names.hpp"
#include "protocol/paths.hpp"
#include "protocol/receiver_rules.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::receiver {

namespace {
using Input = ReceiverInput;
using Event = proto::ReceiverEvent;

// Offer.path is at most 2048 bytes; with a SUBDIR in front it must still leave room in
// PATH_MAX (4096) for DIR itself.
constexpr std::size_t kMaxPathBeneathDir = 3072;

// The slowest reading and hashing held_wait() allows a sender: a slow disk, or a busy
// emulated CPU (the Soft-RoCE guests hash at tens of MiB/s).
constexpr std::uint64_t kSlowestHashBytesPerSecond = 4 << 20;
// A probed sender's least and most; an unprobed one's most.
constexpr std::chrono::seconds kHeldWaitFloor = std::chrono::minutes(10);
constexpr std::chrono::seconds kLongestHashing = std::chrono::hours(24);

}  // namespace

std::chrono::steady_clock::duration held_wait(std::chrono::steady_clock::duration timeout,
                                              std::uint64_t held_bytes, bool probe) {
  using Duration = std::chrono::steady_clock::duration;
  // Whole seconds, rounded up, capped before they become nanoseconds (a u64 length's would
  // overflow them).
  const std::uint64_t seconds = held_bytes / kSlowestHashBytesPerSecond +
                                (held_bytes % kSlowestHashBytesPerSecond != 0 ? 1 : 0);
  const auto hashing = std::chrono::seconds(
      std::min<std::uint64_t>(seconds, static_cast<std::uint64_t>(kLongestHashing.count())));
  const Duration wait = timeout + hashing;
  if (probe) return std::max<Duration>(wait, kHeldWaitFloor);
  return std::min<Duration>(wait, std::max<Duration>(timeout, kHeldWaitFloor));
}

IncomingEntries::IncomingEntries(ReceiverContext& context, ReceiveWindow& window,
                                 const std::string& label, EntryHooks hooks)
    : context_(context), window_(window), label_(label), hooks_(std::move(hooks)) {}

IncomingEntries::~IncomingEntries() {
  if (group_) context_.stripe_groups->leave(*group_, this);
}

void IncomingEntries::start(const ReceiverInput::AcceptedOpen& accepted, const FlowTerms& terms,
                            std::string subdir, const proto::SealKey* chunk_key,
                            const std::string& proven_id) {
  open_ = accepted.open;
  terms_ = terms;
  subdir_ = std::move(subdir);
  digest_at_end_ = accepted.extensions.digest_at_end;
  resume_understood_ = accepted.extensions.resume_understood;
  prove_held_ = accepted.extensions.prove_held;
  if (resume_understood_) {
    fresh_partial_ = {
        context_.partials, {}, context_.options.slot_size, false, PartialStore::Match::Fresh};
  }
  ledger_ = Ledger(open_, context_.options.slot_size, accepted.slots);
  // One file over several connections (7.12): grouped by the command's token and the key
  // the sender proved.
  if (const auto group = proto::stripe_group_of(open_); group && context_.stripe_groups) {
    group_ = StripeGroups::Key{group->token, proven_id};
    member_ = group->member;
    context_.stripe_groups->enter(*group_, member_, this);
    ledger_.set_stripe_role(member_ == 0 ? proto::StripeRole::Lead : proto::StripeRole::Member);
  }
  directories_.emplace(context_.pool);
  intake_.emplace(context_.pool, window_.transport(), accepted.slots, chunk_key);
  port_.emplace(EntryPort{context_, label_, hooks_, open_.digest_algorithm, terms_.offers_metadata,
                          ledger_.slot_count(), &*directories_,
                          [this](std::uint32_t id) { return entry(id); }});
  started_ = Clock::now();
}

void IncomingEntries::violation(std::string text) {
  hooks_.raise(input<Event::ProtocolViolation>(
      Input::Abort{proto::ErrorCode::ProtocolViolation, std::move(text)}));
}

void IncomingEntries::expect_next() {
  // Our own work (creating, storing, committing) is what the sender waits for: no
  // deadline for it then. Otherwise the sender owes the next message.
  bool own_work = ledger_.storing() > 0;
  bool held = false;
  std::uint64_t held_bytes = 0;  // what the sender hashes before its Continues
  for (const auto& [id, entry] : ledger_.entries()) {
    if (entry->state == proto::EntryState::Offered ||
        entry->state == proto::EntryState::Continued || entry->last_job())
      own_work = true;
    if (entry->state == proto::EntryState::Held) {
      held = true;
      const std::uint64_t length = entry->held.value().length;
      held_bytes += std::min(length, UINT64_MAX - held_bytes);  // saturating
    }
  }
  if (own_work) {
    moving_until_ = Clock::time_point::max();
    return hooks_.expect_own_work("entries to be stored");
  }
  // The sender hashes what we hold of a file before its Continue (PROTOCOL.md 7.9): a
  // large file takes a while, which --timeout alone would not allow. Where the Open asked
  // for keepalives, Connection::tick sends them meanwhile: they probe the sender.
  const Clock::duration within =
      held ? held_wait(context_.options.timeout, held_bytes, open_.keepalive_ms > 0)
           : Clock::duration(context_.options.timeout);
  moving_until_ = Clock::now() + within;
  if (held) return hooks_.expect("the sender's Continue", within);
  hooks_.expect(ledger_.all_settled() ? "Id or Bye" : "the sender's next entry or chunk", within);
}

IncomingEntries::Clock::time_point IncomingEntries::moving_until() const {
  return ended_ || ledger_.closed() ? Clock::time_point::min() : moving_until_;
}

std::optional<IncomingEntries::Clock::time_point> IncomingEntries::group_moving_until() const {
  if (!group_) return std::nullopt;
  std::optional<Clock::time_point> latest;
  for (const IncomingEntries* other : context_.stripe_groups->others(*group_, this))
    if (!latest || other->moving_until() > *latest) latest = other->moving_until();
  return latest;
}

void IncomingEntries::check_offer(const proto::Offer& offer) {
  const auto& o = context_.options;
  // The digest at the end (PROTOCOL.md 7.9) only where the Open asked for it.
  if (offer.digest_at_end && !digest_at_end_)
    return violation("an Offer with digest_at_end, never negotiated");
  if (auto error = ledger_.offer(offer))
    return violation(std::string("bad Offer: ") + proto::to_string(*error));
  IncomingEntry& entry = *this->entry(offer.entry);
  // Cheap checks first (protocol/receiver_rules.hpp): nothing is created for an entry that
  // fails them.
  if (auto refusal = proto::check_offer(offer, o.max_size, terms_.names))
    return port_->refuse(offer.entry, refusal->reason, std::move(refusal->text));
  // A fetch (rdma-recv --from): only what was asked for, under the names it arrives as; a
  // server that offers anything else gets none of DIR.
  if (context_.fetched_names != nullptr && !context_.fetched_names->empty()) {
    const std::string top = offer.path.substr(0, offer.path.find('/'));
    if (!context_.fetched_names->contains(top))
      return port_->refuse(offer.entry, proto::RejectReason::BadName,
                           "not among the paths asked for");
  }
  // A sender key's SUBDIR (--senders): the checked relative path goes beneath it, so no
  // path the sender names can leave it (check_offer refused "..", "/" and empty parts).
  if (!subdir_.empty()) {
    entry.offer.path = subdir_ + "/" + offer.path;
    if (entry.offer.path.size() > kMaxPathBeneathDir)
      return port_->refuse(offer.entry, proto::RejectReason::BadName,
                           "path too long beneath the sender's subdirectory");
  }
  if (offer.kind == proto::EntryKind::Directory) {
    entry.make_directory(*port_);
    return expect_next();
  }
  if (!offer.digest_at_end) {
    if (!resume_understood_) return create_file(entry, std::nullopt);
    return create_file(entry,
                       IncomingFile::Resume{context_.partials, offer.digest, o.slot_size, true});
  }
  // Without its digest (PROTOCOL.md 7.9): how much of it is here is told first (Holds), to a
  // sender that understands Resume and Have and proves what it has; else it is a new file,
  // and a partial kept for the path is not continued (the sender did not check it).
  if (resume_understood_ && prove_held_ && held_guesses_ < proto::kMaxHeldGuesses &&
      offer.size > 0) {
    entry.look_for_held(*port_, fresh_partial_);
    return expect_next();
  }
  create_file(entry, fresh_partial_);
}

void IncomingEntries::create_file(IncomingEntry& entry,
                                  std::optional<IncomingFile::Resume> resume) {
  entry.create(*port_, std::move(resume));
  expect_next();
}

// The digest at the end (PROTOCOL.md 7.9): what is here of a file offered without its digest
// is told (Holds, never its digest: SECURITY.md); the sender's Continue, with its digest of as
// much of its own file, is compared with ours and acted on (Have, a Resume of the kept partial
// checked again, or a new file); a FileAbort discards the file (finish()).
void IncomingEntries::hold(const ReceiverInput::EntryHeld& held) {
  IncomingEntry& entry = *this->entry(held.entry);
  entry.held = proto::Holds{held.entry, held.length, held.digest};  // ours, kept here
  ledger_.hold_for_continue(held.entry);
  spdlog::info("[{}] {} ({}): {} of it is here; asking the sender", label_,
               proto::quoted_for_log(entry.offer.path), proto::format_size(entry.offer.size),
               held.length == entry.offer.size ? "all" : proto::format_size(held.length));
  hooks_.send(proto::Holds{held.entry, held.length, std::nullopt});
  expect_next();
}

void IncomingEntries::check_continue(const proto::Continue& next) {
  // Nothing is held for the sender where the Open did not ask for the digest at the end.
  if (!digest_at_end_) return violation("a Continue, the digest at the end not negotiated");
  if (auto error = ledger_.continued(next))
    return violation(std::string("bad Continue: ") + proto::to_string(*error));
  IncomingEntry& entry = *this->entry(next.entry);
  const proto::Holds held = entry.held.value();  // Held implies a Holds went
  if (next.from == 0) {
    if (next.digest) return violation("a Continue from 0 with a digest");
    return create_file(entry, fresh_partial_);
  }
  if (next.from != held.length) return violation("Continue.from is neither 0 nor what we hold");
  if (!next.digest) return violation("a Continue from what we hold without the sender's digest");
  if (*next.digest != *held.digest) {
    // Another file (or a guess at ours): sent whole, and counted, so that a session cannot
    // ask about what we hold without end.
    if (++held_guesses_ == proto::kMaxHeldGuesses)
      spdlog::warn(
          "[{}] {} files offered differ from what is here: telling this sender no more "
          "about what is held",
          label_, held_guesses_);
    spdlog::info("[{}] {} differs from what is here: taking it whole", label_,
                 proto::quoted_for_log(entry.offer.path));
    return create_file(entry, fresh_partial_);
  }
  if (held.length == entry.offer.size) {
    entry.confirm_whole(*port_, held, fresh_partial_);
    return expect_next();
  }
  // Its prefix is ours: the partial continues, checked again and cut to at most `from`.
  create_file(entry, IncomingFile::Resume{context_.partials,
                                          {},
                                          context_.options.slot_size,
                                          false,
                                          PartialStore::Match::AnyDigest,
                                          next.from});
}

void IncomingEntries::abandon(const proto::FileAbort& abort) {
  if (!digest_at_end_) return violation("a FileAbort, the digest at the end not negotiated");
  if (auto error = ledger_.abort(abort))
    return violation(std::string("bad FileAbort: ") + proto::to_string(*error));
  const IncomingEntry* entry = this->entry(abort.entry);
  if (entry == nullptr) return;  // its write had failed: the sender has that verdict
  spdlog::warn("[{}] the sender abandoned {}: {}", label_, proto::quoted_for_log(entry->offer.path),
               abort.reason == proto::AbortReason::Changed ? "it changed while it was read"
                                                           : "it could not be read");
}

// A Take is a Resume from 0 (PROTOCOL.md 7.6): the entry's data begins at `from`.
void IncomingEntries::take(std::uint32_t id, bool resume) {
  IncomingEntry& entry = *this->entry(id);
  const std::uint64_t from = resume ? entry.file->resumed_from() : 0;
  // The first file taken is the first that needs the window's keys.
  if (auto error = window_.register_slots()) {
    spdlog::error("[{}] cannot register the receive window: {}", label_, *error);
    return port_->refuse(id, proto::RejectReason::NoMemory, "cannot register memory");
  }
  // A joined entry is Taken already (joined(): its chunks are the striped file's).
  if (!entry.joined_to) ledger_.take(id, from);
  entry.send_take(*port_, from);
  for (std::uint32_t slot = 0; slot < ledger_.slot_count(); ++slot)
    if (ledger_.slot_state(slot) == proto::ReceiveSlotState::Idle) grant(slot);
  expect_next();
}

// The file is in place already: settled Good, and nothing of it moves.
void IncomingEntries::have(std::uint32_t id) {
  ++good_;
  ++had_;
  entry(id)->send_have(*port_);
  settle(id, proto::EntryEvent::Have);
}

void IncomingEntries::refuse(const ReceiverInput::EntryRefusal& refusal) {
  if (ledger_.joined_number(refusal.entry)) {
    // A Join refused (7.12): the sender sends those chunks on its other connections; no
    // failure of the session.
    spdlog::info("[{}] not joining entry {}: {}", label_, refusal.entry, refusal.text);
    hooks_.send(
        proto::Refuse{refusal.entry, refusal.reason, refusal.text.substr(0, proto::kMaxTextBytes)});
    return settle(refusal.entry, proto::EntryEvent::Bad);
  }
  IncomingEntry* entry = this->entry(refusal.entry);
  spdlog::warn("[{}] refused {}: {} {}", label_,
               entry ? proto::quoted_for_log(entry->offer.path) : "?",
               proto::to_string(refusal.reason), refusal.text);
  ++failed_;
  if (entry == nullptr || entry->offer.kind == proto::EntryKind::File)
    context_.metrics.count_refused(refusal.reason);
  if (entry != nullptr && context_.reports != nullptr)
    (*context_.reports)(
        report_of(entry->offer, EntryReport::Status::Refused,
                  std::string(proto::to_string(refusal.reason)) + ": " + refusal.text));
  hooks_.send(
      proto::Refuse{refusal.entry, refusal.reason, refusal.text.substr(0, proto::kMaxTextBytes)});
  settle(refusal.entry, proto::EntryEvent::Bad);
}

void IncomingEntries::grant(std::uint32_t slot) {
  if (!ledger_.grant(slot)) return;
  // The first time, the key register_slots made; after a chunk, a fresh one, registered on a
  // worker (receiver/slot_intake.hpp).
  if (auto credit = window_.credit(slot)) return hooks_.send(*credit);
  intake_->grant(slot, window_.slot(slot),
                 [this, slot](std::optional<Registration> key, const std::string& error) {
                   // Kept by the window even when the session ended meanwhile: it goes with
                   // the transport.
                   std::optional<proto::Credit> credit;
                   if (key) credit = window_.set_key(slot, *key);
                   hooks_.in_session([&] {
                     if (!key) throw std::runtime_error("cannot register a slot: " + error);
                     if (credit) hooks_.send(*credit);
                   });
                 });
}

void IncomingEntries::store_chunk(const proto::FileChunk& c) {
  if (ledger_.abandoned(c.entry)) {
    // Written before the sender saw this file's FileVerdict: the slot goes straight back
    // once its key is revoked.
    if (!ledger_.discard_chunk(c))
      return violation("chunk of an abandoned file in a slot not credited");
    return intake_->take(c, window_.take_key(c.slot), std::nullopt,
                         [this, c](SlotIntake::Taken taken) {
                           hooks_.in_session([&] {
                             if (taken == SlotIntake::Taken::RevokeFailed) throw_revoke_failed(c);
                             grant(c.slot);
                           });
                         });
  }
  if (auto error = ledger_.accept_chunk(c)) {
    spdlog::warn("[{}] bad chunk: entry {} offset {} length {} slot {}: {}", label_, c.entry,
                 c.offset, c.length, c.slot, proto::to_string(*error));
    return violation(std::string("chunk breaks the data rules: ") + proto::to_string(*error));
  }
  // Revoke the slot's key before anyone reads it. RC delivers in order, so the WRITE that
  // filled this slot completed before its FileChunk arrived: nothing legitimate is still
  // landing, and from the revoke on a write with that key fails at the writer. Sealed, the
  // chunk is opened after that, in the same job.
  context_.metrics.received_bytes += c.length;
  intake_->take(c, window_.take_key(c.slot), window_.slot(c.slot).first(c.length),
                [this, c](SlotIntake::Taken taken) {
                  hooks_.in_session([&] {
                    if (taken == SlotIntake::Taken::Ready) return store_opened(c);
                    if (taken == SlotIntake::Taken::RevokeFailed) throw_revoke_failed(c);
                    // Not the sender's doing (its FileChunk opened): someone wrote into the
                    // slot. Nothing of it is written; what the file stored before stays good
                    // for a resume.
                    const IncomingEntry* e = entry(c.entry);
                    spdlog::error(
                        "[{}] a chunk of {} (offset {}, {} bytes) does not open: altered in "
                        "our memory after the sender wrote it; nothing of it was written",
                        label_, e ? proto::quoted_for_log(e->offer.path) : "?", c.offset, c.length);
                    hooks_.raise(input<Event::LocalFailure>(Input::Abort{
                        proto::ErrorCode::SealBroken,
                        "a chunk of entry " + std::to_string(c.entry) + " at offset " +
                            std::to_string(c.offset) +
                            " does not open: it was altered in the receiver's memory (written "
                            "with a slot's key); nothing of it was written"}));
                  });
                });
  expect_next();
}

// The slot's key may still work: nothing of the slot may be read, and the connection ends.
void IncomingEntries::throw_revoke_failed(const proto::FileChunk& c) {
  throw std::runtime_error("cannot revoke the key of slot " + std::to_string(c.slot) +
                           ": its chunk is not read");
}

void IncomingEntries::store_opened(const proto::FileChunk& c) {
  const std::uint32_t id = c.entry;
  // Settled while its slot was being revoked (another chunk's store failed): its slot went
  // back with it.
  IncomingEntry* e = entry(id);
  if (e == nullptr) return;
  // A chunk of another connection's striped file (7.12): its `done` comes back here.
  const bool joined = e->joined_to.has_value();
  if (joined) ++joined_stores_;
  e->store(c, window_.slot(c.slot).first(c.length),
           [this, id, joined](const IncomingFile::Stored& stored) {
             if (joined) --joined_stores_;
             hooks_.in_session([&] { on_stored(id, stored); });
           });
}

void IncomingEntries::on_stored(std::uint32_t id, const IncomingFile::Stored& stored) {
  IncomingEntry* entry = this->entry(id);
  if (entry == nullptr) return;
  IncomingEntries* lead =
      entry->joined_to && group_ ? context_.stripe_groups->lead(*group_) : nullptr;
  if (!stored.outcome.ok()) {
    spdlog::error("[{}] cannot write {}: {}", label_, proto::quoted_for_log(entry->offer.path),
                  stored.outcome.error);
    // The striped file it is part of cannot be whole either (7.12).
    if (lead != nullptr)
      lead->interrupt_striped(*entry->joined_to, proto::VerdictCode::StorageError);
    // The entry is settled now; its slots are freed once its file's jobs are done.
    return port_->settle(id, proto::VerdictCode::StorageError);
  }
  bytes_stored_ += stored.length;
  context_.metrics.written_bytes += stored.length;
  hooks_.raise(input<proto::WorkResult::ChunkStored>(Input::StoredSlot{stored.slot, id}));
}

void IncomingEntries::credit(const ReceiverInput::StoredSlot& stored) {
  const IncomingEntry* e = entry(stored.entry);
  const bool joined = e != nullptr && e->joined_to.has_value();
  // false: nothing more to receive (or the slot did not hold that entry's chunk). Once
  // every byte has arrived no slot is handed back (docs/PROTOCOL.md 5.4).
  if (ledger_.stored(stored.slot, stored.entry)) grant(stored.slot);
  // A chunk of the lead's striped file is stored (7.12): the lead may verify it now.
  if (joined && group_)
    if (IncomingEntries* lead = context_.stripe_groups->lead(*group_)) lead->member_stored();
  expect_next();
}

void IncomingEntries::take_file_done(const proto::FileDone& done) {
  if (auto error = ledger_.file_done(done))
    return violation(std::string("bad FileDone: ") + proto::to_string(*error));
  // The digest the file is verified against came at its end (7.9).
  if (IncomingEntry* e = entry(done.entry); e != nullptr && done.digest)
    e->offer.digest = *done.digest;
}

void IncomingEntries::finish() {
  // No byte may come any more: no key of this window works from here (the slots still
  // credited are revoked; a chunk named in them is refused by the ledger anyway).
  if (!ledger_.wants_data()) window_.revoke_credited(ledger_.slot_states());
  std::vector<std::uint32_t> ready;
  std::vector<std::uint32_t> abandoned;
  for (const auto& [id, entry] : ledger_.entries()) {
    if (entry->storing > 0) continue;
    if (entry->state == proto::EntryState::Finished) ready.push_back(id);
    // Abandoned by the sender (7.9): discarded once none of its chunks is being stored.
    if (entry->state == proto::EntryState::Abandoning) abandoned.push_back(id);
  }
  for (std::uint32_t id : ready)
    if (ledger_.start_verifying(id)) entry(id)->verify(*port_);
  for (std::uint32_t id : abandoned) {
    if (ledger_.start_discarding(id)) {
      if (IncomingEntry* e = entry(id); e != nullptr && e->file) e->file->keep_nothing();
      port_->settle(id, proto::VerdictCode::Abandoned);
    }
  }
  expect_next();
}

void IncomingEntries::send_verdict(const ReceiverInput::EntryVerdict& verdict) {
  IncomingEntry* entry = this->entry(verdict.entry);
  if (entry == nullptr) return;
  const bool good = verdict.code == proto::VerdictCode::Good;
  entry->record_verdict(*port_, verdict.code);
  const proto::EntryEvent answer = good ? proto::EntryEvent::Good : proto::EntryEvent::Bad;
  if (entry->joined_to) {
    // A member's part (7.12): the file's own verdict is the lead's to give.
    if (!good && group_)
      if (IncomingEntries* lead = context_.stripe_groups->lead(*group_))
        lead->interrupt_striped(*entry->joined_to, proto::VerdictCode::Interrupted);
    hooks_.send(proto::FileVerdict{verdict.entry, verdict.code, {}});
    return settle(verdict.entry, answer);
  }
  // A striped file not verified (7.12): the entries joined to it end once it is settled.
  const bool striped_failed = entry->striped && !good;
  (good ? good_ : failed_) += 1;
  hooks_.send(proto::FileVerdict{verdict.entry, verdict.code, entry->computed});
  settle(verdict.entry, answer);
  if (striped_failed) striped_ended(verdict.entry);
}

void IncomingEntries::settle(std::uint32_t id, proto::EntryEvent answer) {
  std::unique_ptr<IncomingEntry> settled = ledger_.settle(id, answer);
  if (!settled) return;
  // Settled without a commit: a bad verdict, a refusal or a failed store. Nothing of it is
  // kept for a resume.
  settled->settled();
  retired_.emplace_back(id, std::move(settled));
  reap_retired(true);
  if (ledger_.all_settled() && open_.entry_count > 1) {
    const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    spdlog::info("[{}] session: {} entries good ({} here already), {} failed, {} stored in {:.2f}s",
                 label_, good_, had_, failed_, proto::format_size(bytes_stored_), seconds);
  }
  expect_next();
}

void IncomingEntries::reap_retired(bool in_session) {
  // A retired file whose jobs are all done no longer uses the window: its slots still
  // marked Storing (stores cancelled by discard()) can be credited again.
  for (auto it = retired_.begin(); it != retired_.end();) {
    const auto& file = it->second->file;
    if (file && !file->idle()) {
      ++it;
      continue;
    }
    const std::uint32_t id = it->first;
    it = retired_.erase(it);
    if (!in_session) continue;
    for (std::uint32_t slot : ledger_.release_slots_of(id)) grant(slot);
    expect_next();
  }
}

void IncomingEntries::discard_files(bool keep_nothing) {
  // The session was interrupted: what each file in flight stored is kept for a resume.
  ended_ = true;
  for (auto& [id, held] : ledger_.drop_entries()) {
    IncomingEntry& entry = *held;
    if (entry.joined_to) {  // 7.12: the lead keeps the file as far as it is whole
      joined_cut_short(entry);
      retired_.emplace_back(id, std::move(held));
      continue;
    }
    if (entry.striped) striped_ended(id);
    entry.cut_short(*port_, keep_nothing);
    retired_.emplace_back(id, std::move(held));
  }
  if (directories_) directories_->cancel();
  if (intake_) intake_->cancel();
}

proto::SessionEnd IncomingEntries::session_end() const {
  if (!ledger_.all_settled()) return proto::SessionEnd::Unsettled;
  return failed_ > 0 ? proto::SessionEnd::Failed : proto::SessionEnd::Settled;
}

bool IncomingEntries::committing() const {
  return std::any_of(ledger_.entries().begin(), ledger_.entries().end(),
                     [](const auto& held) { return held.second->committing(); });
}

bool IncomingEntries::idle() const {
  // (An entry joined to another connection's file: that file's other work is not ours;
  // below, what we stored into it.)
  auto busy = [](const IncomingEntry& entry) { return !entry.idle(); };
  // Stores we put into striped files of other connections read our window: while any is
  // unanswered, and its file not idle (a file kept or discarded drops its stores' answers).
  if (joined_stores_ > 0 &&
      std::any_of(joined_files_.begin(), joined_files_.end(),
                  [](const std::shared_ptr<IncomingFile>& f) { return !f->idle(); }))
    return false;
  for (const auto& [id, entry] : ledger_.entries())
    if (busy(*entry)) return false;
  for (const auto& [id, entry] : retired_)
    if (busy(*entry)) return false;
  return (!directories_ || directories_->idle()) && (!intake_ || intake_->idle());
}

proto::Working IncomingEntries::working() const {
  // PROTOCOL.md 7.3: a session's Working says Storing whatever its entries are doing. A
  // Hello's names what its one file waits for, as a Hello's always did: being created,
  // stored or committed.
  proto::Working working{proto::WorkPhase::Storing, bytes_stored_};
  const auto* entry = ledger_.entry(0);
  if (!terms_.working_names_phase || entry == nullptr) return working;
  if (entry->state == proto::EntryState::Offered) working.phase = proto::WorkPhase::Preparing;
  if (entry->last_job()) working.phase = proto::WorkPhase::Committing;
  return working;
}

void IncomingEntries::check_join(const proto::Join& join) {
  // Where this connection was not answered Stripes, or the Join breaks the numbering, it is a
  // violation by the ledger's rules (PROTOCOL.md 7.12).
  if (auto error = ledger_.join(join))
    return violation(std::string("bad Join: ") + proto::to_string(*error));
  auto refuse = [&](const char* why) {
    port_->refuse(join.entry, proto::RejectReason::Internal, why);
  };
  IncomingEntries* lead = context_.stripe_groups->lead(*group_);
  IncomingEntry* striped = lead != nullptr ? lead->joinable(join.lead_entry) : nullptr;
  if (striped == nullptr) return refuse("no striped entry of that number is being received");
  if (lead->ledger_.slot_size() != ledger_.slot_size())
    return refuse("this connection's slot size differs from the lead's");
  // Its Open said no byte would come: it was given no window to carry any (7.5).
  if (open_.total_bytes == 0) return refuse("this connection's Open announced no bytes");
  auto joined = std::make_unique<IncomingEntry>(striped->offer, join.entry);
  joined->file = striped->file;
  if (std::find(joined_files_.begin(), joined_files_.end(), striped->file) == joined_files_.end())
    joined_files_.push_back(striped->file);
  ledger_.joined(join, striped->size, striped->claims, std::move(joined));
  hooks_.raise(input<proto::WorkResult::EntryTaken>(Input::EntryTaken{join.entry}));
}

IncomingEntry* IncomingEntries::joinable(std::uint32_t lead_entry) {
  IncomingEntry* e = entry(lead_entry);
  if (e == nullptr || !e->striped || !e->claims || e->state != proto::EntryState::Taken)
    return nullptr;
  return e;
}

void IncomingEntries::interrupt_striped(std::uint32_t lead_entry, proto::VerdictCode code) {
  hooks_.in_session([&] {
    IncomingEntry* e = entry(lead_entry);
    if (e == nullptr || !e->striped || e->last_job()) return;
    spdlog::warn("[{}] {}: a connection of its stripe group ended{}", label_,
                 proto::quoted_for_log(e->offer.path),
                 code == proto::VerdictCode::StorageError ? " (a chunk could not be written)"
                                                          : "; kept for a resume");
    // What is stored in file order stays for the next attempt (7.6); a write that failed
    // leaves nothing worth keeping.
    if (e->file && code == proto::VerdictCode::StorageError)
      e->file->keep_nothing();  // discarded when it is settled
    else if (e->file)
      e->file->keep();
    port_->settle(lead_entry, code);
  });
}

void IncomingEntries::interrupt_joined(std::uint32_t lead_entry) {
  hooks_.in_session([&] {
    std::vector<std::uint32_t> joined;
    for (const auto& [id, e] : ledger_.entries())
      if (e->joined_to == lead_entry) joined.push_back(id);
    for (std::uint32_t id : joined) port_->settle(id, proto::VerdictCode::Interrupted);
  });
}

void IncomingEntries::member_stored() {
  hooks_.in_session([&] { finish(); });
}

void IncomingEntries::striped_ended(std::uint32_t id) {
  if (!group_) return;
  for (IncomingEntries* member : context_.stripe_groups->others(*group_, this))
    member->interrupt_joined(id);
}

void IncomingEntries::joined_cut_short(const IncomingEntry& entry) {
  if (!group_ || !entry.joined_to) return;
  if (IncomingEntries* lead = context_.stripe_groups->lead(*group_))
    lead->interrupt_striped(*entry.joined_to, proto::VerdictCode::Interrupted);
}

}  // namespace rdmax::receiver
