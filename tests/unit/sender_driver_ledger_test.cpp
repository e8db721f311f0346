// The sender's data-phase rules (docs/PROTOCOL.md 5.2, 5.3; protocol/send_ledger.hpp)
// through the real SenderConnection over the fake transport: which Credits it refuses, the
// keys and slots its WRITEs use, that no chunk follows the last; what becomes of it when a
// step of its own fails; and, through a Link to a real receiver, a whole transfer and a
// WRITE with a stale key.

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <optional>
#include <set>

#include "common/merkle.hpp"
#include "sender_driver_rig.hpp"

namespace rdmax::test::sender_rig {
namespace {

// ---- The data-phase rules (PROTOCOL.md 5.2, 5.3), through the driver ----

struct BadCredit {
  std::string name;
  Step reach;
  std::optional<proto::Credit> first;  // a well-formed one before it
  proto::Credit credit;
  S state;
  const char* breach;  // the CreditError the Error names
};

std::ostream& operator<<(std::ostream& out, const BadCredit& b) {
  return out << b.name;
}

class SenderDriverCreditRules : public ::testing::TestWithParam<BadCredit> {
 protected:
  Rig r;
};

TEST_P(SenderDriverCreditRules, BreachIsAProtocolError) {
  const BadCredit& bad = GetParam();
  bad.reach(r);
  ASSERT_FALSE(HasFatalFailure());
  if (bad.first) {
    r.h.receive(*bad.first);
    ASSERT_EQ(r.h.state(), bad.state);
  }
  const std::size_t sent = r.h.transport.sent.size();
  const std::size_t writes = r.h.transport.writes.size();
  const std::size_t logged = r.log.size();
  r.h.receive(bad.credit);
  EXPECT_TRUE(r.log.took(logged, bad.state, E::ProtocolViolation)) << r.log.since(logged);
  r.check({S::Closing, {error(ErrorCode::ProtocolViolation)}, O::ProtocolError, End::Disconnects},
          sent);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).text,
            std::string("bad credit: ") + bad.breach);
  EXPECT_EQ(r.h.transport.writes.size(), writes);
}

std::string bad_credit_name(const ::testing::TestParamInfo<BadCredit>& p) {
  return p.param.name;
}

INSTANTIATE_TEST_SUITE_P(
    Breaches, SenderDriverCreditRules,
    ::testing::Values(
        // Slot 0's chunk is in flight: its next credit is fine, a second one is not.
        BadCredit{"DuplicateWhileSending",
                  [](Rig& r) { r.sending(); },
                  proto::Credit{0, 300},
                  {0, 301},
                  S::Sending,
                  "AlreadyHeld"},
        BadCredit{"DuplicateAfterDone",
                  [](Rig& r) { r.await_verdict(); },
                  proto::Credit{1, 300},
                  {1, 301},
                  S::AwaitVerdict,
                  "AlreadyHeld"},
        BadCredit{"FutureSlotWhileSending",
                  [](Rig& r) { r.sending(); },
                  {},
                  {2, 300},
                  S::Sending,
                  "SlotOutOfRange"},
        BadCredit{"FutureSlotAfterDone",
                  [](Rig& r) { r.await_verdict(); },
                  {},
                  {2, 300},
                  S::AwaitVerdict,
                  "SlotOutOfRange"}),
    bad_credit_name);

// A receiver that credits each chunk's slot back at once (unless every chunk is out) with
// a new key each time. Returns the keys it gave, slot by slot, in order.
std::map<std::uint32_t, std::vector<std::uint32_t>> run_data_phase(Rig& r) {
  std::map<std::uint32_t, std::vector<std::uint32_t>> keys{{0, {100}}, {1, {101}}};
  std::uint32_t next_key = 1000;
  std::size_t seen = 0;
  const std::uint64_t chunk_count = (r.h.bytes.size() + kSlot - 1) / kSlot;
  for (int round = 0; round < 100 && r.h.state() == S::Sending; ++round) {
    const auto chunks = r.chunks();
    for (; seen < chunks.size(); ++seen) {
      if (chunks.size() == chunk_count) break;  // the last chunk is out: no more credits
      keys[chunks[seen].slot].push_back(next_key);
      r.h.receive(proto::Credit{chunks[seen].slot, next_key++});
    }
    r.h.complete_sends();
  }
  return keys;
}

// Each WRITE goes to its slot's address with the key of that slot's latest Credit, and no
// key is used twice: a stale key is never written with.
TEST(SenderDriverLedger, WritesUseTheLatestKeyOfTheirSlot) {
  Rig r;
  r.h.source(random_bytes(7 * kSlot + 10));
  r.sending();
  const auto keys = run_data_phase(r);
  ASSERT_EQ(r.h.state(), S::AwaitVerdict);
  const auto chunks = r.chunks();
  ASSERT_EQ(chunks.size(), r.h.transport.writes.size());
  std::map<std::uint32_t, std::size_t> used;  // per slot, how many of its keys were used
  std::set<std::uint32_t> written_with;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const auto& w = r.h.transport.writes[i];
    const std::uint32_t slot = chunks[i].slot;
    EXPECT_EQ(w.remote_addr, r.accept.region_addr + std::uint64_t{slot} * kSlot);
    EXPECT_EQ(w.rkey, keys.at(slot).at(used[slot]++)) << "chunk " << i;
    EXPECT_TRUE(written_with.insert(w.rkey).second) << "key " << w.rkey << " written twice";
  }
}

// The chunks are the plan (5.2): in order, slot_size bytes but the last, each in a slot it
// held a credit for; nothing follows the last, whatever credits trail in.
TEST(SenderDriverLedger, ChunksFollowThePlanAndNoneFollowsTheLast) {
  Rig r;
  r.h.source(random_bytes(7 * kSlot + 10));
  r.sending();
  run_data_phase(r);
  ASSERT_EQ(r.h.state(), S::AwaitVerdict);
  r.h.receive(proto::Credit{0, 7000});  // trailing credits, for slots it does not hold
  r.h.receive(proto::Credit{1, 7001});
  EXPECT_EQ(r.h.state(), S::AwaitVerdict);
  const auto chunks = r.chunks();
  ASSERT_EQ(chunks.size(), 8u);
  std::uint64_t offset = 0;
  for (const auto& c : chunks) {
    EXPECT_EQ(c.offset, offset);
    EXPECT_EQ(c.length, std::min<std::uint64_t>(kSlot, r.h.bytes.size() - offset));
    EXPECT_LT(c.slot, 2u);
    EXPECT_TRUE(std::equal(r.h.transport.writes[offset / kSlot].bytes.begin(),
                           r.h.transport.writes[offset / kSlot].bytes.end(),
                           r.h.bytes.begin() + static_cast<std::ptrdiff_t>(offset)));
    offset += c.length;
  }
  EXPECT_EQ(offset, r.h.bytes.size());
  EXPECT_EQ(r.h.transport.writes.size(), 8u);
  EXPECT_EQ(r.h.transport.sent_of<proto::Done>().at(0).total_bytes, r.h.bytes.size());
}

// ---- Failures of the actions of a transition into Closing ----

// PROTOCOL.md 4.4: if even the Error cannot be posted, the queue pair is stopped and the
// connection released without another word. A receiver that stops acknowledging (RNR retry
// is infinite) fills the send queue, so the Error that reports its timeout cannot be posted.
TEST(SenderDriverFailures, TimeoutWhoseErrorCannotBePostedStillFinishes) {
  Rig r;
  r.await_verdict();
  r.h.transport.send_capacity = r.h.transport.sends_in_flight();
  r.tick_late();
  r.tick_late();  // past any close grace too
  EXPECT_TRUE(r.h.driver->finished());
  EXPECT_EQ(r.h.driver->outcome(), O::ConnectionLost);
}

// An interrupt is answered at once, even when the Error cannot be posted.
TEST(SenderDriverFailures, InterruptWhoseErrorCannotBePostedStillDisconnects) {
  Rig r;
  r.await_verdict();
  r.h.transport.send_capacity = r.h.transport.sends_in_flight();
  r.h.driver->interrupt(SIGINT);
  EXPECT_TRUE(r.h.transport.shut || r.h.transport.disconnected);
  EXPECT_EQ(r.h.driver->outcome(), O::Interrupted);
}

// ---- Both drivers, through the Link ----

struct Pair {
  LogCapture log;
  ReceiverHarness receiver;
  SenderHarness sender;
  Link link{receiver, sender};

  explicit Pair(std::size_t bytes,
                proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::WholeFileSha256,
                std::uint32_t slot_size = kSlot, std::optional<std::uint64_t> corrupt_at = {}) {
    receiver.options.slots = 2;
    sender.settings.inject_corruption = corrupt_at;
    receiver.options.slot_size = slot_size;
    sender.source(random_bytes(bytes));
    if (algorithm == proto::DigestAlgorithm::FsVeritySha256)
      sender.digest = {algorithm, merkle::digest_of(sender.bytes)};
    receiver.start();
    sender.start();
    sender.driver->on_address_resolved();
    sender.driver->on_route_resolved();
    sender.driver->on_established();
  }
  ~Pair() {
    receiver.settle([&] { return receiver.connection->idle(); });
  }
  // DISCONNECTED reaches the other side once one side called rdma_disconnect.
  void pass_disconnects() {
    if (receiver.transport.disconnected && !sender.driver->finished())
      sender.driver->on_disconnected();
    if (sender.transport.disconnected && !receiver.connection->closed())
      receiver.connection->on_disconnected();
  }
};

TEST(SenderDriverLink, TransferThroughBothDrivers) {
  Pair p(5 * kSlot + 1);
  p.sender.settings.id = "alice";
  ASSERT_TRUE(p.link.run_until([&] {
    p.pass_disconnects();
    return p.sender.driver->finished() && p.receiver.connection->closed();
  }));
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.driver->secret(), "s3cret");
  EXPECT_EQ(read_file(p.receiver.dir.path() / "f.bin"),
            std::string(p.sender.bytes.begin(), p.sender.bytes.end()));
}

// The fs-verity digest end to end: the receiver hashes the chunks on its pool and folds
// the tree; slots of one block, and slots of whole 128-block groups and a half.
TEST(SenderDriverLink, TransferVerifiedByTheFsVerityDigest) {
  for (std::uint32_t slot : {kSlot, 192 * kSlot}) {
    Pair p(3 * 192 * kSlot + 77, proto::DigestAlgorithm::FsVeritySha256, slot);
    ASSERT_TRUE(p.link.run_until([&] {
      p.pass_disconnects();
      return p.sender.driver->finished() && p.receiver.connection->closed();
    }));
    EXPECT_EQ(p.sender.driver->outcome(), O::Success);
    const auto verdicts = p.receiver.transport.sent_of<proto::Verdict>();
    ASSERT_EQ(verdicts.size(), 1u);
    EXPECT_EQ(verdicts[0].received_digest, p.sender.digest.value);
    EXPECT_EQ(read_file(p.receiver.dir.path() / "f.bin"),
              std::string(p.sender.bytes.begin(), p.sender.bytes.end()));
    EXPECT_NE(p.log.since(0).find("fsverity-sha256"), std::string::npos);
  }
}

TEST(SenderDriverLink, AFlippedByteFailsTheFsVerityDigest) {
  Pair p(40 * kSlot + 5, proto::DigestAlgorithm::FsVeritySha256, kSlot, 17 * kSlot + 3);
  ASSERT_TRUE(p.link.run_until([&] {
    p.pass_disconnects();
    return p.sender.driver->finished() && p.receiver.connection->closed();
  }));
  EXPECT_EQ(p.sender.driver->outcome(), O::HashMismatch);
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "f.bin"));
}

// 5.4: a WRITE with a key the receiver revoked fails at the writer. A receiver that handed
// slot 0's old key back (instead of a fresh one) breaks the sender's next WRITE into it:
// the sender's queue pair fails and reports a lost connection, and the Chunk after that
// WRITE never reaches the receiver.
TEST(SenderDriverLink, WriteWithAStaleKeyFailsAtTheReceiver) {
  Pair p(4 * kSlot);
  std::optional<std::uint32_t> first_key;
  p.link.tamper = [&](proto::Message& m) {
    if (auto* c = std::get_if<proto::Credit>(&m); c != nullptr && c->slot == 0) {
      if (first_key) c->rkey = *first_key;  // the key it revoked when chunk 0 arrived
      first_key = c->rkey;
    }
  };
  ASSERT_TRUE(p.link.run_until([&] { return p.sender.driver->finished(); }));
  EXPECT_TRUE(p.link.broken);
  EXPECT_EQ(p.sender.driver->outcome(), O::ConnectionLost);
  EXPECT_GE(p.sender.transport.sent_of<proto::Chunk>().size(), 3u);
  // The receiver took chunks 0 and 1 only, and credited both back.
  const std::string log = p.log.since(0);
  std::size_t taken = 0;
  for (auto at = log.find("--GotChunk-->"); at != std::string::npos;
       at = log.find("--GotChunk-->", at + 1))
    ++taken;
  EXPECT_EQ(taken, 2u);
  ASSERT_TRUE(p.receiver.settle([&] { return p.receiver.connection->idle(); }));
  EXPECT_EQ(p.receiver.state(), proto::ReceiverState::Receiving);
  EXPECT_EQ(p.receiver.transport.sent_of<proto::Credit>().size(), 4u);
  p.receiver.connection->on_disconnected();
  EXPECT_EQ(p.receiver.state(), proto::ReceiverState::Closed);
  ASSERT_TRUE(p.receiver.settle([&] { return p.receiver.connection->idle(); }));
  EXPECT_TRUE(std::filesystem::is_empty(p.receiver.dir.path()));
}

}  // namespace
}  // namespace rdmax::test::sender_rig
