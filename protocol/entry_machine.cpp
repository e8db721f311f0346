#include "protocol/entry_machine.hpp"

namespace rdmax::proto {

const char* to_string(EntryState s) {
  switch (s) {
    case EntryState::Waiting:
      return "Waiting";
    case EntryState::Offered:
      return "Offered";
    case EntryState::Held:
      return "Held";
    case EntryState::Continued:
      return "Continued";
    case EntryState::Abandoning:
      return "Abandoning";
    case EntryState::Taken:
      return "Taken";
    case EntryState::Finished:
      return "Finished";
    case EntryState::Settled:
      return "Settled";
  }
  return "?";
}

const char* to_string(EntryEvent e) {
  switch (e) {
    case EntryEvent::Offer:
      return "Offer";
    case EntryEvent::Holds:
      return "Holds";
    case EntryEvent::Continue:
      return "Continue";
    case EntryEvent::Abort:
      return "Abort";
    case EntryEvent::Take:
      return "Take";
    case EntryEvent::Have:
      return "Have";
    case EntryEvent::Chunk:
      return "Chunk";
    case EntryEvent::FileDone:
      return "FileDone";
    case EntryEvent::Good:
      return "Good";
    case EntryEvent::Bad:
      return "Bad";
  }
  return "?";
}

const char* to_string(EntryFault f) {
  switch (f) {
    case EntryFault::NotOffered:
      return "NotOffered";
    case EntryFault::AlreadyOffered:
      return "AlreadyOffered";
    case EntryFault::NotAFile:
      return "NotAFile";
    case EntryFault::NotTaken:
      return "NotTaken";
    case EntryFault::AlreadyTaken:
      return "AlreadyTaken";
    case EntryFault::TooEarly:
      return "TooEarly";
    case EntryFault::Settled:
      return "Settled";
    case EntryFault::Held:
      return "Held";
    case EntryFault::NotHeld:
      return "NotHeld";
    case EntryFault::Abandoned:
      return "Abandoned";
  }
  return "?";
}

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
      if (file && state == EntryState::Abandoning) return EntryFault::Abandoned;
      if (file && asked) return EntryFault::Held;
      if (file && state != EntryState::Finished) return EntryFault::TooEarly;
      next = EntryState::Settled;
      return std::nullopt;
    case EntryEvent::Bad:
      // A refusal, or a failure at any point: a write that failed mid-file, a digest, an
      // abandoned file.
      if (file && asked) return EntryFault::Held;
      next = EntryState::Settled;
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

}  // namespace rdmax::proto
