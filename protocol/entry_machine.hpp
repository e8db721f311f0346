#pragma once
// One entry of a session (docs/PROTOCOL.md 7.5), the same machine on both sides: the
// sender's ledger moves an entry on what it sends and what comes back, the receiver's on
// what arrives and what it answers. A single file is a session of one entry, so this is
// also the whole life of a version-1 transfer (the receiver's edge maps Hello to Offer).
//
//   Waiting --Offer--> Offered --Take/Resume--> Taken --FileDone--> Finished --Good--> Settled
//                         |  \--Have (file)--------------------------------------->  Settled
//                         \--Good (directory) / Bad (Refuse) ------------------->  Settled
//   Taken and Finished --Bad (a FileVerdict other than Good)--> Settled
//   Taken --Chunk--> Taken
// The digest at the end (docs/PROTOCOL.md 7.9), for a file offered without its digest:
//   Offered --Holds--> Held --Continue--> Continued --Take/Resume--> Taken
//                                            |  \--Have---------------------> Settled
//                                            \--Bad (Refuse)----------------> Settled
//   (Continued is Offered without a second Holds: one Holds, one Continue per entry.)
//   Taken and Held --Abort (FileAbort)--> Abandoning --Bad (Abandoned)--> Settled
// The receiver's last job, once every chunk of a file is stored (no message: its own step):
//   Finished --Stored--> Verifying --Good/Bad--> Settled
//   Abandoning --Stored--> Discarding --Bad (Abandoned)--> Settled
// (the sender never sees Stored: its entries go from Finished and Abandoning to Settled).
//
// Every other (state, event) pair is refused with the reason below: the one way either
// side says "illegal here" for an entry. Slots and credits are not the entry's: they live
// in each side's ledger, which builds on this machine.

#include <cstdint>
#include <optional>

#include "protocol/enum_names.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

enum class EntryState : std::uint8_t {
  Waiting,
  Offered,
  Held,       // the receiver said what it holds (Holds); the sender's Continue is awaited
  Continued,  // the sender's Continue answered the Holds; the receiver's answer is awaited
  Taken,
  Finished,
  Abandoning,  // FileAbort: its FileVerdict(Abandoned) (or StorageError) settles it
  Verifying,   // the receiver's: Finished, every chunk stored, its digest checked and committed
  Discarding,  // the receiver's: Abandoning, every chunk stored, what it stored thrown away
  Settled,
};

enum class EntryEvent : std::uint8_t {
  Offer,     // the sender offers it
  Holds,     // the receiver says what it holds of a file offered without its digest
  Continue,  // the sender says where that file continues (from 0, or what is held)
  Take,      // Take, or Resume (the bytes before its offset count as moved)
  Have,      // the receiver holds it already: settled good, nothing moves
  Chunk,     // one FileChunk of it
  FileDone,  // every byte of it was written
  Abort,     // the sender abandons it (FileAbort)
  Good,      // FileVerdict(Good), or a directory's settling
  Bad,       // Refuse, or a FileVerdict other than Good
  Stored,    // the receiver stored every chunk of it: its last job starts (verify or discard)
};

enum class EntryFault : std::uint8_t {
  NotOffered,      // the event answers an Offer that was never made
  AlreadyOffered,  // a second Offer
  NotAFile,        // Take, Have, Chunk, FileDone or Stored for a directory
  NotTaken,        // a Chunk, FileDone or Abort before the Take, or after the FileDone
  AlreadyTaken,    // Take, Have or Holds when it was answered already (a second Holds too)
  TooEarly,        // a file's Good (or Stored) before its FileDone
  Settled,         // anything once it is settled
  Held,            // anything but Continue or Abort while the sender's Continue is awaited
  NotHeld,         // a Continue without a Holds before it
  Abandoned,       // a Good for an abandoned file
  AlreadyStored,   // a second Stored: its last job runs already
};

// Moves `state` on `event` for an entry of `kind`, or leaves it and says why not.
[[nodiscard]] std::optional<EntryFault> advance(EntryKind kind, EntryState& state,
                                                EntryEvent event);
// A step the side takes of its own accord, which its own bookkeeping makes legal (a new entry
// offered, a Holds or a FileDone it decided to send): the table still decides, and a refusal
// is a bug of ours, never a peer's (std::logic_error naming the step).
void advance_own(EntryKind kind, EntryState& state, EntryEvent event);

}  // namespace rdmax::proto
