#pragma once
// The sender's half of a version-2 session's rules (docs/PROTOCOL.md 7.5), as pure
// bookkeeping: which entry to offer next (at most kMaxEntriesInFlight unsettled), which
// chunk of which taken file goes into which credited slot, when a file's FileDone is due,
// and which entries are settled.
//
// Each entry moves through the machine both sides share (protocol/entry_machine.hpp):
// Waiting (not offered yet), Offered, Taken (its chunks go out as credits allow),
// Finished (FileDone sent), Settled (Have, Refuse or FileVerdict received). Each file's
// chunks go out in file order; the chunks of up to kInterleavedFiles taken files (the
// oldest) interleave, each chunk going to the one with the fewest chunks not yet stored at
// the receiver (sent, and its slot not credited back), so that the receiver stores several
// files at once (the kernel writes one file's chunks one at a time). A slot is
// credited (a Credit arrived and no FileChunk has been sent for it since) and busy (our
// FileChunk SEND for it has not completed locally). A Credit may arrive while the slot is
// still busy (the receiver stored the chunk before our SEND's completion was polled): the
// slot is then credited but not used until it is no longer busy.
//
// The ledger holds each entry offered as one object, from its Offer until the driver drops
// it after its settlement: the driver's own kind of Entry (sender/outgoing_entry.hpp: its
// file, windows, digest in flight), made when the entry is offered.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "protocol/chunk_plan.hpp"
#include "protocol/entry_machine.hpp"
#include "protocol/enum_names.hpp"
#include "protocol/stripe_plan.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

enum class CreditError : std::uint8_t {
  SlotOutOfRange,  // slot >= Accept.slot_count
  AlreadyHeld,     // the sender already holds that slot's credit
};

enum class ReplyError : std::uint8_t {
  UnknownEntry,  // a Take, Refuse or FileVerdict for an entry not offered, or settled
  NotAFile,      // a Take for a directory
  AlreadyTaken,  // a second Take, or a Take after the file's FileDone
  TooEarly,      // a FileVerdict(Good) for a file whose FileDone was not sent
  BadOffset,     // a Resume not at a chunk boundary, or leaving no chunk to send
};

// How many taken files the chunks are spread over (above): enough stores at once to keep
// a many-core receiver busy (docs/BENCHMARKS.md), few enough that an interrupted tree leaves
// few partial files.
inline constexpr std::size_t kInterleavedFiles = 8;

class SendLedger {
 public:
  using EntryState = proto::EntryState;
  struct EntryPlan {
    EntryKind kind = EntryKind::File;
    std::uint64_t size = 0;
  };
  struct Planned {
    std::uint32_t entry = 0;
    std::uint32_t slot = 0;
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0;
    bool operator==(const Planned&) const = default;
  };

  // What the rules know of an offered entry. The driver's entries extend it; the ledger
  // makes a plain one where it is given no maker (its own tests and fuzzer).
  struct Entry {
    Entry() = default;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    virtual ~Entry() = default;

    EntryState state = EntryState::Waiting;
    std::uint64_t next_offset = 0;  // of the next chunk to write
    std::uint32_t chunks_in_flight = 0;
    std::uint32_t chunks_held = 0;  // being hashed (hold)
    std::uint32_t chunks_out = 0;   // planned, their slots not credited back yet
    // One file over several connections (PROTOCOL.md 7.12): a striped entry (the lead's,
    // member 0) or one joined to it draws its chunks from the file's plan, shared by every
    // connection of the group, instead of next_offset. The lead's FileDone waits for the
    // joined entries of the other connections (`members_pending`, the driver's count).
    std::shared_ptr<StripePlan> stripe;
    std::uint16_t member = 0;
    std::uint32_t members_pending = 0;
  };
  using MakeEntry = std::function<std::unique_ptr<Entry>(std::uint32_t entry)>;
  using Entries = std::map<std::uint32_t, std::unique_ptr<Entry>>;

  SendLedger() = default;
  // `entries` in the order they will be offered; the sender writes at most
  // `max_active_slots` slots (>= 1; the lowest-numbered ones).
  SendLedger(std::vector<EntryPlan> entries, const Accept& accept, std::uint32_t max_active_slots);

  // The next entry to offer, if one is waiting and fewer than kMaxEntriesInFlight are
  // unsettled; it becomes Offered, held as what `make` made of it. A directory waits until
  // no file is unsettled (and directories are allowed: see allow_directories), so that its
  // time, set when it is settled, is not changed by files created in it afterwards.
  [[nodiscard]] std::optional<std::uint32_t> next_offer(const MakeEntry& make = nullptr);
  // While false (default true) no directory is offered: the driver holds them back until
  // the files on other connections are settled too.
  void allow_directories(bool allowed) { directories_allowed_ = allowed; }
  // While set, the entry `held_back` returns true for is not offered yet (and nothing after
  // it): a file to stripe waits until every connection of the group was answered.
  void hold_back(std::function<bool(std::uint32_t)> held_back) {
    held_back_ = std::move(held_back);
  }

  // 7.12. A taken (or resumed) entry becomes striped: its chunks come from `plan` as
  // member 0. False if it is not taken or has chunks planned already.
  [[nodiscard]] bool stripe(std::uint32_t entry, std::shared_ptr<StripePlan> plan);
  // A Join (its number: after every entry offered or joined): an entry of `size` bytes that
  // draws its chunks from `plan` as `member`, Offered until its Take. Counted in flight.
  std::uint32_t join(std::uint64_t size, std::shared_ptr<StripePlan> plan, std::uint16_t member,
                     const MakeEntry& make = nullptr);
  // The number of entries the Open announced (Offers); Joins are numbered from here.
  std::uint32_t offer_count() const { return offer_count_; }

  // Replies. On success the entry's state changes; on failure nothing changes.
  // A Take, or a Resume from `start` (PROTOCOL.md 7.6): the chunks before it are not sent.
  [[nodiscard]] std::optional<ReplyError> taken(std::uint32_t entry, std::uint64_t start = 0);
  // A Have: the file is in place already; it is settled good without any of it sent.
  [[nodiscard]] std::optional<ReplyError> had(std::uint32_t entry);
  // The digest at the end (PROTOCOL.md 7.9). A Holds: the entry waits (Held) for the
  // driver's Continue, which continued() records (Continued: its answer is awaited again,
  // and no second Holds may come).
  [[nodiscard]] std::optional<ReplyError> held(std::uint32_t entry);
  [[nodiscard]] std::optional<ReplyError> continued(std::uint32_t entry);
  // The driver abandons a taken (or digest-asked) file (its FileAbort is about to go): no
  // more of its chunks are planned; its FileVerdict settles it.
  [[nodiscard]] std::optional<ReplyError> abandon(std::uint32_t entry);
  [[nodiscard]] std::optional<ReplyError> settled(std::uint32_t entry, bool good);
  [[nodiscard]] std::optional<CreditError> credit(const Credit& credit);

  // The next chunk to write, if a taken file has bytes left and an active slot is credited
  // and not busy. The slot becomes uncredited and busy.
  [[nodiscard]] std::optional<Planned> next_chunk();
  // A chunk next_chunk() planned that is not written after all (its bytes could not be read;
  // the driver abandons its file): its slot is credited and free again.
  void unplan(const Planned& chunk);
  // The length of the chunk next_chunk() would plan now, without planning it (--bwlimit
  // asks whether the bucket holds that much first).
  [[nodiscard]] std::optional<std::uint32_t> next_chunk_length() const;
  // Our FileChunk SEND for `slot` completed; returns its length (0 if the slot was not busy).
  std::uint32_t completed(std::uint32_t slot);
  // The digest in flight: the bytes of the chunk just planned in `slot` are being hashed
  // (hold) until they are (release). A held slot is not written again, and its file's
  // FileDone is not due, until it is released.
  void hold(std::uint32_t slot);
  void release(std::uint32_t slot);
  // A taken file whose every chunk was written and completed: its FileDone goes now (the
  // entry becomes Finished). An empty file is due as soon as it is taken. A striped or joined
  // entry's: once the plan has handed out every chunk, those of this connection completed
  // (and, for the lead, every joined entry settled); never once the plan is interrupted (the
  // receiver settles it Interrupted).
  [[nodiscard]] std::optional<std::uint32_t> next_file_done();
  // The entry next_file_done() would return, left Taken: its sender may still abandon it
  // instead (a striped file found changed once every connection read its part).
  [[nodiscard]] std::optional<std::uint32_t> file_done_due() const;

  EntryState state(std::uint32_t entry) const;
  // The entry offered and not dropped yet, or none.
  Entry* entry(std::uint32_t entry) const;
  const Entries& entries() const { return entries_; }
  // A settled entry the driver is done with is forgotten (its chunks' completions and
  // Credits still to come find nothing to count).
  void drop(std::uint32_t entry);
  bool all_settled() const { return settled_ == plans_.size(); }
  std::uint32_t unsettled_offers() const { return in_flight_; }
  std::uint64_t bytes_completed() const { return bytes_completed_; }
  std::uint32_t active_slots() const { return active_slots_; }
  std::uint32_t entry_count() const { return static_cast<std::uint32_t>(plans_.size()); }

 private:
  bool files_unsettled() const;
  // The slot and the file of the chunk next_chunk() plans (a slot only when a taken file
  // has bytes left).
  std::optional<std::uint32_t> next_chunk_slot() const;
  std::uint32_t next_chunk_entry() const;
  std::uint32_t next_chunk_entry(const std::vector<std::uint32_t>& order) const;
  // Moves the entry's machine, or says why the reply is not allowed (nothing changes).
  std::optional<ReplyError> step(std::uint32_t entry, EntryEvent event, std::uint64_t start = 0);
  void forget(std::uint32_t entry);  // settled: off every list

  std::vector<EntryPlan> plans_;
  Entries entries_;  // offered, until dropped
  std::uint32_t slot_size_ = 0;
  std::uint64_t region_addr_ = 0;
  std::uint32_t active_slots_ = 0;
  // What the sender knows of each slot of the receiver's window.
  struct Slot {
    bool credited = false;     // a Credit came and no chunk has used it yet
    bool busy = false;         // a chunk is being written into it
    bool held = false;         // being hashed: not written again until release()
    bool out = false;          // its chunk is not stored yet (no Credit since)
    std::uint32_t rkey = 0;    // the last Credit's
    std::uint32_t length = 0;  // of the chunk in flight in a busy slot
    std::uint32_t owner = 0;   // and its entry
    std::uint64_t offset =
        0;  // and where it is in the file (a striped one's plan learns it stored)
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> taken_order_;   // taken files with chunks left, oldest first
  std::vector<std::uint32_t> open_entries_;  // offered, not settled
  std::uint32_t next_offer_ = 0;
  std::uint32_t in_flight_ = 0;  // offered, not settled
  std::uint32_t files_in_flight_ = 0;
  std::size_t settled_ = 0;
  std::uint64_t bytes_completed_ = 0;
  bool directories_allowed_ = true;
  std::function<bool(std::uint32_t)> held_back_;
  std::uint32_t offer_count_ = 0;  // plans_ before any Join
};

}  // namespace rdmax::proto
