#include "protocol/entry_machine.hpp"

#include <stdexcept>
#include <string>

namespace rdmax::proto {

namespace {

// The state after `event`, or the fault; the checks run in the order a reader would ask
// them: does the entry exist, is it still open, is the event about a file, is it its turn.
std::optional<EntryFault> check(EntryKind kind, EntryState state, EntryEvent event,
                                EntryState& next) {
  if (event == EntryEvent::Offer) {
    if (state != EntryState::Waiting) return EntryFault::AlreadyOffered;
    next = EntryState::Offered;
    return std::nullopt;
  }
  if (state == EntryState::Waiting) return EntryFault::NotOffered;
  if (state == EntryState::Settled) return EntryFault::Settled;
  const bool file = kind == EntryKind::File;
  const bool asked = state == EntryState::Held;
  // Verifying and Discarding are Finished and Abandoning with the receiver's last job running.
  const bool finished = state == EntryState::Finished || state == EntryState::Verifying;
  const bool abandoning = state == EntryState::Abandoning || state == EntryState::Discarding;
  // Offered, or Continued: the receiver's answer is due (never a second Holds).
  const bool answerable = state == EntryState::Offered ||
                          (state == EntryState::Continued && event != EntryEvent::Holds);
  switch (event) {
    case EntryEvent::Holds:
    case EntryEvent::Take:
    case EntryEvent::Have:
      if (!file) return EntryFault::NotAFile;
      if (asked) return EntryFault::Held;
      if (!answerable) return EntryFault::AlreadyTaken;
      next = event == EntryEvent::Take    ? EntryState::Taken
             : event == EntryEvent::Holds ? EntryState::Held
                                          : EntryState::Settled;
      return std::nullopt;
    case EntryEvent::Continue:
      if (!file) return EntryFault::NotAFile;
      if (!asked) return EntryFault::NotHeld;
      next = EntryState::Continued;
      return std::nullopt;
    case EntryEvent::Chunk:
    case EntryEvent::FileDone:
      if (!file) return EntryFault::NotAFile;
      if (state != EntryState::Taken) return EntryFault::NotTaken;
      next = event == EntryEvent::Chunk ? EntryState::Taken : EntryState::Finished;
      return std::nullopt;
    case EntryEvent::Abort:
      // Only a file whose answer came (Take, or Holds) and whose FileDone did not.
      if (!file) return EntryFault::NotAFile;
      if (state != EntryState::Taken && !asked) return EntryFault::NotTaken;
      next = EntryState::Abandoning;
      return std::nullopt;
    case EntryEvent::Good:
      // A file is good once all of it was written; a directory as soon as it is made.
      if (file && abandoning) return EntryFault::Abandoned;
      if (file && asked) return EntryFault::Held;
      if (file && !finished) return EntryFault::TooEarly;
      next = EntryState::Settled;
      return std::nullopt;
    case EntryEvent::Bad:
      // A refusal, or a failure at any point: a write that failed mid-file, a digest, an
      // abandoned file.
      if (file && asked) return EntryFault::Held;
      next = EntryState::Settled;
      return std::nullopt;
    case EntryEvent::Stored:
      // Once: a file's last job starts when its FileDone or FileAbort came and every chunk
      // of it is stored.
      if (!file) return EntryFault::NotAFile;
      if (asked) return EntryFault::Held;
      if (state == EntryState::Verifying || state == EntryState::Discarding)
        return EntryFault::AlreadyStored;
      if (!finished && !abandoning) return EntryFault::TooEarly;
      next = finished ? EntryState::Verifying : EntryState::Discarding;
      return std::nullopt;
    case EntryEvent::Offer:
      break;
  }
  return EntryFault::AlreadyOffered;  // not reached: Offer is handled above
}

}  // namespace

std::optional<EntryFault> advance(EntryKind kind, EntryState& state, EntryEvent event) {
  EntryState next = state;
  if (auto fault = check(kind, state, event, next)) return fault;
  state = next;
  return std::nullopt;
}

void advance_own(EntryKind kind, EntryState& state, EntryEvent event) {
  const EntryState from = state;
  if (advance(kind, state, event))
    throw std::logic_error(std::string("our own entry step is not in the table: ") +
                           to_string(from) + " --" + to_string(event) + "-->");
}

}  // namespace rdmax::proto
