// The sender's session driver (sender/connection.hpp), driven message by message
// through the fake transport: what it offers and when, how it answers Take, Refuse and
// FileVerdict, what each entry's result becomes, and how the session ends
// (docs/PROTOCOL.md 7.5).

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

#include "common/digest/merkle.hpp"
#include "sender/exit_codes.hpp"
#include "sender_session_rig.hpp"

namespace rdmax::test::sender_rig {
namespace {

// Offers sent and not yet answered by a Refuse or a FileVerdict.
std::size_t unsettled(const SessionRig& r, std::size_t settled) {
  return r.offers().size() - settled;
}

TEST(SenderSession, NeverMoreThanSixteenEntriesAreOutstanding) {
  SessionRig r;
  r.h.plan.entries.clear();
  r.h.plan.results.clear();
  r.h.contents.clear();
  constexpr std::uint32_t kFiles = 40;
  for (std::uint32_t i = 0; i < kFiles; ++i) r.h.add_file("f" + std::to_string(i), {});
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  ASSERT_EQ(r.offers().size(), proto::kMaxEntriesInFlight);
  // Settle them one by one, the ways they can be: each settled entry lets one more out, and
  // never more than 16 are outstanding.
  std::size_t settled = 0;
  for (std::uint32_t i = 0; i < kFiles; ++i) {
    SCOPED_TRACE(i);
    if (i % 2 == 0) {
      r.h.receive(proto::Refuse{i, proto::RejectReason::Exists, ""});
    } else {
      r.h.receive(proto::Take{i});  // an empty file: its FileDone follows its Take
      ASSERT_EQ(r.file_dones().back().entry, i);
      r.h.receive(proto::FileVerdict{i, VerdictCode::Good, {}});
    }
    ++settled;
    EXPECT_LE(unsettled(r, settled), proto::kMaxEntriesInFlight);
    EXPECT_EQ(r.offers().size(), std::min<std::size_t>(kFiles, settled + 16));
    EXPECT_EQ(r.offers().back().entry, r.offers().size() - 1);
  }
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_EQ(r.h.driver->outcome(), O::SomeFailed);
  EXPECT_EQ(r.h.driver->figures().failures, kFiles / 2);
}

// Refused, failed, good: each entry's result is its own, the session ends with Bye and
// SomeFailed, and no Id is presented after a failure.
TEST(SenderSession, EveryEntrysResultIsRecordedAndFailuresEndInSomeFailed) {
  SessionRig r;
  r.h.settings.id = "alice";
  r.h.add_file("c.bin", random_bytes(10, 23));
  ASSERT_NO_FATAL_FAILURE(r.credited());
  ASSERT_EQ(r.offers().size(), 3u);
  r.h.receive(proto::Refuse{0, proto::RejectReason::TooLarge, "larger than 1 KiB"});
  r.h.receive(proto::Take{1});
  r.h.receive(proto::Take{2});
  ASSERT_EQ(r.chunks().size(), 2u);  // entries 1 and 2, one slot each
  EXPECT_EQ(r.chunks()[0].entry, 1u);
  EXPECT_EQ(r.chunks()[1].entry, 2u);
  EXPECT_EQ(r.h.transport.writes[0].bytes, r.h.contents[1]);
  EXPECT_EQ(r.h.transport.writes[1].bytes, r.h.contents[2]);
  r.h.complete_sends();
  ASSERT_EQ(r.file_dones().size(), 2u);
  EXPECT_EQ(r.file_dones()[0], (proto::FileDone{1, 100}));
  r.h.receive(proto::FileVerdict{1, VerdictCode::StorageError, {}});
  EXPECT_EQ(r.h.state(), S::InSession);
  const std::size_t sent = r.h.transport.sent.size();
  r.h.receive(proto::FileVerdict{2, VerdictCode::Good, {}});
  EXPECT_EQ(describe_sent(r.h.transport, sent, {{T::Bye}}), "Bye");
  EXPECT_TRUE(r.h.transport.sent_of<proto::Id>().empty());
  EXPECT_EQ(r.h.driver->outcome(), O::SomeFailed);
  EXPECT_EQ(r.h.status(0), Status::Refused);
  EXPECT_EQ(r.h.plan.results[0].outcome, O::Rejected);
  EXPECT_NE(r.h.plan.results[0].detail.find("larger than 1 KiB"), std::string::npos);
  EXPECT_EQ(r.h.status(1), Status::Failed);
  EXPECT_EQ(r.h.plan.results[1].outcome, O::ReceiverFailed);
  EXPECT_EQ(r.h.plan.results[1].bytes, 100u);
  EXPECT_EQ(r.h.status(2), Status::Good);
  EXPECT_EQ(r.h.driver->figures().failures, 2u);
  r.h.complete_sends();
  EXPECT_TRUE(r.h.transport.disconnected);
  r.h.driver->on_disconnected();
  EXPECT_TRUE(r.h.ended());
  EXPECT_EQ(r.h.driver->outcome(), O::SomeFailed);
}

// --digest-at-end (PROTOCOL.md 7.9): the Open asks for it; a receiver that does not know it
// refuses it like any must-understand extension, and the command (sender/transfer_command.cpp)
// then sends its files again with their digests first: the connection says so, and settles
// nothing as refused.
TEST(SenderSession, AReceiverThatRefusesTheDigestAtTheEndIsToldApart) {
  SessionRig r;
  r.h.with_digest_at_end();
  ASSERT_NO_FATAL_FAILURE(r.await_accept());
  const auto& extensions = r.open_sent().extensions;
  EXPECT_TRUE(std::any_of(extensions.begin(), extensions.end(), [](const auto& e) {
    return e.type == proto::kExtensionDigestAtEnd && e.value.empty();
  }));
  r.h.receive(proto::Reject{proto::RejectReason::UnsupportedVersion,
                            "this receiver does not know Open extension 0x8003"});
  EXPECT_EQ(r.h.driver->refused(), proto::TermRefused::DigestAtEnd);
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_EQ(r.h.status(0), Status::NotSent);
  EXPECT_EQ(r.h.status(1), Status::NotSent);
}

// --digest blake3 (PROTOCOL.md 7.10): the Open names BLAKE3 in its extension; a receiver of
// an earlier release refuses it like any must-understand extension, and the command
// (sender/transfer_command.cpp) sends the files again with the fs-verity digest. Checked
// before the digest at the end, which the same Open also asks for: one is dropped per try.
TEST(SenderSession, AReceiverThatRefusesBlake3IsToldApart) {
  SessionRig r;
  r.h.with_digest_at_end();
  r.h.plan.algorithm = proto::DigestAlgorithm::Blake3;
  ASSERT_NO_FATAL_FAILURE(r.await_accept());
  EXPECT_EQ(r.open_sent().digest_algorithm, proto::DigestAlgorithm::Blake3);
  r.h.receive(proto::Reject{proto::RejectReason::UnsupportedVersion,
                            "this receiver does not know Open extension 0x8004"});
  EXPECT_EQ(r.h.driver->refused(), proto::TermRefused::Algorithm);
  EXPECT_NE(r.h.driver->refused(), proto::TermRefused::DigestAtEnd);
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_EQ(r.h.status(0), Status::NotSent);
}

// A receiver may answer a file offered without its digest only as 7.9 allows: no Have or
// Resume before our Continue, no Resume past it, no Holds for a file offered with one.
TEST(SenderSession, TheDigestAtEndsAnswersOutOfTurnAreViolations) {
  for (int which = 0; which < 4; ++which) {
    SCOPED_TRACE(which);
    SessionRig r;
    r.h.with_digest_at_end();
    if (which == 3) r.h.plan.entries[1].digest_known = true;
    ASSERT_NO_FATAL_FAILURE(r.credited());
    const std::size_t sent = r.h.transport.sent.size();
    if (which == 0) r.h.receive(proto::Have{0, r.h.plan.entries[0].digest});
    if (which == 1) r.h.receive(proto::Resume{0, kSlot});
    if (which == 2) {
      r.h.receive(proto::Holds{0, kSlot, {}});
      ASSERT_TRUE(
          r.h.settle_hashing([&] { return !r.h.transport.sent_of<proto::Continue>().empty(); }));
      r.h.receive(proto::Resume{0, 2 * kSlot});  // past the Continue (from kSlot)
    }
    if (which == 3) r.h.receive(proto::Holds{1, 100, {}});
    EXPECT_GT(r.h.transport.sent.size(), sent);
    EXPECT_FALSE(r.h.transport.sent_of<proto::Error>().empty());
    EXPECT_EQ(r.h.transport.sent_of<proto::Error>().back().code, ErrorCode::ProtocolViolation);
    EXPECT_NE(r.h.status(0), Status::Good);
  }
}

// One Holds per entry (PROTOCOL.md 7.9): a second one, after our Continue answered the
// first, is a violation, never a second check and Continue (issue 41, B).
TEST(SenderSession, ASecondHoldsForAnEntryIsAViolation) {
  SessionRig r;
  r.h.with_digest_at_end();
  ASSERT_NO_FATAL_FAILURE(r.credited());
  const auto size = r.h.plan.entries[0].size;
  const proto::Holds holds{0, size, Digest{}};  // not ours: Continue from 0
  r.h.receive(holds);
  ASSERT_TRUE(
      r.h.settle_hashing([&] { return !r.h.transport.sent_of<proto::Continue>().empty(); }));
  EXPECT_EQ(r.h.transport.sent_of<proto::Continue>().back(), (proto::Continue{0, 0}));
  r.h.receive(holds);
  ASSERT_FALSE(r.h.transport.sent_of<proto::Error>().empty());
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().back().code, ErrorCode::ProtocolViolation);
  EXPECT_EQ(r.h.transport.sent_of<proto::Continue>().size(), 1u) << "no second Continue";
  EXPECT_NE(r.h.status(0), Status::Good);
}

// Our prefix is hashed on the pool while the loop goes on: when the receiver ends the
// connection before that check is done, its result is dropped, and nothing (no Continue, no
// chunk) follows the end.
TEST(SenderSession, AHoldsCheckThatEndsAfterTheConnectionClosedPostsNothing) {
  SessionRig r;
  r.h.with_digest_at_end();
  ASSERT_NO_FATAL_FAILURE(r.credited());
  r.h.receive(proto::Holds{0, kSlot, {}});
  r.h.receive(proto::Error{ErrorCode::Internal, "gave up"});
  ASSERT_EQ(r.h.state(), S::Closing);
  const std::size_t sent = r.h.transport.sent.size();
  // The check is the only job: nothing has been sent to hash.
  ASSERT_TRUE(r.h.settle_hashing([&] { return r.h.hashing_completions > 0; }))
      << "the check of our prefix never ended";
  ASSERT_EQ(r.h.hashing_completions, 1u);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Continue>().empty());
  EXPECT_EQ(r.h.transport.sent.size(), sent);
  EXPECT_EQ(r.h.state(), S::Closing);
}

// A chunk read on the workers whose file is settled meanwhile (a StorageError verdict) is
// not sent: its slot goes at once to the next file's chunk, with nothing else to wake the
// connection (one slot: the dropped chunk held it).
TEST(SenderSession, AChunkDroppedAfterItsReadGivesItsSlotToTheNextFile) {
  SessionRig r;
  r.h.with_digest_at_end();
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  r.h.receive(proto::Take{0});
  r.h.receive(proto::Take{1});
  r.h.receive(proto::Credit{0, 100});  // one slot: entry 0's first chunk, being read
  r.h.receive(proto::FileVerdict{0, VerdictCode::StorageError, {}});
  ASSERT_EQ(r.h.status(0), Status::Failed);
  ASSERT_TRUE(r.h.settle_hashing([&] { return !r.chunks().empty(); }))
      << "the freed slot was never used";
  const auto chunks = r.chunks();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].entry, 1u) << "entry 0's chunk went after its verdict";
  EXPECT_EQ(chunks[0].slot, 0u);
}

// A send that fails inside a read's completion ends the connection there and then, while
// the other read's completion waits in the same batch: the end waits only for reads that
// run, not for completions it cannot run from inside another (it would never end).
TEST(SenderSession, ASendFailingInAReadsCompletionEndsWithTheOtherCompletionPending) {
  SessionRig r;
  r.h.with_digest_at_end();
  ASSERT_NO_FATAL_FAILURE(r.credited());
  r.h.receive(proto::Take{0});
  r.h.receive(proto::Take{1});  // two reads: each entry's first chunk, one per slot
  // Both reads end (a few microseconds each) before any completion runs.
  pollfd ready{r.h.pool->ready_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 5000), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  r.h.transport.fail_send_after = 0;  // the FileChunk's post fails, and so does the Error
  r.h.pool->run_completions();
  EXPECT_TRUE(r.h.ended());
  EXPECT_TRUE(r.h.transport.sent_of<proto::FileChunk>().empty());
  r.h.pool->run_completions();  // whatever is left finds nothing to do
  EXPECT_TRUE(r.h.ended());
}

TEST(SenderSession, WithoutTheDigestAtEndTheOpenDoesNotAskForIt) {
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.await_accept());
  for (const auto& e : r.open_sent().extensions) EXPECT_NE(e.type, proto::kExtensionDigestAtEnd);
  r.h.receive(proto::Reject{proto::RejectReason::UnsupportedVersion, ""});
  EXPECT_NE(r.h.driver->refused(), proto::TermRefused::DigestAtEnd);
}

// A directory is offered only once every file is settled, so that its time sticks.
// --bwlimit in a session paces as for one file (issue 20): a bucket of one chunk that starts
// empty, and resume_at() says exactly when the held chunk may go (the run wakes then).
TEST(SenderSession, BwlimitHoldsEachChunkUntilTheBucketHoldsItAndSaysWhen) {
  SessionRig r;
  constexpr std::uint64_t kRate = 20 * kSlot;  // one chunk every 50 ms
  sender::SharedBwlimit bwlimit(kRate);
  ASSERT_NO_FATAL_FAILURE(r.credited());
  r.h.settings.shared_bwlimit = &bwlimit;
  const auto before = std::chrono::steady_clock::now();
  r.h.receive(proto::Take{0});
  EXPECT_TRUE(r.h.transport.sent_of<proto::FileChunk>().empty()) << "the bucket starts empty";
  const auto at = r.h.driver->resume_at();
  ASSERT_TRUE(at.has_value());
  const auto wait = std::chrono::duration<double>(*at - before).count();
  EXPECT_GE(wait, 0.049);  // one chunk's worth of the rate: never sooner
  EXPECT_LT(wait, 1.0);
  std::this_thread::sleep_until(*at);
  r.h.driver->tick(std::chrono::steady_clock::now());
  EXPECT_EQ(r.h.transport.sent_of<proto::FileChunk>().size(), 1u) << "one chunk per refill";
  ASSERT_TRUE(r.h.driver->resume_at().has_value());
}

TEST(SenderSession, DirectoriesAreOfferedAfterTheFiles) {
  SessionRig r;
  r.h.add_directory("d");
  ASSERT_NO_FATAL_FAILURE(r.credited());
  ASSERT_EQ(r.offers().size(), 2u);  // the files only
  r.h.receive(proto::Refuse{0, proto::RejectReason::Exists, ""});
  EXPECT_EQ(r.offers().size(), 2u);  // entry 1 is still a file in flight
  r.h.receive(proto::Take{1});
  r.h.complete_sends();
  r.h.receive(proto::FileVerdict{1, VerdictCode::Good, {}});
  ASSERT_EQ(r.offers().size(), 3u);
  EXPECT_EQ(r.offers()[2].kind, proto::EntryKind::Directory);
  EXPECT_EQ(r.offers()[2].path, "d");
  EXPECT_EQ(r.offers()[2].size, 0u);
  r.h.receive(proto::FileVerdict{2, VerdictCode::Good, {}});
  EXPECT_EQ(r.h.status(2), Status::Good);
  EXPECT_EQ(r.h.state(), S::Closing);
}

// PROTOCOL.md 7.5, 4.7: a session has no version-1 form. A receiver that speaks only version
// 1 ends it before anything is offered, and the command's exit status is 4.
TEST(SenderSession, AVersionOneReceiverEndsASessionWithExitStatus4) {
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.await_accept());
  r.h.receive(proto::Reject{proto::RejectReason::UnsupportedVersion, ""}, proto::kVersion1);
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_TRUE(r.offers().empty());
  r.h.complete_sends();
  r.h.driver->on_disconnected();
  ASSERT_TRUE(r.h.ended());
  EXPECT_EQ(r.h.driver->outcome(), O::VersionUnsupported);
  for (std::uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.h.status(i), Status::NotSent) << i;
    EXPECT_EQ(r.h.plan.results[i].outcome, O::VersionUnsupported) << i;
  }
  // The command's status is the first failed entry's (sender/report.cpp).
  EXPECT_EQ(sender::exit_code_for(r.h.plan.results[0].outcome), sender::kExitRejected);
}

// PROTOCOL.md 7.5: the answers to Offers come in any order (the receiver checks files in
// parallel), and so do the FileVerdicts. Answered last-first, every file still goes whole,
// each chunk holding its own file's bytes, and the session succeeds.
TEST(SenderSession, AnswersInAnyOrderStillDeliverEveryFile) {
  SessionRig r;
  r.h.add_file("c.bin", random_bytes(10, 23));
  ASSERT_NO_FATAL_FAILURE(r.credited());
  ASSERT_EQ(r.offers().size(), 3u);
  r.h.receive(proto::Have{2, r.offers()[2].digest});
  r.h.receive(proto::Take{1});
  r.h.receive(proto::Take{0});
  for (int round = 0; round < 4 && r.file_dones().size() < 2; ++round) {
    r.h.complete_sends();
    r.h.receive(proto::Credit{0, 300u + static_cast<std::uint32_t>(2 * round)});
    r.h.receive(proto::Credit{1, 301u + static_cast<std::uint32_t>(2 * round)});
  }
  r.h.complete_sends();
  ASSERT_EQ(r.file_dones().size(), 2u);
  EXPECT_EQ(r.file_dones()[0].entry, 1u);  // the first taken is the first done
  // Every WRITE carried its own file's bytes at its offset; together, each file whole.
  const auto chunks = r.chunks();
  ASSERT_EQ(chunks.size(), r.h.transport.writes.size());
  std::vector<std::uint64_t> covered(3, 0);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    SCOPED_TRACE(i);
    const auto& c = chunks[i];
    ASSERT_LT(c.entry, 2u);
    const auto& content = r.h.contents[c.entry];
    ASSERT_LE(c.offset + c.length, content.size());
    EXPECT_EQ(c.offset, covered[c.entry]);
    EXPECT_EQ(r.h.transport.writes[i].bytes,
              std::vector<std::uint8_t>(
                  content.begin() + static_cast<std::ptrdiff_t>(c.offset),
                  content.begin() + static_cast<std::ptrdiff_t>(c.offset + c.length)));
    covered[c.entry] += c.length;
  }
  EXPECT_EQ(covered[0], r.h.contents[0].size());
  EXPECT_EQ(covered[1], r.h.contents[1].size());
  EXPECT_EQ(covered[2], 0u);  // had: nothing of it moves
  // The verdicts, out of order too.
  r.h.receive(proto::FileVerdict{0, VerdictCode::Good, {}});
  EXPECT_EQ(r.h.state(), S::InSession);
  const std::size_t sent = r.h.transport.sent.size();
  r.h.receive(proto::FileVerdict{1, VerdictCode::Good, {}});
  EXPECT_EQ(describe_sent(r.h.transport, sent, {{T::Bye}}), "Bye");
  EXPECT_EQ(r.h.driver->outcome(), O::Success);
  for (std::uint32_t i = 0; i < 3; ++i) EXPECT_EQ(r.h.status(i), Status::Good) << i;
  EXPECT_TRUE(r.h.plan.results[2].identical);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
}

// An abandoned session: what was not settled is reported as the connection ended.
TEST(SenderSession, EntriesNotSettledEndAsTheConnectionDid) {
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.second_done());
  r.h.receive(proto::FileVerdict{1, VerdictCode::Good, {}});
  r.tick_late();
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).code, ErrorCode::Timeout);
  r.h.complete_sends();
  r.h.driver->on_disconnected();
  ASSERT_TRUE(r.h.ended());
  EXPECT_EQ(r.h.status(0), Status::NotSent);
  EXPECT_EQ(r.h.plan.results[0].outcome, O::ConnectionLost);
  EXPECT_EQ(r.h.status(1), Status::Good);
}

// RLIMIT_MEMLOCK (sender/memlock.hpp): a limit that holds the control buffers and one slot
// makes the staging buffer one slot, though the receiver grants two; the session still
// carries every chunk through it.
TEST(SenderSession, StagingFitsTheMemlockLimit) {
  SessionRig r;
  const std::uint64_t control =
      sender::control_pins(sender::kSessionDepths, sender::system_page_size());
  sender::MemlockBudget memlock({control + kSlot + kSlot / 2, false}, 1, sender::kSessionDepths);
  r.h.settings.memlock = &memlock;
  ASSERT_NO_FATAL_FAILURE(r.credited());
  std::size_t staged = 0;
  for (const auto& [handle, region] : r.h.transport.regions)
    if (region.live && region.access == Access::LocalRead) staged += region.memory.size();
  EXPECT_EQ(staged, kSlot);
  r.h.receive(proto::Take{1});
  r.h.complete_sends();
  EXPECT_EQ(r.file_dones().size(), 1u);
  EXPECT_EQ(r.h.transport.sent_of<proto::FileChunk>().at(0).slot, 0u);
}

// Not even one slot fits: the session ends as a local failure, with an Error to the receiver.
TEST(SenderSession, NoSlotUnderTheMemlockLimitIsALocalFailure) {
  SessionRig r;
  sender::MemlockBudget memlock({64u << 10, false}, 1, sender::kSessionDepths);
  r.h.settings.memlock = &memlock;
  ASSERT_NO_FATAL_FAILURE(r.await_accept());
  r.h.receive(r.accept);
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).code, ErrorCode::Internal);
  EXPECT_TRUE(r.h.transport.sent_of<proto::FileChunk>().empty());
  EXPECT_EQ(r.h.driver->outcome(), O::LocalFailure);
}

// --zero-copy: each file's chunks are written from its own registered mapping, a window at
// a time; nothing is staged, the entry's result says so, and each file's windows are
// deregistered once its FileDone has gone.
TEST(SenderSession, ZeroCopyWritesFromEachFilesMappingAndReleasesItAfterItsFileDone) {
  SessionRig r;
  r.h.settings.zero_copy = true;
  ASSERT_NO_FATAL_FAILURE(r.credited());
  r.h.receive(proto::Take{0});
  r.h.receive(proto::Take{1});
  ASSERT_EQ(r.chunks().size(), 2u);  // both slots: entry 0's first chunk, then ...
  auto live_bytes = [&] {
    std::size_t bytes = 0;
    for (const auto& [handle, region] : r.h.transport.regions)
      if (region.live && region.access == Access::LocalRead) bytes += region.memory.size();
    return bytes;
  };
  // Entry 0's window (the whole file: it is smaller than a window), nothing staged.
  EXPECT_EQ(live_bytes(), r.h.contents[0].size());
  for (int round = 0; round < 4 && r.file_dones().size() < 2; ++round) {
    r.h.complete_sends();
    r.h.receive(proto::Credit{0, 200u + round});
    r.h.receive(proto::Credit{1, 300u + round});
  }
  r.h.complete_sends();
  ASSERT_EQ(r.file_dones().size(), 2u);
  // What was written is each file's bytes, in order.
  std::vector<std::vector<std::uint8_t>> written(2);
  for (std::size_t k = 0; k < r.chunks().size(); ++k) {
    const auto& bytes = r.h.transport.writes.at(k).bytes;
    auto& into = written.at(r.chunks()[k].entry);
    EXPECT_EQ(r.chunks()[k].offset, into.size());
    into.insert(into.end(), bytes.begin(), bytes.end());
  }
  EXPECT_EQ(written[0], r.h.contents[0]);
  EXPECT_EQ(written[1], r.h.contents[1]);
  EXPECT_EQ(live_bytes(), 0u);  // both files done: nothing is pinned for them any more
  EXPECT_TRUE(r.h.plan.results[0].zero_copy);
  EXPECT_TRUE(r.h.plan.results[1].zero_copy);
}

// The corruption test hook needs the bytes in a buffer of ours: with it, --zero-copy copies.
TEST(SenderSession, ZeroCopyWithTheCorruptionHookCopies) {
  SessionRig r;
  r.h.settings.zero_copy = true;
  r.h.settings.inject_corruption = 5;
  ASSERT_NO_FATAL_FAILURE(r.credited());
  r.h.receive(proto::Take{1});
  ASSERT_EQ(r.chunks().size(), 1u);
  auto expected = r.h.contents[1];
  expected[5] ^= 0xFF;
  EXPECT_EQ(r.h.transport.writes.at(0).bytes, expected);
  EXPECT_FALSE(r.h.plan.results[1].zero_copy);
}

// The data phase of a run cut short ends at its last chunk's completion: the bytes that
// moved are reported with the time they took, not with a data phase of 0 s (issue 22).
TEST(SenderSession, ARunCutShortHasADataPhaseUpToItsLastChunk) {
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.credited());
  EXPECT_FALSE(r.h.driver->figures().data_span);  // nothing written yet
  r.h.receive(proto::Take{0});
  ASSERT_EQ(r.chunks().size(), 2u);
  r.h.complete_sends();
  EXPECT_TRUE(r.file_dones().empty());  // entry 0 has a third chunk to come
  r.h.driver->on_disconnected();
  ASSERT_TRUE(r.h.ended());
  const auto span = r.h.driver->figures().data_span;
  ASSERT_TRUE(span);
  EXPECT_GE(span->second, span->first);
  EXPECT_EQ(r.h.driver->figures().bytes_completed, 2u * kSlot);
}

// ---- What the one-file driver's tests held it to, held to the one driver ----

TEST(SenderSession, TheSecretIsKeptWhenTheReceiversDisconnectRacesIt) {
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.await_secret());
  // The Secret is in the CQ when DISCONNECTED arrives: it is taken first.
  r.h.transport.deliver(proto::Secret{"s3cret"}, proto::kVersion2);
  r.h.driver->on_disconnected();
  EXPECT_TRUE(r.h.ended());
  EXPECT_EQ(r.h.driver->outcome(), O::Success);
  EXPECT_EQ(r.h.driver->secret(), "s3cret");
}

TEST(SenderSession, ASendQueueFullWhileFailingEndsWithoutAnotherWord) {
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.await_accept());
  r.h.transport.fail_registration_after = 0;
  r.h.transport.send_capacity = 1;  // the Open fills it: the Error cannot be posted
  r.h.receive(r.accept);
  EXPECT_TRUE(r.h.ended());
  EXPECT_TRUE(r.h.transport.shut);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
}

TEST(SenderSession, SlotsOffTheBlockGridAreAViolationWithTheFsVerityDigestOnly) {
  for (const auto algorithm :
       {proto::DigestAlgorithm::FsVeritySha256, proto::DigestAlgorithm::WholeFileSha256}) {
    SessionRig r;
    r.h.plan.algorithm = algorithm;
    r.accept.slot_size = 6000;
    ASSERT_NO_FATAL_FAILURE(r.await_accept());
    r.h.receive(r.accept);
    const bool fsverity = algorithm == proto::DigestAlgorithm::FsVeritySha256;
    EXPECT_EQ(r.h.transport.sent_of<proto::Error>().size(), fsverity ? 1u : 0u);
    EXPECT_EQ(r.h.state(), fsverity ? S::Closing : S::InSession);
  }
}

TEST(SenderSession, AReceiverThatGaveUpIsAConnectionLostNotAProtocolError) {
  for (auto code : {ErrorCode::Timeout, ErrorCode::ShuttingDown}) {
    SessionRig r;
    ASSERT_NO_FATAL_FAILURE(r.credited());
    r.h.receive(proto::Error{code, "gave up"});
    EXPECT_EQ(r.h.state(), S::Closing);
    EXPECT_EQ(r.h.driver->outcome(), O::ConnectionLost) << proto::to_string(code);
    EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());  // no Error back to an Error
  }
  // Before the Open was seen, the receiver writes version 1 (PROTOCOL.md 7.1).
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.await_accept());
  r.h.receive(proto::Error{ErrorCode::Timeout, "no Open"}, proto::kVersion1);
  EXPECT_EQ(r.h.driver->outcome(), O::ConnectionLost);
}

// An Error that cannot be posted (the send queue is full of a peer that does not keep up)
// still ends the connection: a timeout finishes, an interrupt shuts down at once.
TEST(SenderSession, ATimeoutWhoseErrorCannotBePostedStillFinishes) {
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.credited());
  r.h.transport.send_capacity = r.h.transport.sends_in_flight();
  r.tick_late();
  r.tick_late();  // past any close grace too
  EXPECT_TRUE(r.h.ended());
  EXPECT_EQ(r.h.driver->outcome(), O::ConnectionLost);
}

TEST(SenderSession, AnInterruptWhoseErrorCannotBePostedStillDisconnects) {
  SessionRig r;
  ASSERT_NO_FATAL_FAILURE(r.credited());
  r.h.transport.send_capacity = r.h.transport.sends_in_flight();
  r.h.driver->interrupt(SIGINT);
  EXPECT_TRUE(r.h.transport.shut || r.h.transport.disconnected);
  EXPECT_EQ(r.h.driver->outcome(), O::Interrupted);
}

// A read that does not return (a hung file system: NFS, a dying disk) when the connection
// ends: the end does not wait for it on the loop (rdma-send --serve serves every other fetcher
// from that loop); the connection is finished, its files and buffers let go, only once the
// read returned, on a tick.
TEST(SenderSession, AReadThatHangsAtTheEndIsWaitedForOnTicksNotOnTheLoop) {
  SessionRig r;
  struct Gate {
    std::mutex mutex;
    std::condition_variable changed;
    bool entered = false;
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();
  r.h.settings.pool = &r.h.pool.emplace(2);  // the reads on workers, as the programs do
  r.h.settings.read = [gate](int, std::span<std::uint8_t> into, std::uint64_t) {
    std::unique_lock lock(gate->mutex);
    gate->entered = true;
    gate->changed.notify_all();
    gate->changed.wait(lock, [&] { return gate->open; });
    std::fill(into.begin(), into.end(), std::uint8_t{0});
  };
  const auto open_gate = [gate] {
    std::lock_guard lock(gate->mutex);
    gate->open = true;
    gate->changed.notify_all();
  };
  // Should the end wait on the loop after all, the gate opens after 3 s: the test fails on
  // the time it took rather than hanging.
  std::thread watchdog([gate, open_gate] {
    {
      std::unique_lock lock(gate->mutex);
      if (gate->changed.wait_for(lock, std::chrono::seconds(3), [&] { return gate->open; })) return;
    }
    open_gate();
  });
  ASSERT_NO_FATAL_FAILURE(r.credited());
  r.h.receive(proto::Take{0});
  {
    std::unique_lock lock(gate->mutex);
    ASSERT_TRUE(
        gate->changed.wait_for(lock, std::chrono::seconds(10), [&] { return gate->entered; }));
  }
  const auto before = std::chrono::steady_clock::now();
  r.h.driver->interrupt(SIGTERM);
  r.h.complete_sends();
  r.h.driver->on_disconnected();
  const auto took = std::chrono::steady_clock::now() - before;
  EXPECT_LT(took, std::chrono::seconds(1)) << "the end waited for the read on the loop";
  EXPECT_EQ(r.h.state(), S::Done);
  const bool read_still_hangs = !gate->open;
  if (read_still_hangs) {
    EXPECT_FALSE(r.h.driver->idle());
    r.h.driver->tick(std::chrono::steady_clock::now());
    EXPECT_FALSE(r.h.driver->finished()) << "finished while its read still writes its buffer";
  }
  open_gate();
  EXPECT_TRUE(r.h.ended());
  EXPECT_EQ(r.h.driver->outcome(), O::Interrupted);
  EXPECT_EQ(r.h.status(0), Status::NotSent);
  EXPECT_EQ(r.h.plan.results[0].outcome, O::Interrupted) << "what was not settled ends so";
  watchdog.join();
}

}  // namespace
}  // namespace rdmax::test::sender_rig
