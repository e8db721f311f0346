// The per-entry machine both ledgers build on (protocol/entry_machine.hpp): every
// (kind, state, event) triple, each with the outcome written out here, and one file's and
// one directory's whole life through both ledgers, which must agree with it at every step.

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "protocol/entry_machine.hpp"
#include "protocol/receive_ledger.hpp"
#include "protocol/send_ledger.hpp"

namespace {

using namespace rdmax::proto;
using E = EntryEvent;
using F = EntryFault;
using S = EntryState;

// One cell: the next state, or the fault (state unchanged).
struct Cell {
  bool ok;
  S next;
  F fault;
};
constexpr Cell to(S s) {
  return {true, s, F::Settled};
}
constexpr Cell no(F f) {
  return {false, S::Waiting, f};
}

// In the enums' order, which the table's rows and columns follow.
constexpr auto kEvents = enum_values<E>();
constexpr auto kStates = enum_values<S>();
using Row = std::array<Cell, kEvents.size()>;
using Table = std::array<Row, kStates.size()>;

// clang-format off
// Columns: Offer, Holds, Continue, Take, Have, Chunk, FileDone, Abort, Good, Bad, Stored.
constexpr Table kFile{{
    /* Waiting    */ Row{to(S::Offered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered)},
    /* Offered    */ Row{no(F::AlreadyOffered), to(S::Held), no(F::NotHeld), to(S::Taken), to(S::Settled), no(F::NotTaken), no(F::NotTaken), no(F::NotTaken), no(F::TooEarly), to(S::Settled), no(F::TooEarly)},
    /* Held       */ Row{no(F::AlreadyOffered), no(F::Held), to(S::Continued), no(F::Held), no(F::Held), no(F::NotTaken), no(F::NotTaken), to(S::Abandoning), no(F::Held), no(F::Held), no(F::Held)},
    /* Continued  */ Row{no(F::AlreadyOffered), no(F::AlreadyTaken), no(F::NotHeld), to(S::Taken), to(S::Settled), no(F::NotTaken), no(F::NotTaken), no(F::NotTaken), no(F::TooEarly), to(S::Settled), no(F::TooEarly)},
    /* Taken      */ Row{no(F::AlreadyOffered), no(F::AlreadyTaken), no(F::NotHeld), no(F::AlreadyTaken), no(F::AlreadyTaken), to(S::Taken), to(S::Finished), to(S::Abandoning), no(F::TooEarly), to(S::Settled), no(F::TooEarly)},
    /* Finished   */ Row{no(F::AlreadyOffered), no(F::AlreadyTaken), no(F::NotHeld), no(F::AlreadyTaken), no(F::AlreadyTaken), no(F::NotTaken), no(F::NotTaken), no(F::NotTaken), to(S::Settled), to(S::Settled), to(S::Verifying)},
    /* Abandoning */ Row{no(F::AlreadyOffered), no(F::AlreadyTaken), no(F::NotHeld), no(F::AlreadyTaken), no(F::AlreadyTaken), no(F::NotTaken), no(F::NotTaken), no(F::NotTaken), no(F::Abandoned), to(S::Settled), to(S::Discarding)},
    /* Verifying  */ Row{no(F::AlreadyOffered), no(F::AlreadyTaken), no(F::NotHeld), no(F::AlreadyTaken), no(F::AlreadyTaken), no(F::NotTaken), no(F::NotTaken), no(F::NotTaken), to(S::Settled), to(S::Settled), no(F::AlreadyStored)},
    /* Discarding */ Row{no(F::AlreadyOffered), no(F::AlreadyTaken), no(F::NotHeld), no(F::AlreadyTaken), no(F::AlreadyTaken), no(F::NotTaken), no(F::NotTaken), no(F::NotTaken), no(F::Abandoned), to(S::Settled), no(F::AlreadyStored)},
    /* Settled    */ Row{no(F::AlreadyOffered), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled)},
}};
// A directory is made when it is offered: nothing of it moves, and it is settled good or bad.
// Held, Continued, Taken, Finished, Abandoning, Verifying and Discarding cannot be reached by a
// directory; the machine still answers there.
constexpr Table kDirectory{{
    /* Waiting    */ Row{to(S::Offered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered), no(F::NotOffered)},
    /* Offered    */ Row{no(F::AlreadyOffered), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), to(S::Settled), to(S::Settled), no(F::NotAFile)},
    /* Held       */ Row{no(F::AlreadyOffered), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), to(S::Settled), to(S::Settled), no(F::NotAFile)},
    /* Continued  */ Row{no(F::AlreadyOffered), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), to(S::Settled), to(S::Settled), no(F::NotAFile)},
    /* Taken      */ Row{no(F::AlreadyOffered), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), to(S::Settled), to(S::Settled), no(F::NotAFile)},
    /* Finished   */ Row{no(F::AlreadyOffered), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), to(S::Settled), to(S::Settled), no(F::NotAFile)},
    /* Abandoning */ Row{no(F::AlreadyOffered), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), to(S::Settled), to(S::Settled), no(F::NotAFile)},
    /* Verifying  */ Row{no(F::AlreadyOffered), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), to(S::Settled), to(S::Settled), no(F::NotAFile)},
    /* Discarding */ Row{no(F::AlreadyOffered), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), no(F::NotAFile), to(S::Settled), to(S::Settled), no(F::NotAFile)},
    /* Settled    */ Row{no(F::AlreadyOffered), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled), no(F::Settled)},
}};
// clang-format on

void check_table(EntryKind kind, const Table& table) {
  std::size_t pairs = 0;
  for (std::size_t si = 0; si < kStates.size(); ++si) {
    for (std::size_t ei = 0; ei < kEvents.size(); ++ei) {
      const Cell& want = table[si][ei];
      S state = kStates[si];
      const auto fault = advance(kind, state, kEvents[ei]);
      const std::string where =
          std::string(to_string(kStates[si])) + " --" + to_string(kEvents[ei]) + "-->";
      if (want.ok) {
        EXPECT_EQ(fault, std::nullopt) << where << " refused: " << to_string(*fault);
        EXPECT_EQ(state, want.next) << where << " " << to_string(state);
      } else {
        ASSERT_TRUE(fault.has_value()) << where << " allowed, to " << to_string(state);
        EXPECT_EQ(*fault, want.fault) << where << " " << to_string(*fault);
        EXPECT_EQ(state, kStates[si]) << where << " moved although refused";
      }
      ++pairs;
    }
  }
  EXPECT_EQ(pairs, kStates.size() * kEvents.size());
}

TEST(EntryMachine, EveryPairOfAFile) {
  check_table(EntryKind::File, kFile);
}
TEST(EntryMachine, EveryPairOfADirectory) {
  check_table(EntryKind::Directory, kDirectory);
}

// Both sides walk one file through the session: after each message the sender's and the
// receiver's ledgers hold the state the machine gives for it.
TEST(EntryMachine, BothLedgersFollowIt) {
  constexpr std::uint32_t kSlot = 4096;
  const Open open{DigestAlgorithm::FsVeritySha256, 0, 0, 1, 2 * kSlot};
  ReceiveLedger receiver(open, kSlot, 2);
  SendLedger sender({{EntryKind::File, 2 * kSlot}}, Accept{0x1000, 0, kSlot, 2}, 2);
  S model = S::Waiting;
  auto both_at = [&](const char* step) {
    EXPECT_EQ(sender.state(0), model) << step;
    if (model == S::Settled) {
      EXPECT_EQ(receiver.entry(0), nullptr) << step << ": the receiver forgets a settled entry";
    } else {
      ASSERT_NE(receiver.entry(0), nullptr) << step;
      EXPECT_EQ(receiver.entry(0)->state, model) << step;
    }
  };
  EXPECT_EQ(sender.state(0), S::Waiting);

  ASSERT_EQ(advance(EntryKind::File, model, E::Offer), std::nullopt);
  ASSERT_EQ(sender.next_offer(), 0U);
  Offer offer;
  offer.size = 2 * kSlot;
  offer.path = "f";
  ASSERT_EQ(receiver.offer(offer), std::nullopt);
  both_at("Offer");

  ASSERT_EQ(advance(EntryKind::File, model, E::Take), std::nullopt);
  receiver.take(0);
  ASSERT_EQ(sender.taken(0), std::nullopt);
  both_at("Take");

  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    ASSERT_TRUE(receiver.grant(slot));
    ASSERT_EQ(sender.credit({slot, 7}), std::nullopt);
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(advance(EntryKind::File, model, E::Chunk), std::nullopt);
    const auto planned = sender.next_chunk();
    ASSERT_TRUE(planned.has_value());
    ASSERT_EQ(receiver.accept_chunk({0, planned->slot, planned->offset, planned->length}),
              std::nullopt);
    EXPECT_EQ(sender.completed(planned->slot), kSlot);
    (void)receiver.stored(planned->slot, 0);
    both_at("Chunk");
  }

  ASSERT_EQ(advance(EntryKind::File, model, E::FileDone), std::nullopt);
  ASSERT_EQ(sender.next_file_done(), 0U);
  ASSERT_EQ(receiver.file_done({0, 2 * kSlot}), std::nullopt);
  both_at("FileDone");
  EXPECT_TRUE(receiver.start_verifying(0));
  EXPECT_EQ(receiver.entry(0)->state, S::Verifying) << "the receiver's own step, Stored";
  EXPECT_FALSE(receiver.start_verifying(0)) << "verifying starts once";

  ASSERT_EQ(advance(EntryKind::File, model, E::Good), std::nullopt);
  receiver.settle(0, E::Good);
  ASSERT_EQ(sender.settled(0, true), std::nullopt);
  both_at("Good");
  EXPECT_TRUE(sender.all_settled());
  EXPECT_TRUE(receiver.all_settled());
}

}  // namespace

namespace {
// A step a side takes of its own accord still goes by the table: a legal one moves the
// entry, an illegal one is our bug and throws, never a silent no-op.
TEST(EntryMachine, OwnStepsGoByTheTableAndThrowWhenItRefuses) {
  using namespace rdmax::proto;
  EntryState state = EntryState::Waiting;
  advance_own(EntryKind::File, state, EntryEvent::Offer);
  EXPECT_EQ(state, EntryState::Offered);
  EXPECT_THROW(advance_own(EntryKind::File, state, EntryEvent::FileDone), std::logic_error);
  EXPECT_EQ(state, EntryState::Offered) << "a refused step leaves the entry where it was";
}
}  // namespace
