#pragma once
// A session's entries on the receiver (docs/PROTOCOL.md 7.5): many on one connection,
// several in flight, sharing the connection's window. Each is an IncomingEntry
// (receiver/incoming_entry.hpp) that the ReceiveLedger holds from its Offer to its
// settlement, and the ledger rules every message about it before anything is done: an Offer
// is checked and its file created (or its directory made, or what is here of it told: 7.9),
// taken, its chunks stored and credited back, verified and committed, and settled with its
// verdict. The connection's machine (receiver/connection.hpp) decides which of these may
// happen now; this holds what the session's entries share (the ledger and its slots, the
// window's keys, the session's terms and counts, its stripe group) and carries them out, each
// entry its own file's work (receiver/incoming_entry.hpp) through the port it is given
// (receiver/entry_port.hpp).
//
// Disk and hashing work runs on the daemon's pool; its completions come back on the loop
// through the connection's hooks, and find their entry by number (one settled meanwhile is
// gone, and its completion does nothing): what each entry raises is the machine's next input.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/work/work_pool.hpp"
#include "protocol/receive_ledger.hpp"
#include "protocol/wire.hpp"
#include "receiver/entry_port.hpp"
#include "receiver/hello_edge.hpp"
#include "receiver/incoming_entry.hpp"
#include "receiver/receive_window.hpp"
#include "receiver/receiver_input.hpp"
#include "receiver/slot_intake.hpp"

namespace rdmax::receiver {

// How long a sender may take to hash what we hold of its files before their Continue
// (PROTOCOL.md 7.9): `timeout` (--timeout) and a second for every 4 MiB held, as if it read
// and hashed no faster than 4 MiB/s. A sender we `probe` with keepalives (7.3) gets at least
// 10 minutes and at most a day more: one that died is found by a keepalive it does not
// acknowledge (4.1), and one that lives may be hashing for several connections at once. One
// we cannot probe gets at most 10 minutes (or `timeout`): nothing else would find it gone.
std::chrono::steady_clock::duration held_wait(std::chrono::steady_clock::duration timeout,
                                              std::uint64_t held_bytes, bool probe);

class IncomingEntries {
 public:
  using Clock = std::chrono::steady_clock;

  IncomingEntries(ReceiverContext& context, ReceiveWindow& window, const std::string& label,
                  EntryHooks hooks);
  IncomingEntries(const IncomingEntries&) = delete;
  IncomingEntries& operator=(const IncomingEntries&) = delete;
  ~IncomingEntries();  // leaves its stripe group

  // The Open was accepted: its entries' rules, the flow's terms, the sender key's
  // subdirectory (empty: none), on a sealed connection the chunks' key (7.11), and the key
  // id the sender proved (empty: none; it scopes a stripe group, 7.12).
  void start(const ReceiverInput::AcceptedOpen& accepted, const FlowTerms& terms,
             std::string subdir, const proto::SealKey* chunk_key = nullptr,
             const std::string& proven_id = {});
  // The Open asked to join a stripe group and this daemon stripes: Stripes goes before the
  // Accept (7.12).
  bool stripes() const { return group_.has_value(); }
  using Ledger = proto::BasicReceiveLedger<IncomingEntry>;
  Ledger& ledger() { return ledger_; }
  IncomingEntry* entry(std::uint32_t id) { return ledger_.entry(id); }
  // The deadline: our own work (no deadline), the sender's Continue, or its next message.
  void expect_next();
  // A stripe group waits as one (7.12). Until when this connection counts as moving: for
  // ever while our own work runs, else until its deadline as its last step set it (a
  // message, our work done); a connection whose session ended does not move.
  Clock::time_point moving_until() const;
  // The latest moving_until() of the other connections of this one's stripe group, if it is
  // in one and any of them is there.
  std::optional<Clock::time_point> group_moving_until() const;

  // The machine's actions on the entries.
  void check_offer(const proto::Offer& offer);
  void take(std::uint32_t id, bool resume);  // Take, or Resume from the partial kept
  void have(std::uint32_t id);
  void refuse(const ReceiverInput::EntryRefusal& refusal);
  void hold(const ReceiverInput::EntryHeld& held);
  void check_continue(const proto::Continue& next);
  void abandon(const proto::FileAbort& abort);
  // A Join (7.12): a violation where the ledger's rules forbid it; else joined to the lead's
  // striped entry (EntryTaken) or refused (EntryRefused).
  void check_join(const proto::Join& join);

  // What the other connections of a stripe group ask of this one (on the loop, from their
  // own steps). On the lead: its striped entry `lead_entry` if it may be joined now.
  IncomingEntry* joinable(std::uint32_t lead_entry);
  // On the lead: a member's connection ended while it carried chunks of `lead_entry`, or one
  // of them could not be stored (`code`): the file is kept as far as it is stored in order
  // (unless StorageError) and the entry settled with `code`.
  void interrupt_striped(std::uint32_t lead_entry, proto::VerdictCode code);
  // On a member: the lead's striped entry `lead_entry` ended without being verified: the
  // entries joined to it are settled Interrupted.
  void interrupt_joined(std::uint32_t lead_entry);
  // On the lead: a member stored a chunk of a striped file: it may be verified now.
  void member_stored();
  void store_chunk(const proto::FileChunk& chunk);
  void credit(const ReceiverInput::StoredSlot& stored);
  void take_file_done(const proto::FileDone& done);
  void finish();  // after a FileDone, a stored chunk, an abandoned entry
  void send_verdict(const ReceiverInput::EntryVerdict& verdict);
  // The session was cut short: what each file in flight stored is kept for a resume, unless
  // `keep_nothing` (the sender broke the rules) or it was bad.
  void discard_files(bool keep_nothing);
  // Settled entries whose jobs are done free what they held.
  void reap_retired(bool in_session);

  // Where the entries stand for an Id or a Bye (the table judges it).
  proto::SessionEnd session_end() const;
  bool committing() const;  // a commit job of an entry is queued or running
  bool idle() const;        // no job on the pool uses an entry's file or the window
  // The Working that keeps a waiting sender informed: what we are doing, the bytes stored.
  proto::Working working() const;

 private:
  // 7.12: tell the group that a striped entry (`lead_entry` on the lead) ended unverified, or
  // that an entry joined to one (on a member) was cut short.
  void striped_ended(std::uint32_t id);
  void joined_cut_short(const IncomingEntry& entry);
  // The entry's file created (receiver/incoming_entry.hpp), and the deadline set: ours.
  void create_file(IncomingEntry& entry, std::optional<IncomingFile::Resume> resume);
  // Hashes and writes a chunk checked (and opened, on a sealed connection).
  void store_opened(const proto::FileChunk& chunk);
  void on_stored(std::uint32_t id, const IncomingFile::Stored& stored);
  // Refuse, Have or FileVerdict went (`answer`: the entry's Bad, Have or Good).
  void settle(std::uint32_t id, proto::EntryEvent answer);
  void grant(std::uint32_t slot);
  [[noreturn]] static void throw_revoke_failed(const proto::FileChunk& chunk);
  void violation(std::string text);

  ReceiverContext& context_;
  ReceiveWindow& window_;
  const std::string& label_;
  EntryHooks hooks_;
  std::optional<EntryPort> port_;  // what each entry is given of this session (start())
  proto::Open open_{};
  FlowTerms terms_;
  std::string subdir_;
  bool digest_at_end_ = false;      // the Open asked for the digest at the end (7.9)
  bool resume_understood_ = false;  // the Open carried kExtensionResume
  // The Open carried kExtensionProveHeld: the sender proves what it has of a file we hold
  // (7.9), so we may say how much we hold, never its digest. Without it nothing is held out.
  bool prove_held_ = false;
  // Continues whose digest was not ours: each is one guess at what we hold. After
  // kMaxHeldGuesses of them the session is told nothing more (its files are taken whole).
  std::uint32_t held_guesses_ = 0;
  // A flagged file's partial, if the sender understands Resume: a new one (none continued).
  IncomingFile::Resume fresh_partial_{};
  Clock::time_point started_{};  // the Accept
  std::uint32_t good_ = 0;
  std::uint32_t had_ = 0;     // Good because they were here already (Have)
  std::uint32_t failed_ = 0;  // refused or not verified: no secret for this session
  std::uint64_t bytes_stored_ = 0;
  // The entries in flight. Their jobs use the window (which outlives them).
  Ledger ledger_;
  // Settled or cut short, until no job uses them: then their slots, if their chunks were
  // being stored, go back to the sender.
  std::vector<std::pair<std::uint32_t, std::unique_ptr<IncomingEntry>>> retired_;
  std::optional<WorkQueue> directories_;  // directory work, in order
  // Each chunk's slot revoked (and, sealed, the chunk opened: 7.11) before it is stored,
  // each slot registered again before it is credited, on workers.
  std::optional<SlotIntake> intake_;
  // 7.12: this connection's stripe group (none: it stripes nothing), and the stores of
  // chunks it put into other connections' striped files (their `done` calls back here: this
  // object lives until those files are idle or the stores are answered).
  std::optional<StripeGroups::Key> group_;
  // moving_until()'s time, set by expect_next() only: a deadline moved on because the group
  // moves does not move this one, so two idle connections do not keep each other waiting.
  Clock::time_point moving_until_{};
  bool ended_ = false;  // discard_files(): the session was cut short
  std::uint16_t member_ = 0;
  std::uint32_t joined_stores_ = 0;
  std::vector<std::shared_ptr<IncomingFile>> joined_files_;
};

}  // namespace rdmax::receiver
