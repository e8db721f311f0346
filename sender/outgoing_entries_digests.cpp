// The digest at the end (docs/PROTOCOL.md 7.9), the session's part on the sender: a file
// whose digest is not known when it is offered is hashed as its chunks are read for sending,
// on the run's hashing threads (each entry's own digest: sender/outgoing_entry.cpp); its
// FileDone carries the digest. A file that changed while it was read is abandoned (FileAbort):
// nothing of it is kept and nothing goes into the digest cache. When the receiver holds
// something at the path (Holds), our own first bytes are hashed (a local read, nothing is
// sent) and Continue says where the file goes on: from what is held, or from 0.

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "common/digest/file_digest.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "sender/outgoing_entries.hpp"

namespace rdmax::sender {

namespace {
// How long stop_jobs() waits for a job that is already running (one chunk's hash, or a
// prefix being read): it reads buffers the connection is about to free.
constexpr auto kJobPoll = std::chrono::milliseconds(1);

const char* why_abandoned(proto::AbortReason reason) {
  return reason == proto::AbortReason::Changed ? "it changed while it was being sent"
                                               : "it could not be read";
}
}  // namespace

void OutgoingEntries::hash_in_flight(OutgoingEntry& e, const Planned& c,
                                     std::span<const std::uint8_t> bytes) {
  if (e.lead != nullptr) {
    // A chunk of the lead's striped file (7.12): hashed here, on this connection's own
    // hasher (its job reads our buffer), and folded into the lead's digest.
    if (!e.digest) e.digest.emplace();
    if (!e.digest->hasher) e.digest->hasher = digest_terms().hasher(e.planned.size);
    ledger_.hold(c.slot);
    e.digest->hasher->hash(
        c.offset, bytes,
        [this, entry = c.entry, slot = c.slot, offset = c.offset, length = c.length, lead = e.lead,
         lead_entry = e.lead_entry](std::vector<merkle::Node> nodes, const std::string& error) {
          hooks_.in_session([&] {
            ledger_.release(slot);
            lead->fold_from_member(lead_entry, offset, length, std::move(nodes), error);
            if (OutgoingEntry* j = held(entry);
                j != nullptr && j->state == proto::EntryState::Settled && !j->hashing())
              ledger_.drop(entry);
            hooks_.pump();
          });
        });
    return;
  }
  DigestInFlight& d = e.digest_made(digest_terms());
  ledger_.hold(c.slot);
  d.hasher->hash(c.offset, bytes,
                 [this, entry = c.entry, slot = c.slot, offset = c.offset, length = c.length](
                     std::vector<merkle::Node> nodes, const std::string& error) {
                   hooks_.in_session([&] {
                     ledger_.release(slot);  // its bytes may be overwritten now
                     fold(entry, offset, length, std::move(nodes), error);
                     hooks_.pump();
                   });
                 });
  e.check_last_read(c);
}

void OutgoingEntries::hashed_in_read(OutgoingEntry& e, const Planned& c,
                                     std::vector<merkle::Node> nodes, const std::string& error) {
  if (e.lead != nullptr)  // the lead's striped file (7.12)
    return e.lead->fold_from_member(e.lead_entry, c.offset, c.length, std::move(nodes), error);
  e.digest_made(digest_terms());
  fold(c.entry, c.offset, c.length, std::move(nodes), error);
  e.check_last_read(c);
}

void OutgoingEntries::fold(std::uint32_t entry, std::uint64_t offset, std::uint32_t length,
                           std::vector<merkle::Node> nodes, const std::string& error) {
  OutgoingEntry* e = held(entry);
  if (e == nullptr || !e->digest) return;
  e->fold(offset, length, std::move(nodes), error);
  // Settled while it was hashed (a bad verdict): its hasher was kept for this.
  if (e->state == proto::EntryState::Settled && !e->hashing()) ledger_.drop(entry);
}

void OutgoingEntries::abandon(std::uint32_t entry, proto::AbortReason reason,
                              const std::string& why) {
  if (auto error = ledger_.abandon(entry)) {
    // Settled meanwhile (a StorageError verdict), or its FileDone already went: nothing to
    // abandon on the wire.
    spdlog::debug("not abandoning entry {}: {}", entry, proto::to_string(*error));
    return;
  }
  spdlog::error("{}: {}; the receiver keeps nothing of it",
                proto::quoted_for_log(planned(entry).local_path), why);
  hooks_.send(proto::FileAbort{entry, reason}, 0);
}

void OutgoingEntries::unreadable_chunk(const Planned& chunk, const std::string& error) {
  ledger_.unplan(chunk);  // its slot goes to the next file
  if (is_joined(chunk.entry)) {
    // A member cannot abandon the lead's file: its connection ends, and the receiver cuts
    // the file at its stored prefix (7.12).
    spdlog::error("{}: cannot read a chunk ({})",
                  proto::quoted_for_log(planned(chunk.entry).local_path), error);
    return hooks_.raise(input<proto::SenderEvent::LocalFailure>(
        SenderInput::Abort{proto::ErrorCode::Internal, "cannot read a striped file"}));
  }
  abandon(chunk.entry, proto::AbortReason::Unreadable,
          std::string(why_abandoned(proto::AbortReason::Unreadable)) + " (" + error + ")");
  if (OutgoingEntry* e = open_entry(chunk.entry)) e->close();
}

void OutgoingEntries::abort_if_due(OutgoingEntry& e) {
  if (const auto reason = e.take_abort_due()) abandon(e.entry, *reason, why_abandoned(*reason));
}

void OutgoingEntries::check_holds(const proto::Holds& holds) {
  const std::uint32_t entry = holds.entry;
  const std::uint64_t size = planned(entry).size;
  const bool whole = holds.length == size;
  const bool aligned = slot_size_ > 0 && holds.length % slot_size_ == 0 &&
                       plan_.algorithm != proto::DigestAlgorithm::WholeFileSha256;
  if (holds.length == 0 || holds.length > size || (!whole && !aligned))
    return hooks_.violation("bad Holds: " + std::to_string(holds.length) + " bytes of a file of " +
                            std::to_string(size));
  spdlog::info("{}: the receiver has {} of it; checking ours",
               proto::quoted_for_log(planned(entry).local_path),
               whole ? std::string("a file of its size") : proto::format_size(holds.length));
  if (!checks_) checks_.emplace(*settings_.pool);
  struct Result {
    Digest digest{};
    std::vector<merkle::Node> nodes;
    std::string error;
  };
  auto result = std::make_shared<Result>();
  const std::string path = planned(entry).local_path;
  const auto algorithm = plan_.algorithm;
  const unsigned threads = settings_.pool->threads();
  checks_->post(
      [result, path, algorithm, threads, length = holds.length, size, dir = plan_.source_dir] {
        try {
          InputFile file(dir, path);
          // A tree's prefix: its nodes too, to continue the tree from (a SHA-256 Holds is of
          // the whole file, checked above).
          if (algorithm != proto::DigestAlgorithm::WholeFileSha256)
            result->digest = tree_digest_of_file(algorithm, file.fd(), length, threads,
                                                 length < size ? &result->nodes : nullptr);
          else
            result->digest = sha256_of_file(file.fd(), length);
        } catch (const std::exception& e) {
          result->error = e.what();
        }
      },
      [this, entry, holds, result] {
        hooks_.in_session([&] {
          continue_from(entry, holds, result->digest, std::move(result->nodes), result->error);
        });
      });
}

void OutgoingEntries::continue_from(std::uint32_t entry, const proto::Holds& holds,
                                    const Digest& ours, std::vector<merkle::Node> nodes,
                                    const std::string& error) {
  if (!error.empty()) {
    abandon(entry, proto::AbortReason::Unreadable, std::string("cannot read it: ") + error);
    return hooks_.pump();
  }
  // The receiver tells only how much it holds: we say what ours is, and it compares (7.9).
  // A receiver of a revision before kExtensionProveHeld told its digest: we compare.
  const bool same = !holds.digest || ours == *holds.digest;
  const std::uint64_t from = same ? holds.length : 0;
  // (The ledger keeps `from`: a Have may answer it only from the file's size, a Resume only
  // within a prefix.)
  if (auto problem = ledger_.continued(entry, from))
    return hooks_.violation(std::string("cannot continue: ") + proto::to_string(*problem));
  OutgoingEntry& e = offered(entry);  // held until now: offered, not settled
  const bool whole = holds.length == e.planned.size;
  if (same && whole) e.planned.digest = ours;  // a Have must carry it
  if (same && !whole) e.continued = CheckedPrefix{holds.length, std::move(nodes)};
  if (!holds.digest) {
    // Its answer (Have, a Resume, or a Take when they differ) decides; we are ready for each.
    hooks_.send(proto::Continue{entry, holds.length, ours}, 0);
    return hooks_.pump();
  }
  spdlog::debug("{}: {}", proto::quoted_for_log(e.planned.local_path),
                !same   ? "differs from what the receiver has: sending all of it"
                : whole ? "identical to the receiver's"
                        : "its first part is the receiver's");
  hooks_.send(proto::Continue{entry, same ? holds.length : 0}, 0);
  hooks_.pump();
}

namespace {
template <class Held>
FileHasher* hasher_of(const Held& held) {
  const auto& digest = held->digest;
  return digest ? digest->hasher.get() : nullptr;
}
}  // namespace

void OutgoingEntries::cancel_jobs() {
  for (const auto& [entry, e] : ledger_.entries())
    if (FileHasher* h = hasher_of(e)) h->cancel();
  if (checks_) checks_->cancel();
}

bool OutgoingEntries::jobs_running() const {
  for (const auto& [entry, e] : ledger_.entries())
    if (FileHasher* h = hasher_of(e); h != nullptr && h->running()) return true;
  return checks_ && checks_->running();
}

void OutgoingEntries::stop_jobs() {
  cancel_jobs();
  // Only the jobs that run are waited for (they read our buffers). The completions of jobs
  // already over are not run here: this may be inside another completion, whose batch holds
  // them, and they find the connection finished (or go with its queues).
  while (jobs_running()) std::this_thread::sleep_for(kJobPoll);
}

}  // namespace rdmax::sender
