// The receiver's data-phase rules (docs/PROTOCOL.md 5.3-5.5; protocol/receive_ledger.hpp)
// through the real Connection over the fake transport: what a Chunk must obey, the keys of
// the Credits, and what becomes of the file when a step of the driver's own fails.

#include <gtest/gtest.h>

#include <array>
#include <set>

#include "receiver_driver_rig.hpp"

namespace rdmax::test::receiver_rig {
namespace {

// ---- The data-phase rules (PROTOCOL.md 5.3, 5.4), through the driver ----

struct BadChunk {
  std::string name;
  Step before;  // what arrived first
  proto::Chunk chunk;
  const char* breach;  // the ReceiveError the Error names
};

std::ostream& operator<<(std::ostream& out, const BadChunk& b) {
  return out << b.name;
}

std::string bad_chunk_name(const ::testing::TestParamInfo<BadChunk>& p) {
  return p.param.name;
}

class ReceiverDriverChunkRules : public ::testing::TestWithParam<BadChunk> {
 protected:
  Rig r;
};

TEST_P(ReceiverDriverChunkRules, BreachIsAViolationAndLeavesNoFile) {
  const BadChunk& bad = GetParam();
  ASSERT_NO_FATAL_FAILURE(r.receiving());
  if (bad.before != nullptr) bad.before(r);
  const std::size_t sent = r.h.transport.sent.size();
  const std::size_t stepped = r.steps().size();
  r.write(bad.chunk.offset, bad.chunk.length, bad.chunk.slot);
  EXPECT_TRUE(took(r.steps(), stepped, "InSession", "ProtocolViolation"))
      << steps_since(r.steps(), stepped);
  ASSERT_GT(r.h.transport.sent.size(), sent);
  EXPECT_EQ(std::get<proto::Error>(r.h.transport.sent[sent].message).text,
            std::string("chunk breaks the data rules: ") + bad.breach);
  r.check({S::Closing, {error(ErrorCode::ProtocolViolation)}, File::None, End::Disconnects}, sent);
}

INSTANTIATE_TEST_SUITE_P(
    Breaches, ReceiverDriverChunkRules,
    ::testing::Values(BadChunk{"WrongOffset", nullptr, {kSlot, kSlot, 0}, "WrongOffset"},
                      BadChunk{"ShortLength", nullptr, {0, 100, 0}, "WrongLength"},
                      BadChunk{"LongerThanTheSlot", nullptr, {0, 2 * kSlot, 0}, "WrongLength"},
                      BadChunk{"ZeroLength", nullptr, {0, 0, 0}, "WrongLength"},
                      BadChunk{"FutureSlot", nullptr, {0, kSlot, 2}, "SlotOutOfRange"},
                      BadChunk{"SlotBeingStored",
                               [](Rig& r) { ASSERT_TRUE(r.chunk(0)); },
                               {kSlot, kSlot, 0},
                               "SlotNotCredited"},
                      BadChunk{"AfterTheLast",
                               [](Rig& r) {
                                 ASSERT_TRUE(r.chunk(0));
                                 ASSERT_TRUE(r.chunk(1));
                               },
                               {2 * kSlot, kSlot, 0},
                               "PastEnd"}),
    bad_chunk_name);

TEST(ReceiverDriverLedger, LastChunkOfTheWrongLengthIsAViolation) {
  Rig r;
  r.bytes = random_bytes(kSlot + 100);
  r.receiving();
  ASSERT_TRUE(r.chunk(0));
  r.write(kSlot, kSlot, 1);  // 100 bytes are due
  EXPECT_EQ(r.h.state(), S::Closing);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).text,
            "chunk breaks the data rules: WrongLength");
}

TEST(ReceiverDriverLedger, StaleKeyFailsAtTheWriterAndTheFreshOneWorks) {
  Rig r;
  r.bytes = random_bytes(3 * kSlot);
  r.receiving();
  const std::uint32_t stale = r.h.transport.latest_rkey(0);
  ASSERT_TRUE(r.chunk(0));
  ASSERT_TRUE(r.settle_idle());  // stored, and slot 0 credited again
  const std::uint32_t fresh = r.h.transport.latest_rkey(0);
  ASSERT_NE(fresh, stale);
  const auto slot0 = r.accept().region_addr;
  EXPECT_FALSE(r.h.transport.write_remote(slot0, stale, std::span(r.bytes).first(8)));
  EXPECT_TRUE(r.h.transport.write_remote(slot0, fresh, std::span(r.bytes).first(8)));
  ASSERT_TRUE(r.chunk(1));
  EXPECT_TRUE(r.chunk(2));  // slot 0 again, with its fresh key
  EXPECT_EQ(r.h.state(), S::InSession);
}

TEST(ReceiverDriverLedger, WriteOutsideItsSlotFails) {
  Rig r;
  r.receiving();
  const auto a = r.accept();
  // Slot 0's key does not reach into slot 1, nor does any key beyond the window.
  EXPECT_FALSE(r.h.transport.write_remote(a.region_addr + kSlot - 8, r.h.transport.latest_rkey(0),
                                          std::span(r.bytes).first(16)));
  EXPECT_FALSE(r.h.transport.write_remote(a.region_addr + kSlot, r.h.transport.latest_rkey(0),
                                          std::span(r.bytes).first(8)));
  EXPECT_FALSE(r.h.transport.write_remote(a.region_addr + 2 * kSlot, r.h.transport.latest_rkey(1),
                                          std::span(r.bytes).first(8)));
}

// Each stored chunk gives back exactly its own slot, under a key no Credit had before, and
// none is given back once every byte has arrived: no slot is ever credited twice.
TEST(ReceiverDriverLedger, CreditsAreFreshAndNeverDuplicated) {
  Rig r;
  r.bytes = random_bytes(6 * kSlot + 10);  // 7 chunks through 2 slots
  r.receiving();
  std::set<std::uint32_t> keys{r.h.transport.latest_rkey(0), r.h.transport.latest_rkey(1)};
  ASSERT_EQ(keys.size(), 2u);
  for (std::uint32_t i = 0; i < 7; ++i) {
    const std::size_t before = r.h.transport.sent_of<proto::Credit>().size();
    ASSERT_TRUE(r.chunk(i)) << "chunk " << i;
    ASSERT_TRUE(r.settle_idle());
    const auto credits = r.h.transport.sent_of<proto::Credit>();
    if (i == 6) {
      EXPECT_EQ(credits.size(), before) << "a credit after the last byte";
      continue;
    }
    ASSERT_EQ(credits.size(), before + 1) << "chunk " << i;
    EXPECT_EQ(credits.back().slot, i % 2);
    EXPECT_TRUE(keys.insert(credits.back().rkey).second) << "a key given twice";
  }
  r.done();
  ASSERT_TRUE(r.settle_until_sent(T::Verdict));
  EXPECT_EQ(r.h.state(), S::InSession);
  EXPECT_EQ(read_file(r.h.dir.path() / r.name), std::string(r.bytes.begin(), r.bytes.end()));
}

// ---- Failures of the actions of a transition into Closing ----

// 4.5: every way out before the verdict removes the temporary; a bad verdict that cannot be
// posted is still a way out.
TEST(ReceiverDriverFailures, BadVerdictThatCannotBePostedStillDiscardsAndDisconnects) {
  Rig r;
  r.digest = Digest{};
  r.all_stored();
  r.h.transport.fail_one_send_after = 0;  // the Verdict
  r.done();
  // The Verdict could not be posted: a failure of our own, which ends the connection.
  EXPECT_NE(r.h.state(), S::InSession);
  r.h.transport.complete_sends();
  ASSERT_TRUE(r.settle_idle());
  EXPECT_TRUE(r.h.transport.disconnected || r.h.transport.shut);
  r.expect_file(File::None);
}

TEST(ReceiverDriverLedger, CommitRacingAnAbortKeepsTheCommittedFileAndEnds) {
  // PROTOCOL.md 5.5: a connection lost while the receiver commits cannot call the fsync and
  // rename back: the file may appear although no verdict reached the sender. Here the
  // commit job has renamed the file into place when the sender vanishes, before the loop
  // took the commit's result: the connection still ends, and the file is whole.
  Rig r;
  r.all_stored();
  ASSERT_TRUE(r.gate.hold());
  r.done();
  r.gate.add();
  r.gate.open_next();
  ASSERT_TRUE(r.gate.reached(2));  // the commit ran; its result waits
  ASSERT_EQ(r.h.state(), S::InSession);
  r.disconnected();
  r.gate.open_all();
  ASSERT_TRUE(r.settle_idle());
  EXPECT_EQ(r.h.state(), S::Closed);
  EXPECT_TRUE(r.h.transport.sent_of<proto::Verdict>().empty());
  EXPECT_EQ(read_file(r.h.dir.path() / r.name), std::string(r.bytes.begin(), r.bytes.end()));
  EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);  // no temporary left open
}

}  // namespace
}  // namespace rdmax::test::receiver_rig
