// The receiver's side of the digest at the end (docs/PROTOCOL.md 7.9), driven message by
// message through the fake transport: a file offered without its digest and verified
// against the one its FileDone brings; what is here of it told first (Holds) and the
// sender's Continue acted on (Have, a Resume of a kept partial, a new file, Exists); a
// FileAbort, after a Take or instead of a Continue; and the rules a sender can break.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "receiver/incoming_entries.hpp"
#include "receiver_driver_rig.hpp"

namespace rdmax::test::receiver_rig {
namespace digest_at_end_test {

using V = proto::VerdictCode;
using R = proto::RejectReason;

// A session whose Open asks for the digest at the end (and Resume/Have: `resume`), fs-verity.
void flagged_session(Rig& r, bool resume = true) {
  r.resume = resume;
  r.digest_at_end = true;
  r.algorithm = proto::DigestAlgorithm::FsVeritySha256;
  r.in_session();
}

// Sends every chunk of entry i (two slots, credited in turn) and its FileDone.
void send_all(Rig& r, std::uint32_t i, std::uint64_t from = 0) {
  const auto& bytes = r.entries.at(i).bytes;
  std::uint32_t slot = 0;
  for (std::uint64_t at = from; at < bytes.size(); at += kSlot) {
    const auto length =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(kSlot, bytes.size() - at));
    ASSERT_TRUE(r.file_chunk(i, at, length, slot));
    ASSERT_TRUE(r.settle_idle());
    slot ^= 1;
  }
  r.file_done(i);
}

TEST(ReceiverDigestAtEnd, AFileOfferedWithoutItsDigestIsVerifiedByTheOneThatEndsIt) {
  Rig r;
  ASSERT_NO_FATAL_FAILURE(flagged_session(r, false));
  r.peer(r.flagged(0));
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  send_all(r, 0);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict));
  EXPECT_EQ(r.verdict_of(0).value().code, V::Good);
  EXPECT_EQ(r.verdict_of(0).value().received_digest, r.digest_of_entry(0));
  r.expect_entry_final(0);
}

TEST(ReceiverDigestAtEnd, AWrongDigestAtTheEndIsAHashMismatchAndNothingIsKept) {
  Rig r;
  ASSERT_NO_FATAL_FAILURE(flagged_session(r));
  r.digest = proto::Digest{};  // what the FileDone will say
  r.peer(r.flagged(0));
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  send_all(r, 0);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict));
  EXPECT_EQ(r.verdict_of(0).value().code, V::HashMismatch);
  ASSERT_TRUE(r.settle_idle());
  EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
  EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
}

TEST(ReceiverDigestAtEnd, TheFileDoneMustCarryTheDigestExactlyForAFlaggedFile) {
  for (const bool flagged : {true, false}) {
    SCOPED_TRACE(flagged);
    Rig r;
    ASSERT_NO_FATAL_FAILURE(flagged_session(r, false));
    r.peer(flagged ? r.flagged(0) : r.offer(0));
    ASSERT_TRUE(r.settle_until_sent(T::Take));
    ASSERT_TRUE(r.file_chunk(0, 0, kSlot, 0));
    ASSERT_TRUE(r.file_chunk(0, kSlot, kSlot, 1));
    ASSERT_TRUE(r.settle_idle());
    const std::size_t sent = r.h.transport.sent.size();
    proto::FileDone done{0, r.entries[0].bytes.size()};
    if (!flagged) done.digest = r.digest_of_entry(0);  // the wrong way round
    r.peer(done);
    r.check({S::Closing, {error(ErrorCode::ProtocolViolation)}, File::None, End::Disconnects},
            sent);
  }
}

TEST(ReceiverDigestAtEnd, AFileOfTheSameSizeHereIsToldAndContinueDecides) {
  for (const bool same : {true, false}) {
    SCOPED_TRACE(same);
    Rig r;
    const auto here = same ? r.entries[0].bytes : random_bytes(r.entries[0].bytes.size(), 99);
    write_bytes(r.h.dir.path() / "a.bin", here);
    ASSERT_NO_FATAL_FAILURE(flagged_session(r));
    r.peer(r.flagged(0));
    ASSERT_TRUE(r.settle_until_sent(T::Holds));
    const proto::Holds holds = r.h.transport.sent_of<proto::Holds>().at(0);
    EXPECT_EQ(holds, (proto::Holds{0, here.size(), std::nullopt})) << "how much, never a digest";
    // The sender says what its own first bytes are; the receiver compares.
    r.peer(proto::Continue{0, holds.length, r.digest_of_entry(0)});
    if (same) {
      ASSERT_TRUE(r.settle_until_sent(T::Have));
    } else {
      ASSERT_TRUE(r.settle_until_sent(T::Refuse));  // it may not replace the file here
      EXPECT_EQ(r.h.transport.sent_of<proto::Refuse>().at(0).reason, R::Exists);
    }
    const std::string kept = read_file(r.h.dir.path() / "a.bin");
    EXPECT_EQ(kept, std::string(here.begin(), here.end())) << "the file here is untouched";
    EXPECT_EQ(r.h.state(), S::InSession);
  }
}

TEST(ReceiverDigestAtEnd, AKeptPartialIsToldByItsPrefixDigestAndResumed) {
  Rig r;
  r.entries[0].bytes = random_bytes(4 * kSlot, 5);
  // An earlier transfer (with or without its digest) kept three chunks of it.
  ASSERT_NO_FATAL_FAILURE(keep_partial(r, "a.bin", r.entries[0].bytes, 3 * kSlot, proto::Digest{}));
  ASSERT_NO_FATAL_FAILURE(flagged_session(r));
  r.peer(r.flagged(0));
  ASSERT_TRUE(r.settle_until_sent(T::Holds));
  const proto::Holds holds = r.h.transport.sent_of<proto::Holds>().at(0);
  EXPECT_EQ(holds.length, 3u * kSlot);
  EXPECT_EQ(holds.digest, std::nullopt);
  const std::vector<std::uint8_t> prefix(r.entries[0].bytes.begin(),
                                         r.entries[0].bytes.begin() + 3 * kSlot);
  // The sender's digest of the prefix as a file: it matches what is kept.
  r.peer(proto::Continue{0, holds.length, merkle::digest_of(prefix)});
  ASSERT_TRUE(r.settle_until_sent(T::Resume));
  EXPECT_EQ(r.h.transport.sent_of<proto::Resume>().at(0), (proto::Resume{0, 3u * kSlot}));
  send_all(r, 0, 3 * kSlot);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict));
  EXPECT_EQ(r.verdict_of(0).value().code, V::Good);
  r.expect_entry_final(0);
}

TEST(ReceiverDigestAtEnd, AContinueFromZeroStartsAFreshFileAndDropsThePartial) {
  Rig r;
  r.entries[0].bytes = random_bytes(4 * kSlot, 6);
  ASSERT_NO_FATAL_FAILURE(
      keep_partial(r, "a.bin", random_bytes(4 * kSlot, 7), 2 * kSlot, proto::Digest{}));
  ASSERT_NO_FATAL_FAILURE(flagged_session(r));
  r.peer(r.flagged(0));
  ASSERT_TRUE(r.settle_until_sent(T::Holds));
  r.peer(proto::Continue{0, 0});  // another file's prefix: sent whole
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  EXPECT_TRUE(r.h.transport.sent_of<proto::Resume>().empty());
  send_all(r, 0);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict));
  EXPECT_EQ(r.verdict_of(0).value().code, V::Good);
  r.expect_entry_final(0);
}

// Looking for what is held makes and removes nothing: a file of another size here is refused
// without leaving anything in the partial area, and a partial of another size stays.
TEST(ReceiverDigestAtEnd, LookingForWhatIsHeldLeavesThePartialAreaAsItWas) {
  Rig r;
  const auto here = random_bytes(r.entries[0].bytes.size() + 1, 13);
  write_bytes(r.h.dir.path() / "a.bin", here);
  r.entries[1].bytes = random_bytes(4 * kSlot, 14);
  ASSERT_NO_FATAL_FAILURE(
      keep_partial(r, "b.bin", random_bytes(4 * kSlot + 1, 15), 2 * kSlot, proto::Digest{}));
  const auto area = r.h.dir.path() / ".rdmax-partial";
  auto sizes = [&] {
    std::map<std::string, std::uintmax_t> out;
    for (const auto& e : std::filesystem::directory_iterator(area))
      out[e.path().filename().string()] = std::filesystem::file_size(e.path());
    return out;
  };
  const auto before = sizes();
  ASSERT_NO_FATAL_FAILURE(flagged_session(r));
  r.peer(r.flagged(0));
  ASSERT_TRUE(r.settle_until_sent(T::Refuse));
  EXPECT_EQ(r.h.transport.sent_of<proto::Refuse>().at(0).reason, R::Exists);
  EXPECT_EQ(sizes(), before) << "a refused file left something in the partial area";
  r.peer(r.flagged(1));  // a partial of b.bin is kept, but for a file of another size
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  EXPECT_TRUE(r.h.transport.sent_of<proto::Holds>().empty());
  EXPECT_EQ(read_file(r.h.dir.path() / "a.bin"), std::string(here.begin(), here.end()));
}

TEST(ReceiverDigestAtEnd, AContinueFromAnywhereElseIsAViolation) {
  Rig r;
  write_bytes(r.h.dir.path() / "a.bin", r.entries[0].bytes);
  ASSERT_NO_FATAL_FAILURE(flagged_session(r));
  r.peer(r.flagged(0));
  ASSERT_TRUE(r.settle_until_sent(T::Holds));
  const std::size_t sent = r.h.transport.sent.size();
  r.peer(proto::Continue{0, kSlot, r.digest_of_entry(0)});
  r.check({S::Closing, {error(ErrorCode::ProtocolViolation)}, File::Any, End::Disconnects}, sent);
}

// What is held is never told to a sender that does not prove what it has: one of a revision
// before kExtensionProveHeld gets a Take and sends the file whole; and a Continue must carry
// the sender's digest exactly when it continues from what is held.
TEST(ReceiverDigestAtEnd, NothingHeldIsToldToASenderThatDoesNotProveItsOwn) {
  Rig r;
  write_bytes(r.h.dir.path() / "a.bin", r.entries[0].bytes);
  r.prove_held = false;
  ASSERT_NO_FATAL_FAILURE(flagged_session(r));
  r.peer(r.flagged(0));
  // Not told it is here, the sender cannot be answered Have: the file in the way is kept.
  ASSERT_TRUE(r.settle_until_sent(T::Refuse));
  EXPECT_EQ(r.h.transport.sent_of<proto::Refuse>().at(0).reason, R::Exists);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Holds>().empty());
}

TEST(ReceiverDigestAtEnd, AContinueWithoutTheSendersDigestOrWithOneFromZeroIsAViolation) {
  for (const bool from_zero : {false, true}) {
    SCOPED_TRACE(from_zero);
    Rig r;
    write_bytes(r.h.dir.path() / "a.bin", r.entries[0].bytes);
    ASSERT_NO_FATAL_FAILURE(flagged_session(r));
    r.peer(r.flagged(0));
    ASSERT_TRUE(r.settle_until_sent(T::Holds));
    const std::size_t sent = r.h.transport.sent.size();
    if (from_zero)
      r.peer(proto::Continue{0, 0, r.digest_of_entry(0)});
    else
      r.peer(proto::Continue{0, r.entries[0].bytes.size()});
    r.check({S::Closing, {error(ErrorCode::ProtocolViolation)}, File::Any, End::Disconnects}, sent);
  }
}

// Each wrong digest in a Continue is one guess at a file held here: after kMaxHeldGuesses the
// session is told nothing more, and its files are taken whole.
TEST(ReceiverDigestAtEnd, AfterSoManyWrongGuessesNothingMoreIsHeldOut) {
  Rig r;
  r.entries.resize(proto::kMaxHeldGuesses + 1, r.entries[0]);
  for (std::size_t i = 0; i < r.entries.size(); ++i) {
    r.entries[i].path = "g" + std::to_string(i);
    write_bytes(r.h.dir.path() / r.entries[i].path,
                random_bytes(r.entries[i].bytes.size(), static_cast<unsigned>(40 + i)));
  }
  ASSERT_NO_FATAL_FAILURE(flagged_session(r));
  for (std::uint32_t i = 0; i < proto::kMaxHeldGuesses; ++i) {
    r.peer(r.flagged(i));
    ASSERT_TRUE(r.settle_until_sent(T::Holds));
    r.peer(proto::Continue{i, r.entries[i].bytes.size(), r.digest_of_entry(i)});
    // A wrong guess: a new file, which may not replace the one here.
    ASSERT_TRUE(r.settle_until_sent(T::Refuse));
    r.h.transport.sent.clear();
  }
  r.peer(r.flagged(proto::kMaxHeldGuesses));
  ASSERT_TRUE(r.settle_until_sent(T::Refuse));
  EXPECT_TRUE(r.h.transport.sent_of<proto::Holds>().empty()) << "a fifth guess was allowed";
}

TEST(ReceiverDigestAtEnd, AFileAbortInsteadOfAContinueLeavesWhatIsHereAlone) {
  Rig r;
  const auto here = random_bytes(r.entries[0].bytes.size(), 12);
  write_bytes(r.h.dir.path() / "a.bin", here);
  ASSERT_NO_FATAL_FAILURE(flagged_session(r));
  r.peer(r.flagged(0));
  ASSERT_TRUE(r.settle_until_sent(T::Holds));
  r.peer(proto::FileAbort{0, proto::AbortReason::Unreadable});
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict));
  EXPECT_EQ(r.verdict_of(0).value().code, V::Abandoned);
  EXPECT_EQ(r.verdict_of(0).value().received_digest, proto::Digest{});
  EXPECT_EQ(read_file(r.h.dir.path() / "a.bin"), std::string(here.begin(), here.end()));
  // The session goes on: the next entry is taken.
  r.peer(r.flagged(1));
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  EXPECT_EQ(r.h.state(), S::InSession);
}

TEST(ReceiverDigestAtEnd, OnlyAFlaggedFileMayBeAbandoned) {
  Rig r;
  ASSERT_NO_FATAL_FAILURE(flagged_session(r, false));
  r.peer(r.offer(0));  // with its digest
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  const std::size_t sent = r.h.transport.sent.size();
  r.peer(proto::FileAbort{0, proto::AbortReason::Changed});
  r.check({S::Closing, {error(ErrorCode::ProtocolViolation)}, File::None, End::Disconnects}, sent);
}

// While the sender hashes what is held (7.9) the receiver waits longer than its --timeout
// (the rig's: 5 s), by a second per 4 MiB held, and at least 10 minutes for a sender it probes
// with keepalives (one that died is found by them); then it gives up on a sender that said
// nothing. Without keepalives a flat ten minutes kept a dead sender's window that long.
TEST(ReceiverDigestAtEnd, ASenderSilentAfterHoldsIsGivenTheTimeToHashThenTimedOut) {
  using std::chrono::milliseconds;
  using std::chrono::minutes;
  struct Case {
    std::uint32_t held;
    std::uint32_t keepalive_ms;
    Clock::duration still_waiting, timed_out;
  };
  // Unprobed: 5 s + 1 s (rounded up from 12 KiB), and 5 s + 2 s for 5 MiB. Probed: 10 minutes.
  for (const Case c : {Case{3 * kSlot, 0, milliseconds(5500), milliseconds(6500)},
                       Case{5u << 20, 0, milliseconds(6500), milliseconds(7500)},
                       Case{3 * kSlot, 100, minutes(9), minutes(10) + milliseconds(500)}}) {
    SCOPED_TRACE(::testing::Message() << c.held << " bytes held, keepalives " << c.keepalive_ms);
    Rig r;
    r.keepalive_ms = c.keepalive_ms;
    r.entries[0].bytes = random_bytes(c.held + kSlot, 21);
    ASSERT_NO_FATAL_FAILURE(keep_partial(r, "a.bin", r.entries[0].bytes, c.held, proto::Digest{}));
    ASSERT_NO_FATAL_FAILURE(flagged_session(r));
    r.peer(r.flagged(0));
    ASSERT_TRUE(r.settle_until_sent(T::Holds));
    ASSERT_EQ(r.h.transport.sent_of<proto::Holds>().at(0).length, c.held);
    r.h.connection->tick(Clock::now() + c.still_waiting);
    EXPECT_EQ(r.h.state(), S::InSession) << "timed out before the sender could hash";
    EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
    // A probed sender is sent a keepalive meanwhile; an unprobed one nothing.
    EXPECT_EQ(r.sent_count<proto::Working>(), c.keepalive_ms > 0 ? 1u : 0u);
    const std::size_t sent = r.h.transport.sent.size();
    r.h.connection->tick(Clock::now() + c.timed_out);
    // The partial stays for the sender's next attempt; nothing under the final name.
    r.check({S::Closing, {error(ErrorCode::Timeout)}, File::Any, End::Disconnects}, sent);
    EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
  }
}

TEST(ReceiverHeldWait, ASecondPer4MiBHeldOnTopOfTheTimeoutWithinItsBounds) {
  using receiver::held_wait;
  using std::chrono::hours;
  using std::chrono::minutes;
  using std::chrono::seconds;
  // A sender that cannot be probed: the time to hash at 4 MiB/s, up to 10 minutes (or the
  // timeout, where that is longer).
  EXPECT_EQ(held_wait(seconds(10), 0, false), seconds(10));
  EXPECT_EQ(held_wait(seconds(10), 1, false), seconds(11));
  EXPECT_EQ(held_wait(seconds(10), 4u << 20, false), seconds(11));
  EXPECT_EQ(held_wait(seconds(10), (4u << 20) + 1, false), seconds(12));
  EXPECT_EQ(held_wait(seconds(30), std::uint64_t{1} << 30, false), seconds(30 + 256));
  EXPECT_EQ(held_wait(seconds(30), std::uint64_t{4} << 30, false), minutes(10));
  EXPECT_EQ(held_wait(seconds(3600), std::uint64_t{4} << 30, false), seconds(3600));
  // A probed one: at least 10 minutes, and a day more than its timeout at most.
  EXPECT_EQ(held_wait(seconds(10), 1, true), minutes(10));
  EXPECT_EQ(held_wait(seconds(30), std::uint64_t{4} << 30, true), seconds(30 + 1024));
  EXPECT_EQ(held_wait(seconds(30), UINT64_MAX, true), seconds(30) + hours(24));
}

}  // namespace digest_at_end_test
}  // namespace rdmax::test::receiver_rig
