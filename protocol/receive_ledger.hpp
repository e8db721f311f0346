#pragma once
// The receiver's half of a version-2 session's rules (docs/PROTOCOL.md 7.5), as pure
// bookkeeping: which entries are in flight and where each stands, which slots the sender
// holds a credit for, and whether an Offer, a FileChunk or a FileDone obeys the rules. The
// driver (receiver/) asks it before it acts on any of them.
//
// Each entry moves through the machine both sides share (protocol/entry_machine.hpp):
// Offered (the driver checks it and creates the file), Taken (Take sent; its chunks
// arrive), Finished (FileDone arrived; its chunks still being stored, then `verifying`:
// every chunk stored, the driver verifies and commits), and then settled: Refuse or
// FileVerdict sent, and the entry forgotten. A directory goes from Offered straight to
// settled.
//
// Slots are shared by every file of the session: Idle, Credited (the sender holds it) or
// Storing (a chunk of some entry is being hashed and written from it).
//
// The ledger holds each entry in flight as one object, from its Offer to its settlement:
// the driver's own kind of Entry (receiver/incoming_entry.hpp: its file, its digest, what
// it holds of it), which it hands over with the Offer and gets back when it is settled.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "protocol/entry_machine.hpp"
#include "protocol/enum_names.hpp"
#include "protocol/stripes.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

enum class ReceiveError : std::uint8_t {
  EntryOutOfOrder,    // an Offer's entry is not the next number
  TooManyEntries,     // more Offers than Open.entry_count
  TooManyInFlight,    // more than kMaxEntriesInFlight entries unsettled
  TooManyBytes,       // the offered files' sizes exceed Open.total_bytes
  UnknownEntry,       // a FileChunk or FileDone for an entry not in flight
  EntryNotReceiving,  // a FileChunk or FileDone for an entry not taken, or already done
  SlotOutOfRange,
  SlotNotCredited,
  WrongOffset,
  WrongLength,
  PastEnd,
  // The digest at the end (PROTOCOL.md 7.9): a Continue for an entry the receiver did not
  // answer with Holds.
  NotHeld,
  // A FileDone without the digest of a file offered without it, or with one for a file
  // offered with its digest (7.9); or with a digest for an entry joined to a striped file.
  DigestMisplaced,
  // One file over several connections (7.12): a striped Offer or a Join where this
  // connection was not answered Stripes (or a Join on the lead, a striped Offer on a member).
  NotStriping,
  JoinOutOfOrder,    // a Join's entry is not the next number after the Offers and Joins
  AlreadyJoined,     // a second Join of the same striped entry on this connection
  ChunkClaimed,      // a chunk of a striped file that a connection of its group sent already
  StripeUnfinished,  // the striped entry's FileDone before every chunk of it was sent
};

class ReceiveLedger {
 public:
  using EntryState = proto::EntryState;
  enum class SlotState : std::uint8_t { Idle, Credited, Storing };
  // What the rules know of an entry. The driver's entries extend it; the ledger creates a
  // plain one where it is given none (its own tests and fuzzer).
  struct Entry {
    Entry() = default;
    explicit Entry(const Offer& offer)
        : kind(offer.kind), size(offer.size), digest_at_end(offer.digest_at_end) {}
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    virtual ~Entry() = default;

    EntryKind kind = EntryKind::File;
    EntryState state = EntryState::Offered;
    // One file over several connections (7.12): offered striped (on the group's lead), or an
    // entry joined to such a file (on a member; `size` is the file's). Either takes its
    // chunks at any offset of the file's grid that no connection of the group claimed before.
    bool striped = false;
    std::optional<std::uint32_t> joined_to;  // the lead's entry number
    std::shared_ptr<StripeClaims> claims;    // the file's, shared by the group's entries
    bool verifying = false;                  // Finished (or Abandoning) and every chunk stored
    std::uint64_t size = 0;
    bool digest_at_end = false;    // offered without its digest: its FileDone carries it
    std::uint64_t received = 0;    // bytes of accepted FileChunks
    std::uint32_t storing = 0;     // its chunks still being stored
    std::uint64_t done_total = 0;  // FileDone.total_bytes
  };

  ReceiveLedger() = default;
  ReceiveLedger(const Open& open, std::uint32_t slot_size, std::uint32_t slot_count);

  // This connection's place in a stripe group (7.12): set when Stripes is about to go (before
  // the Accept), never otherwise. The lead may offer striped files, a member may Join them.
  enum class StripeRole : std::uint8_t { None, Lead, Member };
  void set_stripe_role(StripeRole role) { stripe_role_ = role; }
  StripeRole stripe_role() const { return stripe_role_; }

  using Entries = std::map<std::uint32_t, std::unique_ptr<Entry>>;

  // An Offer arrived: on success the entry is Offered, and `made` (made from that Offer;
  // none: a plain Entry) is the ledger's until the entry is settled.
  [[nodiscard]] std::optional<ReceiveError> offer(const Offer& offer,
                                                  std::unique_ptr<Entry> made = nullptr);
  // Holds is about to go (7.9): Offered -> Held, until the sender's Continue, which
  // continued() checks (Held -> Continued: the driver answers it as an Offer, and no second
  // Holds may go).
  void hold_for_continue(std::uint32_t entry);
  [[nodiscard]] std::optional<ReceiveError> continued(const Continue& next);
  // A FileAbort (7.9): Taken or Held -> Abandoning; the driver discards the file once
  // its chunks are stored (start_discarding) and settles it with FileVerdict(Abandoned).
  // `dropped`: the entry was settled already (its write failed): nothing to do.
  [[nodiscard]] std::optional<ReceiveError> abort(const FileAbort& abort, bool& dropped);
  // An Abandoning entry with no chunk being stored is discarded: returns true once.
  bool start_discarding(std::uint32_t entry);
  // The driver took the file (Take is about to go): Offered -> Taken. With `start` (a
  // Resume's offset, PROTOCOL.md 7.6) the bytes before it count as received, and the
  // first FileChunk must start there (a striped file's: any chunk from there on).
  void take(std::uint32_t entry, std::uint64_t start = 0);
  // A Join on a member (7.12): checked for this connection (its role, the entry's number, the
  // entries in flight, one Join per striped entry). The driver then looks the lead's entry up
  // and either joins it (joined(): the entry is Taken, its chunks claimed in `claims`) or
  // refuses it (Refuse; the number is used either way).
  [[nodiscard]] std::optional<ReceiveError> join(const Join& join);
  void joined(const Join& join, std::uint64_t size, std::shared_ptr<StripeClaims> claims,
              std::unique_ptr<Entry> made = nullptr);
  // Refuse or FileVerdict is about to go: the entry is forgotten (handed back: null if it
  // was not in flight). Its chunks still being
  // stored keep their slots Storing until stored(). A file settled while Receiving (its
  // write failed) is remembered as abandoned: the FileChunks the sender sent before it saw
  // the FileVerdict are still to come, and only free their slots (discard_chunk()).
  std::unique_ptr<Entry> settle(std::uint32_t entry);
  [[nodiscard]] bool abandoned(std::uint32_t entry) const;
  // A FileChunk for an abandoned entry: its slot must be Credited, and becomes Idle (the
  // driver credits it back). False: the slot rules are broken.
  [[nodiscard]] bool discard_chunk(const FileChunk& chunk);

  // Marks the slot Credited (its Credit is about to go). Only from Idle, and only while
  // a byte may still come (wants_data()).
  [[nodiscard]] bool grant(std::uint32_t slot);
  // A FileChunk: on success the slot is Storing and the entry's received() advances.
  [[nodiscard]] std::optional<ReceiveError> accept_chunk(const FileChunk& chunk);
  // The chunk in `slot` is stored: the slot becomes Idle. Returns true when it should be
  // credited back (wants_data()); the driver then calls grant().
  bool stored(std::uint32_t slot, std::uint32_t entry);
  // An entry's stores were cancelled (it was settled early, or the connection ends): its
  // Storing slots become Idle. Returns them (the driver credits them back, if wanted).
  std::vector<std::uint32_t> release_slots_of(std::uint32_t entry);
  // A FileDone: Taken -> Finished. A joined entry's carries no digest (its total is what it
  // sent); a striped entry's comes once every chunk of the file is claimed.
  [[nodiscard]] std::optional<ReceiveError> file_done(const FileDone& done);
  // A Finished entry with no chunk being stored starts verifying: returns true once.
  bool start_verifying(std::uint32_t entry);
  // The connection ends: no slot is credited from now on.
  void close();
  // The session was cut short: every entry in flight is handed back, none is settled.
  Entries drop_entries() { return std::exchange(entries_, {}); }

  // Id and Bye: allowed once every entry was offered and settled.
  [[nodiscard]] bool all_settled() const;
  // A byte may still arrive: an entry is still to be offered and the sizes offered so far
  // are below Open.total_bytes, or a file taken or being checked has bytes not received.
  [[nodiscard]] bool wants_data() const;

  // A number past the Offers the Open announced: a Join's (7.12).
  bool joined_number(std::uint32_t id) const { return id >= open_.entry_count; }
  Entry* entry(std::uint32_t id);
  const Entry* entry(std::uint32_t id) const;
  const Entries& entries() const { return entries_; }
  SlotState slot_state(std::uint32_t slot) const;
  std::uint32_t slot_count() const { return static_cast<std::uint32_t>(slots_.size()); }
  std::uint32_t slot_size() const { return slot_size_; }
  std::uint32_t offered() const { return offered_; }
  std::uint32_t storing() const { return storing_; }

 private:
  // An entry in state `when` with no chunk being stored starts its last job (verifying, or
  // discarding what it stored): true once.
  bool start_last_job(std::uint32_t entry, EntryState when);

  Open open_{};
  std::uint32_t slot_size_ = 0;
  std::vector<SlotState> slots_;
  std::vector<std::uint32_t> slot_owner_;  // the entry of a Storing slot's chunk
  Entries entries_;                        // in flight
  std::vector<std::uint32_t> abandoned_;   // settled while Receiving
  std::uint32_t offered_ = 0;
  std::uint64_t offered_bytes_ = 0;
  StripeRole stripe_role_ = StripeRole::None;
  std::uint32_t joins_ = 0;  // Joins numbered so far (after Open.entry_count's Offers)
  std::uint32_t storing_ = 0;
  bool closed_ = false;
};

}  // namespace rdmax::proto
