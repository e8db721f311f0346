// Fuzz target for the connection state machines (protocol/receiver_machine.hpp,
// protocol/sender_machine.hpp). The unit tests pin every single (state, event) pair; this
// target checks what must hold along any *sequence* of events, which is what a hostile or
// buggy peer controls:
//  1. every input byte is one of a driver's own inputs (tests/fuzz/machine_local_inputs.hpp:
//     an event with findings from the byte's bits, a result of the entries' work, the set-up's
//     events, the end of a session; a few byte values are deliberately out of range, as a
//     driver bug would produce) for the receiver, and for the sender with an id and a key and
//     with neither;
//  2. the input as records (see run_messages) drives both machines the way the programs do:
//     received bytes go through decode() and become the event the message type maps to.
//  3. the input drives a fetch's two machines before their sessions (protocol/fetch_machines.hpp,
//     docs/PROTOCOL.md 7.13), the server's and a fetcher's with a key and without: nothing is
//     walked before the request (and, with a key, the proof) was accepted, no Want goes before a
//     keyed fetcher checked the server's proof, and the ends are final.
// Which invariants hold was read off the code and docs/PROTOCOL.md sections 4 and 7.13.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <variant>

#include "protocol/auth.hpp"
#include "protocol/fetch_machines.hpp"
#include "protocol/receiver_machine.hpp"
#include "protocol/sender_machine.hpp"
#include "protocol/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/machine_local_inputs.hpp"

namespace {

using namespace rdmax::proto;
using RS = ReceiverState;
using RE = ReceiverEvent;
using RA = ReceiverAction;
using SS = SenderState;
using SE = SenderEvent;
using SA = SenderAction;

using rdmax::fuzz::kFirstRawEventByte;
using rdmax::fuzz::kReceiverEvents;
using rdmax::fuzz::kReceiverLocalInputs;
using rdmax::fuzz::kSenderEvents;
using rdmax::fuzz::kSenderLocalInputs;
using rdmax::fuzz::kSetupEvents;

bool named(const char* name) {
  return std::strcmp(name, "?") != 0;
}

// A state is valid iff it is one of the enumerators, which are exactly the ones with a name.
bool valid(RS s) {
  return static_cast<unsigned>(s) <= static_cast<unsigned>(RS::Closed) && named(to_string(s));
}
bool valid(SS s) {
  return static_cast<unsigned>(s) <= static_cast<unsigned>(SS::Done) && named(to_string(s));
}

template <typename Action, std::size_t N>
bool is_last(const ActionList<Action, N>& actions, Action a) {
  return !actions.empty() && *(actions.end() - 1) == a;
}

// Only here may an entry be in flight, with a temporary file (docs 7.5: until every entry is
// settled, which an Id needs).
bool entries_in_flight(RS s) {
  return s == RS::AwaitOpen || s == RS::InSession;
}

bool connected(SS s) {
  return s == SS::AwaitAccept || s == SS::InSession || s == SS::AwaitSecret;
}

class ReceiverRun {
 public:
  RS state() const { return state_; }
  // The connection began with a Hello: its edge (receiver/hello_edge.hpp) gives the driver
  // an Open and an Offer for it, and FileChunks and a FileDone for its Chunks and Done.
  bool hello_flow = false;

  // One of the driver's own inputs (machine_local_inputs.hpp). What its checks found comes
  // from the byte too (checks_of): the machine must hold for any of them.
  void local(std::uint8_t byte) {
    const unsigned n = byte >= kFirstRawEventByte ? byte : byte % kReceiverLocalInputs;
    if (n >= kReceiverEvents && n < kReceiverLocalInputs) {
      result(static_cast<WorkResult>(n - kReceiverEvents));
      return;
    }
    step(static_cast<RE>(n), rdmax::fuzz::checks_of(byte));
  }

  void step(RE e, ReceiverChecks c = {}) {
    // A session reaches the id only with every entry settled and good (docs 7.5): what it
    // delivered is stored.
    if (state_ == RS::InSession && e == RE::GotId && c.id != IdLookup::NotLookedUp &&
        c.entries == SessionEnd::Settled)
      committed_ = true;
    const ReceiverTransition t = receiver_next(state_, e, c);
    FUZZ_CHECK(valid(t.next));
    for (RA a : t.actions) FUZZ_CHECK(named(to_string(a)));

    if (state_ == RS::Closed) {
      // Absorbing: the connection's resources are gone, so nothing may be asked of them.
      FUZZ_CHECK(t.next == RS::Closed && t.actions.empty() && !t.illegal);
    } else if (state_ == RS::Closing) {
      // Late events change nothing but the end of the teardown.
      FUZZ_CHECK(!t.illegal);
      FUZZ_CHECK(t.next == RS::Closing
                     ? t.actions.empty()
                     : t.next == RS::Closed && t.actions == ActionList<RA>{RA::Release});
    } else {
      check_open(t, e, c);
    }

    state_ = t.next;
    // AwaitId is reachable only through an Id after the entries.
    if (state_ == RS::AwaitId) FUZZ_CHECK(committed_);
  }

  // A result of the entries' work: InSession's alone, and it stays there, answering the
  // entry (never an Accept, a secret or the teardown); elsewhere it changes nothing.
  void result(WorkResult r) {
    const ReceiverTransition t = session_result(state_, r);
    if (state_ != RS::InSession) {
      FUZZ_CHECK(t.next == state_ && !t.illegal && t.actions.empty());
      return;
    }
    FUZZ_CHECK(t.next == RS::InSession && !t.illegal && !t.actions.empty());
    for (RA a : t.actions)
      FUZZ_CHECK(a == RA::SendTake || a == RA::SendResume || a == RA::SendHave ||
                 a == RA::SendHolds || a == RA::SendRefuse || a == RA::SendCredit ||
                 a == RA::FinishEntries || a == RA::SendFileVerdict);
  }

 private:
  void check_open(const ReceiverTransition& t, RE e, const ReceiverChecks& c) const {
    const bool leaving = t.next == RS::Closing || t.next == RS::Closed;
    if (t.illegal) {
      // A named protocol error: the peer is told, and the connection is taken down.
      FUZZ_CHECK(!t.actions.empty() && t.next == RS::Closing);
      FUZZ_CHECK(t.actions.contains(RA::SendError));
    }
    // Teardown is always complete, and always the last thing asked for: nothing is sent
    // after Disconnect or touched after Release.
    FUZZ_CHECK(t.actions.contains(RA::Disconnect) == (t.next == RS::Closing));
    FUZZ_CHECK(t.actions.contains(RA::Release) == (t.next == RS::Closed));
    if (t.next == RS::Closing) FUZZ_CHECK(is_last(t.actions, RA::Disconnect));
    if (t.next == RS::Closed) FUZZ_CHECK(is_last(t.actions, RA::Release));
    // Every way out while entries may be in flight removes their temporaries (GotError
    // included); only a way out does (it never touches a committed file).
    // (An id's answer comes after every entry is settled: nothing is in flight then.)
    const bool id_answer = e == RE::GotId && c.entries == SessionEnd::Settled &&
                           (c.id == IdLookup::Known || c.id == IdLookup::AttemptsExhausted);
    if (leaving && entries_in_flight(state_) && !id_answer)
      FUZZ_CHECK(t.actions.contains(RA::DiscardFile));
    if (t.actions.contains(RA::DiscardFile)) FUZZ_CHECK(leaving);
    // An Error from the peer is never answered with another Error.
    if (e == RE::GotError) FUZZ_CHECK(!t.actions.contains(RA::SendError));
    // Once the transport is gone nothing can be sent; a broken queue pair is only told
    // to the peer through rdma_cm (Disconnect), never by a message.
    if (e == RE::Disconnected || e == RE::TransportFailed) {
      for (RA a : t.actions)
        FUZZ_CHECK(a == RA::DiscardFile || a == RA::Release || a == RA::Disconnect);
    }
    if (e == RE::Disconnected) FUZZ_CHECK(t.next == RS::Closed);
    // The secret is what a verified session earns: only after its entries and a lookup.
    if (t.actions.contains(RA::SendSecret)) {
      FUZZ_CHECK(committed_ && e == RE::GotId && c.id == IdLookup::Known);
    }
    // Memory is granted only to an Open that passed its checks, and with --senders only
    // after the Proof (Authenticating): never from a challenge on.
    if (t.actions.contains(RA::SendAccept)) {
      FUZZ_CHECK(((state_ == RS::AwaitOpen && e == RE::GotOpen) ||
                  (state_ == RS::Authenticating && e == RE::GotProof)) &&
                 c.open == OpenCheck::Accepted);
    }
    if (t.actions.contains(RA::SendChallenge))
      FUZZ_CHECK(state_ == RS::AwaitOpen && e == RE::GotOpen && c.open == OpenCheck::NeedsProof &&
                 t.next == RS::Authenticating);
    if (t.next == RS::Authenticating) FUZZ_CHECK(state_ == RS::AwaitOpen);
    // The session's own actions happen only in a session.
    for (RA a : {RA::CheckOffer, RA::SendTake, RA::SendRefuse, RA::TakeFileDone, RA::FinishEntries,
                 RA::SendFileVerdict, RA::SendResume, RA::SendHave, RA::StoreChunk, RA::SendCredit})
      if (t.actions.contains(a)) FUZZ_CHECK(state_ == RS::InSession && t.next == RS::InSession);
  }

  RS state_ = RS::AwaitOpen;
  bool committed_ = false;  // an Id let through in a session: its entries are settled
};

class SenderRun {
 public:
  // `keyed`: with --id and --key-file.
  explicit SenderRun(bool keyed) : has_id_(keyed), has_key_(keyed) {}

  // One of the driver's own inputs (machine_local_inputs.hpp). The receiver's Proof, as the
  // driver found it, comes from the byte too: the machine must hold for any finding.
  void local(std::uint8_t byte) {
    if (setup_)
      return setup_step(
          static_cast<SetupEvent>(byte >= kFirstRawEventByte ? byte : byte % kSetupEvents));
    const unsigned n = byte >= kFirstRawEventByte ? byte : byte % kSenderLocalInputs;
    if (n == rdmax::fuzz::kSettledAllGood || n == rdmax::fuzz::kSettledWithFailures) {
      settled(n == rdmax::fuzz::kSettledAllGood);
      return;
    }
    step(static_cast<SE>(n), rdmax::fuzz::proof_of(byte));
  }

  // A received message; none can arrive during the set-up (there is no queue pair).
  void received(SE e, ReceiverProof proof = ReceiverProof::NotDue) {
    if (!setup_) step(e, proof);
  }

  // The messages of sender keys, found as the driver finds them (sender/key_proof.cpp):
  // one Challenge is answered in AwaitAccept by a keyed sender, once; its receiver's Proof
  // is checked once, after it (`good`: the check's result); an Accept before a good Proof,
  // with a key, is refused.
  void challenge() {
    const bool due = has_key_ && state_ == SS::AwaitAccept && !challenged_;
    if (due) challenged_ = true;
    received(due || state_ != SS::AwaitAccept ? SE::GotChallenge : SE::GotUnexpected);
  }
  void proof(bool good) {
    if (!(has_key_ && state_ == SS::AwaitAccept && challenged_ && !proven_))
      return received(SE::GotProof);
    proven_ = good;
    received(SE::GotProof, good ? ReceiverProof::Good : ReceiverProof::Wrong);
  }
  void accept() {
    const bool unproven = has_key_ && state_ == SS::AwaitAccept && !proven_;
    received(SE::GotAccept, unproven ? ReceiverProof::Missing : ReceiverProof::NotDue);
  }

 private:
  void setup_step(SetupEvent e) {
    const SetupTransition t = setup_next(*setup_, e);
    for (SA a : t.actions) FUZZ_CHECK(named(to_string(a)));
    if (t.next) {
      FUZZ_CHECK(named(to_string(*t.next)) && !t.outcome && !t.illegal);
      FUZZ_CHECK(t.actions == ActionList<SA>{SA::ResolveRoute});
    } else if (t.then == SS::Connecting) {  // over: the connection machine takes it on
      FUZZ_CHECK(t.actions == ActionList<SA>{SA::Connect} && !t.outcome && !t.illegal);
    } else {  // failed: nothing to say goodbye on
      FUZZ_CHECK(t.then == SS::Done && t.actions == ActionList<SA>{SA::Finish});
      FUZZ_CHECK(t.outcome == SenderOutcome::ConnectFailed ||
                 t.outcome == SenderOutcome::Interrupted);
      FUZZ_CHECK(!t.illegal || t.outcome == SenderOutcome::ConnectFailed);
    }
    setup_ = t.next;
    if (!t.next) state_ = t.then;
    if (!outcome_) outcome_ = t.outcome;
  }

  void settled(bool all_good) {
    const SenderTransition t = session_settled(state_, all_good, {has_id_});
    if (state_ != SS::InSession) {  // only InSession's pump says so: elsewhere, nothing
      FUZZ_CHECK(t.next == state_ && !t.illegal && t.actions.empty() && !t.outcome);
      return;
    }
    FUZZ_CHECK(!t.illegal);
    // The id goes out only if the user gave one, and only once every entry is good.
    FUZZ_CHECK(t.actions.contains(SA::SendId) == (all_good && has_id_));
    FUZZ_CHECK(t.next == (all_good && has_id_ ? SS::AwaitSecret : SS::Closing));
    FUZZ_CHECK(t.outcome == (all_good
                                 ? (has_id_ ? std::nullopt : std::optional(SenderOutcome::Success))
                                 : std::optional(SenderOutcome::SomeFailed)));
    if (all_good) verified_ = true;
    if (!outcome_) outcome_ = t.outcome;
    state_ = t.next;
  }

  void step(SE e, ReceiverProof proof) {
    const SenderContext context{has_id_, proof};
    const SenderTransition t = sender_next(state_, e, context);
    FUZZ_CHECK(valid(t.next));
    for (SA a : t.actions) FUZZ_CHECK(named(to_string(a)));
    if (t.outcome) FUZZ_CHECK(named(to_string(*t.outcome)));

    if (state_ == SS::Done) {
      FUZZ_CHECK(t.next == SS::Done && t.actions.empty() && !t.outcome && !t.illegal);
    } else if (state_ == SS::Closing) {
      // The outcome was decided on the way in; teardown cannot change it.
      FUZZ_CHECK(!t.outcome && !t.illegal);
      FUZZ_CHECK(t.next == SS::Closing
                     ? t.actions.empty()
                     : t.next == SS::Done && t.actions == ActionList<SA>{SA::Finish});
    } else {
      check_open(t, e, context);
    }

    if (!outcome_) outcome_ = t.outcome;
    state_ = t.next;
    // The program can only exit with a status if a transition named one.
    if (state_ == SS::Closing || state_ == SS::Done) FUZZ_CHECK(outcome_.has_value());
  }

  void check_open(const SenderTransition& t, SE e, const SenderContext& context) const {
    if (t.illegal) {
      FUZZ_CHECK(!t.actions.empty() && t.outcome == SenderOutcome::ProtocolError);
      FUZZ_CHECK(connected(state_) ? t.actions.contains(SA::SendError) : t.next == SS::Done);
    }
    // Leaving an open state always says what to report.
    if (t.next == SS::Closing || t.next == SS::Done) FUZZ_CHECK(t.outcome.has_value());
    if (t.next != SS::Closing && t.next != SS::Done) FUZZ_CHECK(!t.outcome.has_value());
    FUZZ_CHECK(t.actions.contains(SA::Disconnect) == (t.next == SS::Closing));
    FUZZ_CHECK(t.actions.contains(SA::Finish) == (t.next == SS::Done));
    if (t.next == SS::Closing) FUZZ_CHECK(is_last(t.actions, SA::Disconnect));
    if (t.next == SS::Done) FUZZ_CHECK(is_last(t.actions, SA::Finish));
    // Before ESTABLISHED there is no queue pair: nothing to send and nothing to disconnect.
    if (!connected(state_)) {
      FUZZ_CHECK(t.next != SS::Closing && !t.actions.contains(SA::SendError));
    }
    if (e == SE::GotError) FUZZ_CHECK(!t.actions.contains(SA::SendError));
    if (e == SE::Disconnected || e == SE::TransportFailed) {
      FUZZ_CHECK(t.next == SS::Done && t.actions == ActionList<SA>{SA::Finish});
    }
    // The id goes out only once every entry is settled and good (settled(), above).
    FUZZ_CHECK(!t.actions.contains(SA::SendId));
    // Success means the receiver verified every entry, and sent the secret (with an id;
    // without one, success is the session's end, settled()).
    if (t.outcome == SenderOutcome::Success)
      FUZZ_CHECK(has_id_ && verified_ && state_ == SS::AwaitSecret && e == SE::GotSecret);
    // The session starts only from its Accept, and never before the receiver proved our key;
    // a proof goes only to a Challenge, before it.
    if (t.actions.contains(SA::StartSession))
      FUZZ_CHECK(state_ == SS::AwaitAccept && context.proof != ReceiverProof::Missing);
    if (t.actions.contains(SA::SendProof))
      FUZZ_CHECK(state_ == SS::AwaitAccept && e == SE::GotChallenge && t.next == SS::AwaitAccept);
    // The session's answers are taken only in the session: no entry or slot exists elsewhere.
    if (t.actions.contains(SA::TakeAnswer))
      FUZZ_CHECK(state_ == SS::InSession && e == SE::GotAnswer && t.next == SS::InSession);
    // An authentication failure ends the connection with its own status, before any data.
    if (t.outcome == SenderOutcome::AuthFailed)
      FUZZ_CHECK(state_ == SS::AwaitAccept &&
                 (e == SE::GotRejectAuth ||
                  (e == SE::GotAccept && context.proof == ReceiverProof::Missing) ||
                  (e == SE::GotProof && context.proof == ReceiverProof::Wrong)));
  }

  bool has_id_;
  bool has_key_;
  bool challenged_ = false;
  bool proven_ = false;
  std::optional<SetupState> setup_ = SetupState::ResolvingAddress;
  SS state_ = SS::Connecting;
  std::optional<SenderOutcome> outcome_;
  bool verified_ = false;  // every entry settled and good
};

void run_events(std::span<const std::uint8_t> input) {
  ReceiverRun receiver;
  std::array senders{SenderRun(false), SenderRun(true)};
  for (std::uint8_t byte : input) {
    receiver.local(byte);
    for (SenderRun& sender : senders) sender.local(byte);
  }
}

// --- A fetch before its session (7.13) ---

// The server's machine: each byte an event, its findings from the byte's other bits (a few out
// of range, as a driver bug would make them).
class ServeRun {
 public:
  void local(std::uint8_t byte) {
    constexpr unsigned kEvents = static_cast<unsigned>(ServeEvent::ShuttingDown) + 1;
    const auto event = static_cast<ServeEvent>(byte % kEvents);
    const unsigned rest = byte / kEvents;  // 0..19
    const ServeChecks checks{static_cast<RequestCheck>(rest % 4),
                             static_cast<WantCheck>((rest / 4) % 4),
                             static_cast<WalkCheck>((rest / 2) % 4)};
    const ServeState before = state_;
    const ServeTransition t = serve_next(state_, event, checks);
    FUZZ_CHECK(static_cast<unsigned>(t.next) <= static_cast<unsigned>(ServeState::Closed));
    if (before == ServeState::Closed) FUZZ_CHECK(t.next == ServeState::Closed && t.actions.empty());
    for (ServeAction a : t.actions) {
      switch (a) {
        case ServeAction::SendChallenge:
          FUZZ_CHECK(before == ServeState::AwaitFetch &&
                     checks.request == RequestCheck::NeedsProof);
          challenged_ = true;
          break;
        case ServeAction::SendProof:
          // Ours only for a good proof of theirs, after our Challenge.
          FUZZ_CHECK(challenged_ && before == ServeState::Authenticating &&
                     checks.request == RequestCheck::Accepted);
          admitted_ = true;
          break;
        case ServeAction::Walk:
          FUZZ_CHECK(admitted_ && before == ServeState::AwaitWants &&
                     checks.want == WantCheck::Last);
          walked_ = true;
          break;
        case ServeAction::Serve:
          FUZZ_CHECK(walked_ && before == ServeState::Walking && checks.walk == WalkCheck::Share);
          FUZZ_CHECK(!served_);
          served_ = true;
          break;
        case ServeAction::Release:
          FUZZ_CHECK(!released_ && is_last(t.actions, ServeAction::Release));
          released_ = true;
          break;
        default:
          break;
      }
    }
    if (before == ServeState::AwaitFetch && t.next == ServeState::AwaitWants) admitted_ = true;
    if (t.next == ServeState::Closed) FUZZ_CHECK(released_);
    state_ = t.next;
  }

 private:
  ServeState state_ = ServeState::AwaitFetch;
  bool challenged_ = false, admitted_ = false, walked_ = false, served_ = false;
  bool released_ = false;
};

// The fetcher's machine after its set-up, with a key or without.
class FetchRun {
 public:
  explicit FetchRun(bool keyed) : keyed_(keyed) {}
  void local(std::uint8_t byte) {
    constexpr unsigned kEvents = static_cast<unsigned>(FetchEvent::Interrupted) + 1;
    const auto event = static_cast<FetchEvent>(byte % kEvents);
    const auto proof = static_cast<ProofCheck>((byte / kEvents) % 4);
    const FetchState before = state_;
    const FetchTransition t = fetch_next(state_, event, {keyed_, proof});
    FUZZ_CHECK(static_cast<unsigned>(t.next) <= static_cast<unsigned>(FetchState::Done));
    if (before == FetchState::Done) FUZZ_CHECK(t.next == FetchState::Done && t.actions.empty());
    for (FetchAction a : t.actions) {
      switch (a) {
        case FetchAction::SendFetch:
          FUZZ_CHECK(!fetch_sent_ && before == FetchState::Connecting);
          fetch_sent_ = true;
          break;
        case FetchAction::SendProof:
          FUZZ_CHECK(keyed_ && fetch_sent_ && before == FetchState::Proving);
          proved_ = true;
          break;
        case FetchAction::SendWants:
          // A keyed fetcher names nothing before the server proved our key (7.13).
          FUZZ_CHECK(fetch_sent_ && !wants_sent_);
          if (keyed_) FUZZ_CHECK(proved_ && proof == ProofCheck::Good);
          wants_sent_ = true;
          break;
        case FetchAction::Receive:
          FUZZ_CHECK(wants_sent_ && before == FetchState::AwaitAnswer && !received_);
          received_ = true;
          break;
        case FetchAction::Finish:
          FUZZ_CHECK(!finished_ && is_last(t.actions, FetchAction::Finish));
          finished_ = true;
          break;
        default:
          break;
      }
    }
    // The outcome is decided once; a session handed over decides its own.
    if (t.outcome) {
      if (!outcome_) outcome_ = t.outcome;
      if (*t.outcome == SenderOutcome::Success) FUZZ_CHECK(wants_sent_);
    }
    if (t.next == FetchState::Done) FUZZ_CHECK(finished_);
    state_ = t.next;
  }

 private:
  bool keyed_;
  FetchState state_ = FetchState::Connecting;
  std::optional<SenderOutcome> outcome_;
  bool fetch_sent_ = false, proved_ = false, wants_sent_ = false, received_ = false;
  bool finished_ = false;
};

void run_fetch_events(std::span<const std::uint8_t> input) {
  ServeRun server;
  std::array fetchers{FetchRun(false), FetchRun(true)};
  for (std::uint8_t byte : input) {
    server.local(byte);
    for (FetchRun& fetcher : fetchers) fetcher.local(byte);
  }
}

// How the receiver program turns what arrived into an event (docs/PROTOCOL.md 2 "Versions",
// 7.5; a Hello through its edge, receiver/hello_edge.hpp): sender-to-receiver messages by
// type, anything else is unexpected, undecodable bytes are a protocol violation, except
// another version first, which is rejected like an Open whose check failed.
void deliver_to_receiver(ReceiverRun& receiver, std::span<const std::uint8_t> bytes) {
  const auto result = decode(bytes);
  const bool first = receiver.state() == RS::AwaitOpen;
  if (std::holds_alternative<DecodeFailure>(result)) {
    const auto version = peek_version(bytes);
    if (version && *version != kVersion1 && first) {
      receiver.step(RE::GotOpen, {OpenCheck::Rejected});
    } else {
      receiver.step(RE::ProtocolViolation);
    }
    return;
  }
  const MessageType type = type_of(std::get<Message>(result));
  if (first && type == MessageType::Hello) {
    receiver.hello_flow = true;
    receiver.step(RE::GotOpen, {OpenCheck::Accepted});  // checked as it arrives
    return receiver.step(RE::GotOffer);
  }
  if (receiver.hello_flow && type >= MessageType::Open) return receiver.step(RE::ProtocolViolation);
  switch (type) {
    case MessageType::Chunk:
      return receiver.step(receiver.hello_flow ? RE::GotChunk : RE::GotUnexpected);
    case MessageType::Done:
      return receiver.step(receiver.hello_flow ? RE::GotFileDone : RE::GotUnexpected);
    case MessageType::Id:  // looked up as it arrives, where an Id may come
      if (receiver.state() != RS::InSession && receiver.state() != RS::AwaitId)
        return receiver.step(RE::GotId);
      return receiver.step(RE::GotId, {.id = IdLookup::Unknown, .entries = SessionEnd::Settled});
    case MessageType::Bye:
      return receiver.step(RE::GotBye, {.entries = SessionEnd::Settled});
    case MessageType::Error:
      return receiver.step(RE::GotError);
    case MessageType::Fetch:  // where an Open may come: refused, this side takes pushes (7.13)
      return receiver.step(first ? RE::ProtocolViolation : RE::GotUnexpected);
    case MessageType::Open:  // checked as it arrives, where an Open may come; a claimed
                             // key is challenged (as with --senders)
      if (!first) return receiver.step(RE::GotOpen);
      return receiver.step(RE::GotOpen, {sender_key_claim(std::get<Open>(std::get<Message>(result)))
                                             ? OpenCheck::NeedsProof
                                             : OpenCheck::Accepted});
    case MessageType::Proof: {  // checked as it arrives, where it may come: good or not
      if (receiver.state() != RS::Authenticating) return receiver.step(RE::GotProof);
      const bool good = (std::get<Proof>(std::get<Message>(result)).mac[0] & 1) != 0;
      return receiver.step(RE::GotProof, {good ? OpenCheck::Accepted : OpenCheck::Rejected});
    }
    case MessageType::Continue:
      return receiver.step(RE::GotContinue);
    case MessageType::FileAbort:
      return receiver.step(RE::GotFileAbort);
    case MessageType::Join:
      return receiver.step(RE::GotJoin);
    case MessageType::Offer:
      return receiver.step(RE::GotOffer);
    case MessageType::FileChunk:
      return receiver.step(RE::GotChunk);
    case MessageType::FileDone:
      return receiver.step(RE::GotFileDone);
    default:
      return receiver.step(RE::GotUnexpected);
  }
}

// The sender program's mapping (sender/connection.cpp): a session's answers by type;
// a Verdict (version 1's, which the version-1 edge turns into a FileVerdict before the
// driver sees it) and anything else is unexpected.
void deliver_to_sender(SenderRun& sender, std::span<const std::uint8_t> bytes) {
  const auto result = decode(bytes);
  if (std::holds_alternative<DecodeFailure>(result)) return sender.received(SE::ProtocolViolation);
  const Message& m = std::get<Message>(result);
  switch (type_of(m)) {
    case MessageType::Accept:
      return sender.accept();
    case MessageType::Reject: {
      const RejectReason reason = std::get<Reject>(m).reason;
      return sender.received(reason == RejectReason::AuthRequired ||
                                     reason == RejectReason::AuthFailed
                                 ? SE::GotRejectAuth
                                 : SE::GotReject);
    }
    case MessageType::Challenge:
      return sender.challenge();
    case MessageType::Proof:  // the receiver's: whether it checks good is the mac's low bit
      return sender.proof((std::get<Proof>(m).mac[0] & 1) != 0);
    case MessageType::Secret:
      return sender.received(SE::GotSecret);
    case MessageType::Denied:
      return sender.received(SE::GotDenied);
    case MessageType::Error:
      return sender.received(SE::GotError);
    case MessageType::Working:
      return sender.received(SE::GotWorking);
    case MessageType::Credit:
    case MessageType::Take:
    case MessageType::Refuse:
    case MessageType::FileVerdict:
    case MessageType::Resume:
    case MessageType::Have:
    case MessageType::Holds:
      return sender.received(SE::GotAnswer);
    default:
      return sender.received(SE::GotUnexpected);
  }
}

// Records: a tag byte below 0x80 is one local input (the drivers' own results, CM events,
// timers: machine_local_inputs.hpp); a tag from 0x80 up is followed by a little-endian u16
// length and that many bytes, one received SEND. A record cut short by the end of the input
// takes what is left, so every input means something.
void run_messages(std::span<const std::uint8_t> input) {
  ReceiverRun receiver;
  std::array senders{SenderRun(false), SenderRun(true)};
  while (!input.empty()) {
    const std::uint8_t tag = input[0];
    input = input.subspan(1);
    if (tag < 0x80) {
      receiver.local(tag);
      for (SenderRun& sender : senders) sender.local(tag);
      continue;
    }
    std::size_t length = 0;
    for (std::size_t i = 0; i < 2 && i < input.size(); ++i)
      length |= std::size_t{input[i]} << (8 * i);
    input = input.subspan(std::min<std::size_t>(2, input.size()));
    const auto message = input.first(std::min(length, input.size()));
    input = input.subspan(message.size());
    deliver_to_receiver(receiver, message);
    for (SenderRun& sender : senders) deliver_to_sender(sender, message);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  run_events(input);
  run_messages(input);
  run_fetch_events(input);
  return 0;
}
