#pragma once
// The sender's share of a session's entries (docs/PROTOCOL.md 7.5): each offered entry is an
// OutgoingEntry (sender/outgoing_entry.hpp) from its Offer to its settlement, and the
// SendLedger rules what may happen to each (offered, taken, finished, settled) and which of
// their chunks goes into which slot. Here the Offers and FileDones due are sent, the
// receiver's answers about an entry are held against it (the ledger, the resume rules,
// what our Continue said: one that does not fit is a violation), each settled entry's result
// goes back into the plan, and a file offered without its digest is hashed as it is sent
// (the digest at the end, 7.9: sender/outgoing_entries_digests.cpp; each entry folds and
// checks its own, sender/outgoing_entry.hpp).
//
// The connection's machine decides when the entries are acted on (InSession); its window
// (sender/send_window.hpp) moves their chunks.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/digest/merkle.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/wire.hpp"
#include "sender/outgoing_entry.hpp"
#include "sender/sender_input.hpp"
#include "sender/sender_settings.hpp"
#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

class OutgoingEntries {
 public:
  using Planned = proto::PlannedChunk;

  // `entries` index into plan.entries: this connection's share, in the order to offer
  // (directories last). The plan outlives the entries.
  OutgoingEntries(const SenderSettings& settings, TransferPlan& plan,
                  std::vector<std::uint32_t> entries, SenderHooks& hooks);

  std::uint32_t count() const { return static_cast<std::uint32_t>(entries_.size()); }
  proto::DigestAlgorithm algorithm() const { return plan_.algorithm; }
  // The command is one file and nothing else: a refusal names that file's next step.
  bool one_file() const {
    return plan_.entries.size() == 1 && plan_.entries.front().kind == proto::EntryKind::File;
  }
  std::uint64_t total_bytes() const;
  // The Accept: the session's rules, with `slots` slots written at once.
  void start(const proto::Accept& accept, std::uint32_t slots, bool directories_allowed);
  using Ledger = proto::BasicSendLedger<OutgoingEntry>;
  Ledger& ledger() { return ledger_; }
  const Ledger& ledger() const { return ledger_; }
  PlannedEntry& planned(std::uint32_t entry) { return plan_.entries[index_of(entry)]; }
  EntryResult& result(std::uint32_t entry) { return plan_.results[index_of(entry)]; }
  // The plan's entry of a session entry: an offered one's, or the file a Join carries (7.12).
  std::uint32_t index_of(std::uint32_t entry) const {
    if (entry < entries_.size()) return entries_[entry];
    const auto it = joined_.find(entry);
    return it != joined_.end() ? it->second : entries_.at(entry);
  }

  // One file over several connections (PROTOCOL.md 7.12). A member joins the lead's striped
  // entry `lead_entry` (the plan's `index`) and draws its chunks from `plan` as `member`;
  // the Join goes now. What it reads is hashed here and folded into the lead's digest.
  void join(std::uint32_t index, OutgoingEntries& lead, std::uint32_t lead_entry,
            std::shared_ptr<proto::StripePlan> plan, std::uint16_t member);
  // The lead: a member's nodes of the striped file's chunk (none: `error`), folded in order.
  void fold_from_member(std::uint32_t entry, std::uint64_t offset, std::uint32_t length,
                        std::vector<merkle::Node> nodes, const std::string& error);
  // The entry offered and not settled, or none (a reply for another is refused by the ledger).
  OutgoingEntry* open_entry(std::uint32_t entry);
  OutgoingEntry& offered(std::uint32_t entry) { return *held(entry); }

  // What is due: the Offers (at most kMaxEntriesInFlight unsettled), and the FileDones of
  // files whose every chunk went (false: a digest could not be computed; a LocalFailure is
  // raised).
  void send_offers();
  bool send_file_dones();
  // An answer of the receiver about an entry (any but a Credit), held against it: false if
  // it breaks the rules (a violation is raised, and nothing more is sent).
  bool take(const SenderInput::Answer& answer);
  void settle(std::uint32_t entry, EntryResult result);
  // Entries of this connection not Good (so far); all good: none settled otherwise.
  std::uint32_t failures() const { return count() - good_; }
  bool all_good() const { return failures_ == 0; }

  // The data path's calls (sender/send_window.hpp): a chunk of a file offered without its
  // digest is hashed as it goes, its slot held until then; a chunk that could not be read
  // abandons its file; a file that changed gets its FileAbort after the FileChunk posted.
  void hash_in_flight(OutgoingEntry& e, const Planned& chunk, std::span<const std::uint8_t> bytes);
  // The same for a chunk its read hashed (a sealed one: sender/chunk_reads.hpp).
  void hashed_in_read(OutgoingEntry& e, const Planned& chunk, std::vector<merkle::Node> nodes,
                      const std::string& error);
  void unreadable_chunk(const Planned& chunk, const std::string& error);
  void abort_if_due(OutgoingEntry& e);

  // The end: the jobs cancelled and the running ones waited for (they use our buffers), the
  // windows deregistered (through the transport, before it goes), then the files closed and
  // what was not settled marked as ending with `outcome`.
  void stop_jobs();
  // stop_jobs()'s two halves: the jobs cancelled, and whether one still runs.
  void cancel_jobs();
  bool jobs_running() const;
  void close_windows();
  void end(proto::SenderOutcome outcome);

 private:
  // The entry the ledger holds (offered, and not dropped).
  OutgoingEntry* held(std::uint32_t entry) const { return ledger_.entry(entry); }
  bool take_verdict(const proto::FileVerdict& verdict);
  // A member's joined entry settled (7.12): nothing of the plan's result is its.
  void settle_joined(std::uint32_t entry, bool good);
  bool is_joined(std::uint32_t entry) const { return joined_.contains(entry); }
  bool broken(const std::string& why);  // a violation: false
  void abandon(std::uint32_t entry, proto::AbortReason reason, const std::string& why);
  // A chunk's nodes folded into its entry's digest (OutgoingEntry::fold), if the entry is
  // still held; one settled meanwhile is dropped once no hash of it runs.
  void fold(std::uint32_t entry, std::uint64_t offset, std::uint32_t length,
            std::vector<merkle::Node> nodes, const std::string& error);
  // What each entry's digest needs of this session (the Accept's slot size: start()).
  DigestTerms digest_terms() const {
    return {settings_.hashing, settings_.pool, plan_.algorithm, slot_size_};
  }
  // Holds: our own first `length` bytes hashed (a local read), then Continue.
  void check_holds(const proto::Holds& holds);
  void continue_from(std::uint32_t entry, const proto::Holds& holds, const Digest& ours,
                     std::vector<merkle::Node> nodes, const std::string& error);

  const SenderSettings& settings_;
  TransferPlan& plan_;
  std::vector<std::uint32_t> entries_;             // session entry number -> index into the plan
  std::map<std::uint32_t, std::uint32_t> joined_;  // a Join's entry number -> index (7.12)
  SenderHooks& hooks_;
  std::uint32_t slot_size_ = 0;  // the Accept's
  std::uint32_t good_ = 0;       // entries settled Good
  std::uint32_t failures_ = 0;   // and otherwise
  // The entries offered, until settled and no hash of theirs runs.
  Ledger ledger_;
  std::optional<WorkQueue> checks_;  // Holds: our own prefix hashed
};

}  // namespace rdmax::sender
