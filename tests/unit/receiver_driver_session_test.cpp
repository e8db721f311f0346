// The receiver's side of a version-2 session (docs/PROTOCOL.md 7.5), driven message by
// message through the fake transport: what it answers to each entry, what it writes to
// disk (and where), and how the session goes on past a refused or failed entry.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include "receiver_driver_rig.hpp"

namespace rdmax::test::receiver_rig {
namespace driver_session_test {

using V = proto::VerdictCode;
using R = proto::RejectReason;

std::size_t entries_in(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::recursive_directory_iterator(dir),
                                                std::filesystem::recursive_directory_iterator()));
}

TEST(ReceiverSession, TwoFilesAreTakenStoredAndCommittedWithTheirModeAndTime) {
  Rig r;
  r.entries[1].path = "d/b.bin";  // its directory is made on the way
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  EXPECT_EQ(r.accept().slot_count, 2u);
  r.peer(r.offer(0));
  r.peer(r.offer(1));
  ASSERT_TRUE(r.settle_until_sent(T::Take, 2));
  const auto takes = r.h.transport.sent_of<proto::Take>();
  EXPECT_EQ(takes[0].entry + takes[1].entry, 1u);  // one each, in either order
  // The files' chunks interleave in the shared window.
  ASSERT_TRUE(r.file_chunk(0, 0, kSlot, 0));
  ASSERT_TRUE(r.file_chunk(1, 0, 100, 1));
  ASSERT_TRUE(r.settle_until_sent(T::Credit, 4));  // both back: entry 0 has bytes to come
  r.file_done(1);
  ASSERT_TRUE(r.file_chunk(0, kSlot, kSlot, 0));
  ASSERT_TRUE(r.settle_idle());
  r.file_done(0);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict, 2));
  EXPECT_EQ(r.sent_count<proto::Credit>(), 4u);  // nothing more to receive: no credit
  for (std::uint32_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const auto verdict = r.verdict_of(i);
    ASSERT_TRUE(verdict.has_value());
    EXPECT_EQ(verdict->code, V::Good);
    EXPECT_EQ(verdict->received_digest, sha256_of(r.entries[i].bytes));
    r.expect_entry_final(i);
  }
  EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
  EXPECT_EQ(entries_in(r.h.dir.path()), 3u);  // a.bin, d, d/b.bin
  // The daemon's status line (systemd STATUS=) counts a session's files as one file's.
  EXPECT_EQ(r.h.metrics.files(receiver::FileOutcome::Good), 2u);
  EXPECT_EQ(r.h.metrics.received_bytes, r.entries[0].bytes.size() + r.entries[1].bytes.size());
  EXPECT_EQ(r.h.metrics.written_bytes, r.entries[0].bytes.size() + r.entries[1].bytes.size());
  // d was never offered: it keeps the mode it was made with (PROTOCOL.md 7.5, Metadata).
  struct stat parent {};
  ASSERT_EQ(::stat((r.h.dir.path() / "d").c_str(), &parent), 0);
  EXPECT_EQ(parent.st_mode & 07777, 0700u & ~process_umask());
  EXPECT_EQ(r.h.state(), S::InSession);
  r.peer(proto::Bye{});
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
}

TEST(ReceiverSession, BadPathsAreRefusedNothingIsWrittenOutsideAndTheSessionGoesOn) {
  Rig r;
  const auto outside = r.h.dir.path().parent_path() / "x";
  const bool was_outside = std::filesystem::exists(outside);
  const std::vector<std::string> bad{"../x", "/abs", "a//b", "a/./b", "a/"};
  std::vector<SessionFile> entries;
  for (const auto& path : bad) entries.push_back({path, random_bytes(10, 3), 0644, 0, 0});
  entries.push_back({"ok.bin", random_bytes(10, 4), 0644, 1600000000, 0});
  r.entries = entries;
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  for (std::uint32_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(bad[i]);
    const std::size_t sent = r.h.transport.sent.size();
    r.peer(r.offer(i));
    // Refused at once, before anything is created; the session goes on.
    EXPECT_EQ(describe_sent(r.h.transport, sent, {refuse(R::BadName)}),
              describe({refuse(R::BadName)}));
    EXPECT_EQ(r.h.transport.sent_of<proto::Refuse>().back().entry, i);
    EXPECT_EQ(r.h.state(), S::InSession);
  }
  const auto last = static_cast<std::uint32_t>(bad.size());
  r.peer(r.offer(last));
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  ASSERT_TRUE(r.file_chunk(last, 0, 10, 0));
  ASSERT_TRUE(r.settle_idle());
  r.file_done(last);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict));
  EXPECT_EQ(r.verdict_of(last).value().code, V::Good);
  r.expect_entry_final(last);
  EXPECT_EQ(entries_in(r.h.dir.path()), 1u);  // ok.bin, and nothing else
  EXPECT_EQ(std::filesystem::exists(outside), was_outside);
  EXPECT_FALSE(std::filesystem::exists("/abs"));
  // Every entry settled, some refused: no secret for this session, but Bye is fine.
  const std::size_t sent = r.h.transport.sent.size();
  r.peer(proto::Id{"alice"});
  EXPECT_EQ(describe_sent(r.h.transport, sent, {error(ErrorCode::ProtocolViolation)}),
            describe({error(ErrorCode::ProtocolViolation)}));
  EXPECT_TRUE(r.h.transport.sent_of<proto::Secret>().empty());
}

TEST(ReceiverSession, ByeAfterARefusalEndsTheSessionCleanly) {
  Rig r;
  r.entries.resize(1);
  std::ofstream(r.h.dir.path() / "a.bin") << "taken";
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  r.peer(r.offer(0));
  ASSERT_TRUE(r.settle_until_sent(T::Refuse));
  EXPECT_EQ(r.h.transport.sent_of<proto::Refuse>().at(0).reason, R::Exists);
  EXPECT_EQ(read_file(r.h.dir.path() / "a.bin"), "taken");
  const std::size_t sent = r.h.transport.sent.size();
  r.peer(proto::Bye{});
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_EQ(r.h.transport.sent.size(), sent);
}

// Issue 21: an offer still being checked must not count against the offers behind it. A
// file larger than the disk, offered together with two small ones: the small ones are
// taken and verified, the big one alone is refused NoSpace, and nothing of it stays.
TEST(ReceiverSession, AnOversizedOfferDoesNotMakeTheOffersBehindItFail) {
  Rig r;
  r.entries = {{"huge.bin", random_bytes(10, 1), 0644, 0, 0},
               {"s1.bin", random_bytes(100, 2), 0644, 0, 0},
               {"s2.bin", random_bytes(kSlot, 3), 0644, 0, 0}};
  constexpr std::uint64_t kHuge = std::uint64_t{1} << 62;
  r.extra_total_bytes = kHuge - 10;
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  proto::Offer huge = r.offer(0);
  huge.size = kHuge;
  r.peer(huge);
  r.peer(r.offer(1));
  r.peer(r.offer(2));
  ASSERT_TRUE(r.settle_until_sent(T::Take, 2))
      << describe_sent(r.h.transport, 0, {}) << r.log.since(0);
  ASSERT_TRUE(r.settle_until_sent(T::Refuse, 1));
  const auto refusals = r.h.transport.sent_of<proto::Refuse>();
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0].entry, 0u);
  EXPECT_EQ(refusals[0].reason, R::NoSpace);
  ASSERT_TRUE(r.file_chunk(1, 0, 100, 0));
  ASSERT_TRUE(r.file_chunk(2, 0, kSlot, 1));
  ASSERT_TRUE(r.settle_idle());
  r.file_done(1);
  r.file_done(2);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict, 2));
  for (std::uint32_t i = 1; i <= 2; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(r.verdict_of(i).has_value());
    EXPECT_EQ(r.verdict_of(i)->code, V::Good);
    EXPECT_EQ(read_file(r.h.dir.path() / r.entries[i].path),
              std::string(r.entries[i].bytes.begin(), r.entries[i].bytes.end()));
  }
  ASSERT_TRUE(r.settle_idle());
  EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "huge.bin"));
  EXPECT_EQ(entries_in(r.h.dir.path()), 2u);  // s1.bin and s2.bin, no partial area
  EXPECT_EQ(r.h.context.space.reserved(), 0u);
  EXPECT_EQ(r.h.state(), S::InSession);
}

// SIGTERM while an entry is committed (issue 20: only the one-file flow waited): the fsync
// and rename cannot be called back, so the entry's verdict goes out first, then the
// ShuttingDown, and the file is in place.
TEST(ReceiverSession, ShutdownDuringAnEntrysCommitWaitsForItsVerdict) {
  Rig r;
  ASSERT_NO_FATAL_FAILURE(r.entry_stored());
  ASSERT_TRUE(r.gate.hold());  // the commit job waits at the gate
  r.file_done(0);
  r.h.connection->shut_down();
  EXPECT_EQ(r.h.state(), S::InSession);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
  r.gate.open_all();
  ASSERT_TRUE(r.settle_until_sent(T::Error));
  ASSERT_TRUE(r.settle_idle());
  EXPECT_EQ(r.h.state(), S::Closing);
  std::vector<T> order;
  for (const auto& sent : r.h.transport.sent) order.push_back(proto::type_of(sent.message));
  const auto verdict = std::find(order.begin(), order.end(), T::FileVerdict);
  const auto error = std::find(order.begin(), order.end(), T::Error);
  ASSERT_NE(verdict, order.end());
  EXPECT_LT(verdict, error) << "the ShuttingDown went before the entry's verdict";
  EXPECT_EQ(r.verdict_of(0).value().code, V::Good);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).code, ErrorCode::ShuttingDown);
  r.expect_entry_final(0);
}

// PROTOCOL.md 7.5: an Open is judged by its extensions and the receiver's memory alone;
// entry_count and total_bytes are not held against --max-size or the free space: each file
// is, at its Offer.
TEST(ReceiverSession, AnOpenIsNotJudgedByItsSizesOnlyEachFileIs) {
  Rig r;
  r.h.options.max_size = 1000;
  r.version = proto::kVersion2;
  proto::Open open = r.open();
  open.entry_count = std::numeric_limits<std::uint32_t>::max();
  open.total_bytes = std::uint64_t{1} << 62;
  r.h.start();
  r.peer(open);
  ASSERT_EQ(r.h.state(), S::InSession);
  EXPECT_EQ(r.sent_count<proto::Accept>(), 1u);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Reject>().empty());
  r.peer(r.offer(0));  // 8 KiB, above --max-size
  r.peer(r.offer(1));  // 100 bytes
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  ASSERT_TRUE(r.settle_idle());
  EXPECT_EQ(describe_sent(r.h.transport, 0, {}).find("Error"), std::string::npos);
  ASSERT_EQ(r.h.transport.sent_of<proto::Refuse>().size(), 1u);
  EXPECT_EQ(r.h.transport.sent_of<proto::Refuse>()[0].entry, 0u);
  EXPECT_EQ(r.h.transport.sent_of<proto::Refuse>()[0].reason, R::TooLarge);
  EXPECT_EQ(r.h.transport.sent_of<proto::Take>().at(0).entry, 1u);
  EXPECT_EQ(r.h.state(), S::InSession);
}

// PROTOCOL.md 7.5: total_bytes is an upper bound. A session that offers less completes, and
// once its last entry is offered no slot is credited for bytes that will never come.
TEST(ReceiverSession, TotalBytesAboveTheOfferedSizesIsAnUpperBound) {
  Rig r;
  r.extra_total_bytes = 10 * kSlot;
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  r.peer(r.offer(0));
  r.peer(r.offer(1));
  ASSERT_TRUE(r.settle_until_sent(T::Take, 2));
  ASSERT_TRUE(r.file_chunk(0, 0, kSlot, 0));
  ASSERT_TRUE(r.file_chunk(1, 0, 100, 1));
  ASSERT_TRUE(r.settle_until_sent(T::Credit, 4));  // both back: entry 0 has bytes to come
  ASSERT_TRUE(r.file_chunk(0, kSlot, kSlot, 0));
  ASSERT_TRUE(r.settle_idle());
  // Every offered byte is here and no entry is left to offer: no credit, although the
  // Open announced more.
  EXPECT_EQ(r.sent_count<proto::Credit>(), 4u);
  r.file_done(0);
  r.file_done(1);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict, 2));
  EXPECT_EQ(r.verdict_of(0).value().code, V::Good);
  EXPECT_EQ(r.verdict_of(1).value().code, V::Good);
  r.peer(proto::Bye{});
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
}

// PROTOCOL.md 7.6: an empty file already in place is answered Have like any other, and an
// entry settled by Have no longer counts against the 16 in flight (7.5).
TEST(ReceiverSession, EmptyFilesInPlaceAreAnsweredHaveAndFreeTheirPlaceInFlight) {
  Rig r;
  r.resume = true;
  r.entries.clear();
  constexpr std::uint32_t kCount = proto::kMaxEntriesInFlight + 4;
  for (std::uint32_t i = 0; i < kCount; ++i) {
    r.entries.push_back({"e" + std::to_string(i), {}, 0644, 0, 0});
    std::ofstream(r.h.dir.path() / r.entries.back().path);  // there already, empty
  }
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  for (std::uint32_t i = 0; i < proto::kMaxEntriesInFlight; ++i) r.peer(r.offer(i));
  ASSERT_TRUE(r.settle_until_sent(T::Have, proto::kMaxEntriesInFlight));
  for (std::uint32_t i = proto::kMaxEntriesInFlight; i < kCount; ++i) r.peer(r.offer(i));
  ASSERT_TRUE(r.settle_until_sent(T::Have, kCount));
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
  EXPECT_TRUE(r.h.transport.sent_of<proto::Take>().empty());
  EXPECT_EQ(r.sent_count<proto::Credit>(), 0u);  // a session of no bytes has no credit
  r.peer(proto::Id{"alice"});                    // every entry Good: the Id is allowed
  EXPECT_EQ(r.sent_count<proto::Secret>() + r.sent_count<proto::Denied>(), 1u);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
}

// PROTOCOL.md 7.3: during a session the receiver's Working says phase 2 (storing) whatever
// its entries are doing; phase 1 only while it checks the Open.
TEST(ReceiverSession, WorkingInASessionSaysStoring) {
  Rig r;
  r.keepalive_ms = 100;
  ASSERT_NO_FATAL_FAILURE(r.entry_offered());  // its file is being created
  r.tick_late();
  ASSERT_EQ(r.sent_count<proto::Working>(), 1u);
  EXPECT_EQ(r.h.transport.sent_of<proto::Working>()[0].phase, proto::WorkPhase::Storing);
  EXPECT_EQ(r.h.state(), S::InSession);
}

TEST(ReceiverSession, MoreThanSixteenUnsettledEntriesIsAViolation) {
  Rig r;
  r.entries.clear();
  for (int i = 0; i <= 16; ++i)
    r.entries.push_back({"f" + std::to_string(i), random_bytes(1, 5), 0644, 0, 0});
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  ASSERT_TRUE(r.gate.hold());  // the files stay unsettled: their creation waits at the gate
  for (std::uint32_t i = 0; i < proto::kMaxEntriesInFlight; ++i) r.peer(r.offer(i));
  EXPECT_EQ(r.h.state(), S::InSession);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
  r.peer(r.offer(proto::kMaxEntriesInFlight));
  EXPECT_EQ(r.h.state(), S::Closing);
  ASSERT_EQ(r.h.transport.sent_of<proto::Error>().size(), 1u);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>()[0].code, ErrorCode::ProtocolViolation);
  r.gate.open_all();
  ASSERT_TRUE(r.settle_idle());
  EXPECT_EQ(entries_in(r.h.dir.path()), 0u);  // every temporary removed
  EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
}

// PROTOCOL.md 7.5, "A file that fails early": its FileVerdict(StorageError) goes at once;
// the FileChunks and the FileDone the sender sent before it saw it are dropped, their slots
// credited back, and the session goes on.
TEST(ReceiverSession, AFileWhoseWriteFailsIsSettledAtOnceAndTheSessionGoesOn) {
  Rig r;
  r.entries[0].bytes = random_bytes(3 * kSlot, 31);
  ASSERT_NO_FATAL_FAILURE(r.in_session());
  r.peer(r.offer(0));
  ASSERT_TRUE(r.settle_until_sent(T::Take));
  ASSERT_TRUE(r.file_chunk(0, 0, kSlot, 0));
  ASSERT_TRUE(r.settle_idle());
  {
    ASSERT_TRUE(r.gate.hold());
    ASSERT_TRUE(r.file_chunk(0, kSlot, kSlot, 1));  // its write fails: the disk is full
    r.slots_taken_behind_gate();
    FileSizeLimit limit(kSlot);
    r.gate.add();
    r.gate.open_next();
    ASSERT_TRUE(r.gate.reached(3));
  }
  r.gate.open_all();
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict));
  EXPECT_EQ(r.verdict_of(0).value().code, V::StorageError);
  ASSERT_TRUE(r.settle_idle());
  EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);  // its temporary is gone
  EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
  // The sender's last chunk and FileDone were on their way: dropped, the slot comes back.
  const std::size_t credits = r.sent_count<proto::Credit>();
  ASSERT_TRUE(r.file_chunk(0, 2 * kSlot, kSlot, 0));
  r.file_done(0);
  ASSERT_TRUE(r.settle_until_sent(T::Credit, credits + 1));
  EXPECT_EQ(r.h.state(), S::InSession);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Error>().empty());
  // The next entry goes through.
  r.peer(r.offer(1));
  ASSERT_TRUE(r.settle_until_sent(T::Take, 2));
  ASSERT_TRUE(r.file_chunk(1, 0, 100, 0));
  ASSERT_TRUE(r.settle_idle());
  r.file_done(1);
  ASSERT_TRUE(r.settle_until_sent(T::FileVerdict, 2));
  EXPECT_EQ(r.verdict_of(1).value().code, V::Good);
  r.expect_entry_final(1);
}

}  // namespace driver_session_test
}  // namespace rdmax::test::receiver_rig
