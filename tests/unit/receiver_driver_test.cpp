// The receiver's connection driver, driven message by message through the fake transport:
// what it sends, what it writes to disk, and how it ends, for the paths of docs/PROTOCOL.md
// sections 4.5 and 5.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <filesystem>

#include "driver_harness.hpp"

namespace rdmax::test {
namespace {

using proto::ReceiverState;

class ReceiverDriver : public ::testing::Test {
 protected:
  ReceiverHarness h;

  // Hello -> Accept + one Credit per slot, for `bytes` named `name`.
  void offer(const std::vector<std::uint8_t>& bytes, const std::string& name = "f.bin",
             std::uint16_t version = proto::kVersion1, std::uint32_t keepalive_ms = 0) {
    h.start();
    proto::Hello hello{bytes.size(), sha256_of(bytes), 0, name};
    hello.keepalive_ms = keepalive_ms;
    h.send(hello, version);
    // Served as entry 0 of a session (receiver/hello_edge.hpp): answered by an Accept, a
    // Have or a Reject once the file is checked.
    ASSERT_TRUE(h.settle([&] { return answered(); }));
  }
  bool answered() const {
    return !h.transport.sent_of<proto::Accept>().empty() ||
           !h.transport.sent_of<proto::Have>().empty() ||
           !h.transport.sent_of<proto::Reject>().empty() || h.state() != ReceiverState::InSession;
  }
  bool verdict_sent() const { return !h.transport.sent_of<proto::Verdict>().empty(); }
  proto::Accept accept() const { return h.transport.sent_of<proto::Accept>().at(0); }
  // The peer WRITEs chunk [offset, offset+length) into `slot` and announces it.
  bool write_chunk(const std::vector<std::uint8_t>& bytes, std::uint64_t offset,
                   std::uint32_t length, std::uint32_t slot, std::uint16_t version = 1) {
    EXPECT_NE(h.transport.latest_rkey(slot), 0u) << "slot " << slot << " was never credited";
    const bool landed = h.transport.write_slot(
        slot, std::span(bytes).subspan(static_cast<std::size_t>(offset), length));
    h.send(proto::Chunk{offset, length, slot}, version);
    return landed;
  }
};

TEST_F(ReceiverDriver, StoresAVerifiedFileAndGivesTheSecret) {
  const auto bytes = random_bytes(3 * 4096 + 100);
  offer(bytes);
  ASSERT_EQ(h.state(), ReceiverState::InSession);
  EXPECT_EQ(accept().slot_count, 4u);
  EXPECT_EQ(h.transport.sent_of<proto::Credit>().size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    const std::uint64_t offset = std::uint64_t{i} * 4096;
    ASSERT_TRUE(write_chunk(bytes, offset, i < 3 ? 4096 : 100, i));
  }
  h.send(proto::Done{bytes.size()});
  ASSERT_TRUE(h.settle([&] { return verdict_sent(); }));
  const auto verdicts = h.transport.sent_of<proto::Verdict>();
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].code, proto::VerdictCode::Good);
  EXPECT_EQ(verdicts[0].received_digest, sha256_of(bytes));
  EXPECT_EQ(read_file(h.dir.path() / "f.bin"), std::string(bytes.begin(), bytes.end()));
  // Every slot's key was revoked at Done: nothing can write into the window any more.
  EXPECT_EQ(h.transport.live_regions(), 0u);
  h.send(proto::Id{"alice"});
  ASSERT_EQ(h.transport.sent_of<proto::Secret>().size(), 1u);
  EXPECT_EQ(h.transport.sent_of<proto::Secret>()[0].secret, "s3cret");
  EXPECT_EQ(h.state(), ReceiverState::Closing);
  EXPECT_FALSE(h.transport.disconnected);  // not before the Secret's SEND completed
  h.transport.complete_sends();
  h.poll();
  EXPECT_TRUE(h.transport.disconnected);
  h.connection->on_disconnected();
  EXPECT_EQ(h.state(), ReceiverState::Closed);
  EXPECT_TRUE(h.connection->reapable());
  for (const auto& s : h.transport.sent) EXPECT_EQ(s.version, proto::kVersion1);
}

// A slot whose key the device will not revoke may still be written by whoever holds the
// key: nothing of it is read (not hashed, not stored), and the connection ends.
TEST_F(ReceiverDriver, AChunkWhoseSlotCannotBeRevokedIsNeverReadAndEndsTheConnection) {
  const auto bytes = random_bytes(8 * 4096);
  offer(bytes);
  h.transport.fail_deregistration_after = 0;
  ASSERT_TRUE(write_chunk(bytes, 0, 4096, 0));
  ASSERT_TRUE(
      h.settle([&] { return h.connection->idle() && h.state() != ReceiverState::InSession; }));
  EXPECT_EQ(h.transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::Internal);
  EXPECT_EQ(h.metrics.written_bytes.load(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(h.dir.path()));
}

TEST_F(ReceiverDriver, ForeignVersionGetsRejectInVersion1) {
  h.start();
  std::vector<std::uint8_t> bytes = proto::encode(proto::Bye{}, proto::kVersion1);
  bytes[4] = 9;  // version 9
  h.transport.deliver_bytes(bytes);
  h.poll();
  ASSERT_EQ(h.transport.sent.size(), 1u);
  const auto reject = h.transport.sent_of<proto::Reject>().at(0);
  EXPECT_EQ(reject.reason, proto::RejectReason::UnsupportedVersion);
  EXPECT_EQ(h.transport.sent[0].version, proto::kVersion1);
  EXPECT_EQ(h.state(), ReceiverState::Closing);
}

// PROTOCOL.md 7.13: a fetcher that connects to a receiver is refused with an Error that says
// in words where to fetch from; nothing is created.
TEST_F(ReceiverDriver, AFetchIsRefusedNamingWhereToFetchFrom) {
  h.start();
  h.transport.deliver(proto::Fetch{0, 0, 1, {}}, proto::kVersion2);
  h.poll();
  ASSERT_EQ(h.transport.sent.size(), 1u);
  const auto error = h.transport.sent_of<proto::Error>().at(0);
  EXPECT_EQ(error.code, proto::ErrorCode::ProtocolViolation);
  EXPECT_NE(error.text.find("rdma-send --serve"), std::string::npos) << error.text;
  EXPECT_EQ(h.transport.sent[0].version, proto::kVersion2);
  EXPECT_EQ(h.state(), ReceiverState::Closing);
  EXPECT_TRUE(std::filesystem::is_empty(h.dir.path()));
}

// PROTOCOL.md 7.1: an undecodable first message is answered Error(ProtocolViolation) in the
// version its header names when that is one the receiver speaks (here 2), else in version 1.
TEST_F(ReceiverDriver, UndecodableFirstMessageIsAnsweredInTheVersionItsHeaderNames) {
  h.start();
  h.transport.deliver_bytes(undecodable(proto::kVersion2));
  h.poll();
  ASSERT_EQ(h.transport.sent.size(), 1u);
  EXPECT_EQ(h.transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
  EXPECT_EQ(h.transport.sent[0].version, proto::kVersion2);
  EXPECT_EQ(h.state(), ReceiverState::Closing);
}

TEST_F(ReceiverDriver, FirstMessageWithoutTheMagicIsAnsweredInVersion1) {
  h.start();
  std::vector<std::uint8_t> bytes = proto::encode(proto::Bye{}, proto::kVersion2);
  bytes[0] = 'X';
  h.transport.deliver_bytes(bytes);
  h.poll();
  ASSERT_EQ(h.transport.sent.size(), 1u);
  EXPECT_EQ(h.transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
  EXPECT_EQ(h.transport.sent[0].version, proto::kVersion1);
}

TEST_F(ReceiverDriver, Version2ConnectionAnswersInVersion2AndKeepsTheSenderInformed) {
  const auto bytes = random_bytes(4096);
  offer(bytes, "v2.bin", proto::kVersion2, 200);
  ASSERT_EQ(h.state(), ReceiverState::InSession);
  for (const auto& s : h.transport.sent) EXPECT_EQ(s.version, proto::kVersion2);
  ASSERT_TRUE(write_chunk(bytes, 0, 4096, 0, proto::kVersion2));
  h.send(proto::Done{bytes.size()}, proto::kVersion2);
  // Without running the pool's completions, the connection stays busy storing/committing:
  // a tick a keepalive period later sends a Working.
  const std::size_t before = h.transport.sent_of<proto::Working>().size();
  h.connection->tick(Clock::now() + std::chrono::milliseconds(250));
  EXPECT_EQ(h.transport.sent_of<proto::Working>().size(), before + 1);
  ASSERT_TRUE(h.settle([&] { return verdict_sent(); }));
  // No Working once the verdict is out.
  const std::size_t after = h.transport.sent_of<proto::Working>().size();
  h.connection->tick(Clock::now() + std::chrono::seconds(1));
  EXPECT_EQ(h.transport.sent_of<proto::Working>().size(), after);
}

// PROTOCOL.md 7.3: a Hello's Working names what its one file waits for (the entries make it,
// receiver/incoming_entries.cpp working()): being created, then stored.
TEST_F(ReceiverDriver, AHellosWorkingNamesWhatItsFileWaitsFor) {
  const auto bytes = random_bytes(4096);
  h.start();
  proto::Hello hello{bytes.size(), sha256_of(bytes), 0, "phases.bin"};
  hello.keepalive_ms = 200;
  h.send(hello, proto::kVersion2);
  // The file's creation has not come back (no completion has run): Preparing.
  h.connection->tick(Clock::now() + std::chrono::milliseconds(250));
  auto workings = h.transport.sent_of<proto::Working>();
  ASSERT_EQ(workings.size(), 1u);
  EXPECT_EQ(workings[0].phase, proto::WorkPhase::Preparing);
  ASSERT_TRUE(h.settle([&] { return answered(); }));
  ASSERT_TRUE(write_chunk(bytes, 0, 4096, 0, proto::kVersion2));
  h.send(proto::Done{bytes.size()}, proto::kVersion2);
  // Its chunk is being stored (its completion has not run): Storing.
  h.connection->tick(Clock::now() + std::chrono::milliseconds(500));
  workings = h.transport.sent_of<proto::Working>();
  ASSERT_EQ(workings.size(), 2u);
  EXPECT_EQ(workings[1].phase, proto::WorkPhase::Storing);
  ASSERT_TRUE(h.settle([&] { return verdict_sent(); }));
}

TEST_F(ReceiverDriver, Version1SenderGetsNoWorking) {
  const auto bytes = random_bytes(4096);
  offer(bytes);
  h.connection->tick(Clock::now() + std::chrono::seconds(1));
  EXPECT_TRUE(h.transport.sent_of<proto::Working>().empty());
}

TEST_F(ReceiverDriver, MessageOfAnotherVersionMidConnectionIsAViolation) {
  const auto bytes = random_bytes(4096);
  offer(bytes, "mixed.bin", proto::kVersion2, 0);
  h.send(proto::Done{bytes.size()}, proto::kVersion1);
  EXPECT_EQ(h.state(), ReceiverState::Closing);
  EXPECT_EQ(h.transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
}

TEST_F(ReceiverDriver, FailureWhileHandlingAFailureReleasesWithoutAWord) {
  const auto bytes = random_bytes(8 * 4096);
  offer(bytes);
  h.transport.fail_registration_after = 0;
  h.transport.fail_send_after = 0;  // the Error cannot be posted either
  ASSERT_TRUE(write_chunk(bytes, 0, 4096, 0));
  ASSERT_TRUE(h.settle([&] { return h.state() == ReceiverState::Closed; }));
  EXPECT_TRUE(h.transport.shut);
  EXPECT_TRUE(h.transport.sent_of<proto::Error>().empty());
}

// The Open's deadline runs from ESTABLISHED: a handshake that outlasts --timeout (under loss
// a lost REP or RTU is resent after about 4 s) is not held against the sender; a bound of its
// own ends one that never finishes.
TEST_F(ReceiverDriver, TheOpensDeadlineRunsFromEstablished) {
  h.connection.emplace(h.transport, "peer", h.context, h.kPeerAddress);  // CONNECT_REQUEST
  EXPECT_STREQ(h.connection->waiting_for(), "the connection to be established");
  h.connection->tick(Clock::now() + std::chrono::seconds(6));
  EXPECT_EQ(h.state(), ReceiverState::AwaitOpen);
  h.connection->on_established();
  EXPECT_STREQ(h.connection->waiting_for(), "Open or Hello");
  h.connection->tick(Clock::now() + std::chrono::seconds(6));
  EXPECT_EQ(h.state(), ReceiverState::Closing);
  EXPECT_EQ(h.transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::Timeout);
}

TEST_F(ReceiverDriver, AHandshakeThatNeverEndsIsBounded) {
  h.connection.emplace(h.transport, "peer", h.context, h.kPeerAddress);
  h.connection->tick(Clock::now() + std::chrono::seconds(29));
  EXPECT_EQ(h.state(), ReceiverState::AwaitOpen);
  h.connection->tick(Clock::now() + std::chrono::seconds(31));
  EXPECT_NE(h.state(), ReceiverState::AwaitOpen);
}

TEST_F(ReceiverDriver, DisconnectRacingTheLastMessageHandlesTheMessageFirst) {
  const auto bytes = random_bytes(100);
  offer(bytes);
  ASSERT_TRUE(write_chunk(bytes, 0, 100, 0));
  h.send(proto::Done{bytes.size()});
  ASSERT_TRUE(h.settle([&] { return verdict_sent(); }));
  // The Id is in the CQ when DISCONNECTED arrives on the CM channel.
  h.transport.deliver(proto::Id{"alice"});
  h.connection->on_disconnected();
  EXPECT_EQ(h.state(), ReceiverState::Closed);
  EXPECT_EQ(h.transport.sent_of<proto::Secret>().size(), 1u);
}

// PROTOCOL 7.2: an extension the receiver does not know is ignored (ReceiverRules), unless the
// sender marked it must-understand, which refuses the offer before any file exists.
TEST_F(ReceiverDriver, MustUnderstandHelloExtensionIsRejectedInVersion2) {
  h.start();
  proto::Hello hello{10, {}, 0, "ext.bin"};
  hello.extensions = {{0x0001, ""}, {proto::kExtensionMustUnderstand | 0x0007, "x"}};
  h.send(hello, proto::kVersion2);
  ASSERT_TRUE(h.settle([&] { return answered(); }));
  const auto rejects = h.transport.sent_of<proto::Reject>();
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_EQ(rejects[0].reason, proto::RejectReason::UnsupportedVersion);
  EXPECT_NE(rejects[0].text.find("0x8007"), std::string::npos) << rejects[0].text;
  EXPECT_EQ(h.transport.sent[0].version, proto::kVersion2);
  EXPECT_TRUE(h.transport.sent_of<proto::Accept>().empty());
  EXPECT_EQ(open_files_under(h.dir.path()), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(h.dir.path()));
}

// A receiver that requires sender keys (--senders) refuses a Hello, which cannot carry one
// (PROTOCOL.md 6.2, 7.8): a version-1 Hello with UnsupportedVersion (version 1 knows no
// AuthRequired), a version-2 Hello with AuthRequired in version 2 (issue 41, hole 23).
TEST_F(ReceiverDriver, AHelloToAReceiverThatRequiresKeysIsRefusedInItsOwnVersion) {
  for (const std::uint16_t version : {proto::kVersion1, proto::kVersion2}) {
    SCOPED_TRACE(version);
    ReceiverHarness keyed;
    keyed.require_keys("alice 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n");
    keyed.start();
    const auto bytes = random_bytes(100);
    keyed.send(proto::Hello{bytes.size(), sha256_of(bytes), 0, "h.bin"}, version);
    ASSERT_TRUE(keyed.settle([&] { return !keyed.transport.sent_of<proto::Reject>().empty(); }));
    const auto reject = keyed.transport.sent_of<proto::Reject>().at(0);
    EXPECT_EQ(reject.reason, version == proto::kVersion1 ? proto::RejectReason::UnsupportedVersion
                                                         : proto::RejectReason::AuthRequired);
    EXPECT_EQ(keyed.transport.sent.at(0).version, version);
    EXPECT_NE(reject.text.find("key"), std::string::npos) << reject.text;
    EXPECT_TRUE(keyed.transport.sent_of<proto::Accept>().empty());
    EXPECT_TRUE(std::filesystem::is_empty(keyed.dir.path()));
  }
}

TEST_F(ReceiverDriver, MemoryCapRejectsBeforeCreatingAFile) {
  h.options.max_memory = 4096;  // less than the 4 slots this file would need
  offer(random_bytes(4 * 4096));
  EXPECT_EQ(h.transport.sent_of<proto::Reject>().at(0).reason, proto::RejectReason::NoMemory);
  ASSERT_TRUE(h.settle([&] { return h.connection->idle(); }));
  EXPECT_TRUE(std::filesystem::is_empty(h.dir.path()));
}

TEST_F(ReceiverDriver, EmptySendIsAViolation) {
  h.start();
  h.transport.deliver_bytes({});
  h.poll();
  EXPECT_EQ(h.state(), ReceiverState::Closing);
  EXPECT_EQ(h.transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
  EXPECT_TRUE(h.transport.sent_of<proto::Reject>().empty());
}

TEST_F(ReceiverDriver, NameLengthOutsideTheWireRuleIsAViolationNotBadName) {
  // PROTOCOL.md 3.1: name_len 1..255 is the decoder's rule.
  h.start();
  auto bytes = proto::encode(proto::Hello{1, {}, 0, std::string(255, 'n')}, proto::kVersion1);
  bytes.push_back('n');
  bytes[16 + 44] = 0x00;  // name_len = 256
  bytes[16 + 45] = 0x01;
  const auto payload = static_cast<std::uint32_t>(bytes.size() - 16);
  bytes[8] = static_cast<std::uint8_t>(payload);
  bytes[9] = static_cast<std::uint8_t>(payload >> 8);
  h.transport.deliver_bytes(bytes);
  h.poll();
  EXPECT_EQ(h.transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
  EXPECT_TRUE(h.transport.sent_of<proto::Reject>().empty());
}

// PROTOCOL.md 4.4: if even the Error cannot be posted, the queue pair is stopped and the
// connection released without another word. A sender that stops acknowledging (RNR retry
// is infinite) fills the send queue, so the Error that reports its timeout cannot be posted.
TEST_F(ReceiverDriver, FullSendQueueOnTheWayOutStillEndsTheConnectionAndDiscards) {
  const auto bytes = random_bytes(8 * 4096);
  offer(bytes);
  // The peer acknowledges nothing: every send buffer fills up, so the Error of a timeout
  // cannot be posted; the connection must still end, and the temporary go.
  h.transport.send_capacity = static_cast<std::uint32_t>(h.transport.sends_in_flight());
  h.connection->tick(Clock::now() + std::chrono::seconds(6));
  EXPECT_EQ(h.state(), ReceiverState::Closed);
  ASSERT_TRUE(h.settle([&] { return h.connection->reapable(); }));
  EXPECT_TRUE(std::filesystem::is_empty(h.dir.path()));
}

TEST_F(ReceiverDriver, AfterTheLastChunkIsStoredTheWaitForDoneIsBounded) {
  const auto bytes = random_bytes(100);
  offer(bytes);
  ASSERT_TRUE(write_chunk(bytes, 0, 100, 0));
  ASSERT_TRUE(h.settle([&] { return h.connection->idle(); }));
  EXPECT_STREQ(h.connection->waiting_for(), "the sender's next entry or chunk");
  h.connection->tick(Clock::now() + std::chrono::seconds(6));
  EXPECT_EQ(h.state(), ReceiverState::Closing);
  EXPECT_EQ(h.transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::Timeout);
}

}  // namespace
}  // namespace rdmax::test
