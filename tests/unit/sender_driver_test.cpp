// The sender's connection driver, driven message by message through the fake transport:
// what it writes and sends, how it treats credits, versions and failures, and the outcome
// it reports (docs/PROTOCOL.md sections 4.6, 5 and 7).

#include <gtest/gtest.h>

#include "common/merkle.hpp"
#include "driver_harness.hpp"

namespace rdmax::test {
namespace {

using proto::SenderOutcome;
using proto::SenderState;

// The driver's view of rdma_cm: it hands out the fake transport.
struct FakeCm final : sender::SenderCm {
  FakeTransport& transport;
  int routes = 0;
  explicit FakeCm(FakeTransport& t) : transport(t) {}
  void resolve_route() override { ++routes; }
  Transport& connect() override { return transport; }
};

class SenderDriver : public ::testing::Test {
 protected:
  TempDir dir{"rdmax-sender"};
  std::vector<std::uint8_t> bytes = random_bytes(10 * 4096 + 7);
  std::optional<InputFile> file;
  sender::SenderSettings settings;
  FakeTransport transport;
  FakeCm cm{transport};
  std::optional<sender::SenderConnection> driver;

  void SetUp() override { write_source(bytes); }
  void write_source(const std::vector<std::uint8_t>& content) {
    std::ofstream(dir.path() / "src", std::ios::binary)
        .write(reinterpret_cast<const char*>(content.data()),
               static_cast<std::streamsize>(content.size()));
    file.emplace((dir.path() / "src").string());
    bytes = content;
  }
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::WholeFileSha256;
  FileDigest digest() const {
    return {algorithm, algorithm == proto::DigestAlgorithm::WholeFileSha256
                           ? sha256_of(bytes)
                           : merkle::digest_of(bytes)};
  }
  // Up to the Hello.
  void connect(std::uint16_t version = proto::kVersion2) {
    settings.name = "f.bin";
    settings.version = version;
    settings.timeout = std::chrono::seconds(3);
    driver.emplace(settings, *file, digest(), cm, "peer");
    driver->start();
    driver->on_address_resolved();
    driver->on_route_resolved();
    driver->on_established();
  }
  void receive(const proto::Message& m, std::uint16_t version = proto::kVersion2) {
    transport.deliver(m, version);
    driver->poll();
  }
  proto::Accept accept{0x10000, 0, 4096, 4};
  void accept_and_credit(std::uint16_t version = proto::kVersion2) {
    receive(accept, version);
    for (std::uint32_t s = 0; s < accept.slot_count; ++s)
      receive(proto::Credit{s, 100 + s}, version);
  }
  std::vector<proto::Chunk> chunks() const { return transport.sent_of<proto::Chunk>(); }
};

TEST_F(SenderDriver, SendsHelloWithKeepaliveInVersion2) {
  connect();
  EXPECT_EQ(cm.routes, 1);
  ASSERT_EQ(transport.sent.size(), 1u);
  EXPECT_EQ(transport.sent[0].version, proto::kVersion2);
  const auto hello = transport.sent_of<proto::Hello>().at(0);
  EXPECT_EQ(hello.file_size, bytes.size());
  EXPECT_EQ(hello.digest, sha256_of(bytes));
  EXPECT_EQ(hello.keepalive_ms, 1000u);  // a third of the 3 s timeout
  EXPECT_EQ(hello.name, "f.bin");
}

TEST_F(SenderDriver, WritesEveryChunkUnderItsCreditsKeyAndReportsSuccess) {
  connect();
  accept_and_credit();
  // Four slots credited: four chunks written and announced, then it waits for credits.
  ASSERT_EQ(chunks().size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(chunks()[i], (proto::Chunk{std::uint64_t{i} * 4096, 4096, i}));
    EXPECT_EQ(transport.writes[i].remote_addr, accept.region_addr + std::uint64_t{i} * 4096);
    EXPECT_EQ(transport.writes[i].rkey, 100 + i);
    EXPECT_TRUE(std::equal(transport.writes[i].bytes.begin(), transport.writes[i].bytes.end(),
                           bytes.begin() + i * 4096));
  }
  // Slots come back one by one; the rest of the file follows.
  std::uint32_t key = 200;
  while (chunks().size() < 11) {
    transport.complete_sends();
    driver->poll();
    for (std::uint32_t s = 0; s < 4 && chunks().size() < 11; ++s) receive(proto::Credit{s, key++});
  }
  EXPECT_EQ(chunks().back(), (proto::Chunk{10 * 4096, 7, 2}));
  EXPECT_TRUE(transport.sent_of<proto::Done>().empty());  // not before every SEND completed
  transport.complete_sends();
  driver->poll();
  ASSERT_EQ(transport.sent_of<proto::Done>().size(), 1u);
  EXPECT_EQ(transport.sent_of<proto::Done>()[0].total_bytes, bytes.size());
  receive(proto::Working{proto::WorkPhase::Committing, bytes.size()});
  EXPECT_EQ(driver->state(), SenderState::AwaitVerdict);
  receive(proto::Verdict{proto::VerdictCode::Good, sha256_of(bytes)});
  EXPECT_TRUE(transport.last_is<proto::Bye>());
  EXPECT_EQ(driver->outcome(), SenderOutcome::Success);
  transport.complete_sends();
  driver->poll();
  EXPECT_TRUE(transport.disconnected);
  driver->on_disconnected();
  EXPECT_TRUE(driver->finished());
  EXPECT_EQ(driver->stats().bytes, bytes.size());
}

TEST_F(SenderDriver, WorkingKeepsAWaitingSenderAlive) {
  connect();
  accept_and_credit();
  // Without a word for longer than the timeout, it gives up...
  const auto later = Clock::now() + std::chrono::seconds(2);
  receive(proto::Working{proto::WorkPhase::Storing, 0});  // ...but each Working restarts it
  driver->tick(later);
  EXPECT_EQ(driver->state(), SenderState::Sending);
  driver->tick(Clock::now() + std::chrono::seconds(4));
  EXPECT_EQ(driver->state(), SenderState::Closing);
  EXPECT_EQ(transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::Timeout);
  EXPECT_EQ(driver->outcome(), SenderOutcome::ConnectionLost);
}

TEST_F(SenderDriver, DuplicateCreditIsAViolation) {
  connect();
  receive(accept);
  receive(proto::Credit{0, 1});
  receive(proto::Credit{1, 2});
  transport.complete_sends();
  driver->poll();
  receive(proto::Credit{1, 3});  // slot 1 is credited already (its chunk not yet acknowledged)
  EXPECT_EQ(driver->state(), SenderState::Sending);
  receive(proto::Credit{7, 3});  // beyond slot_count
  EXPECT_EQ(driver->state(), SenderState::Closing);
  EXPECT_EQ(transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
  EXPECT_EQ(driver->outcome(), SenderOutcome::ProtocolError);
}

TEST_F(SenderDriver, MalformedCreditAfterDoneIsAViolationAndWellFormedOnesAreIgnored) {
  write_source(random_bytes(4096));
  connect();
  accept.slot_count = 2;
  receive(accept);
  receive(proto::Credit{0, 1});
  transport.complete_sends();
  driver->poll();
  ASSERT_EQ(driver->state(), SenderState::AwaitVerdict);
  receive(proto::Credit{1, 9});  // a trailing credit for a slot it does not hold: fine
  EXPECT_EQ(driver->state(), SenderState::AwaitVerdict);
  receive(proto::Credit{1, 9});  // a credit it holds already: a violation, as before Done
  EXPECT_EQ(driver->state(), SenderState::Closing);
  EXPECT_EQ(driver->outcome(), SenderOutcome::ProtocolError);
}

TEST_F(SenderDriver, Version1ReceiverRefusalEndsWithVersionUnsupported) {
  connect();
  // A version-1 receiver answers a version-2 Hello with a version-1 Reject.
  receive(proto::Reject{proto::RejectReason::UnsupportedVersion, "speaks 1"}, proto::kVersion1);
  EXPECT_EQ(driver->state(), SenderState::Closing);
  EXPECT_EQ(driver->outcome(), SenderOutcome::VersionUnsupported);
  EXPECT_EQ(transport.sent.size(), 1u);  // the Hello; no Error to a peer that said why
}

TEST_F(SenderDriver, AVersion2RefusalIsAnOrdinaryRejectNotAFallback) {
  connect();
  // A version-2 receiver that does not understand something in our Hello (PROTOCOL 7.2).
  receive(proto::Reject{proto::RejectReason::UnsupportedVersion, "extension 0x8001"},
          proto::kVersion2);
  EXPECT_EQ(driver->state(), SenderState::Closing);
  EXPECT_EQ(driver->outcome(), SenderOutcome::Rejected);
}

TEST_F(SenderDriver, Version1ConnectionSpeaksVersion1) {
  connect(proto::kVersion1);
  for (const auto& s : transport.sent) EXPECT_EQ(s.version, proto::kVersion1);
  EXPECT_EQ(transport.sent_of<proto::Hello>().at(0).keepalive_ms, 0u);
  receive(proto::Reject{proto::RejectReason::Exists, "exists"}, proto::kVersion1);
  EXPECT_EQ(driver->outcome(), SenderOutcome::Rejected);
}

TEST_F(SenderDriver, MessageOfAnotherVersionIsAViolation) {
  connect();
  receive(accept, proto::kVersion1);
  EXPECT_EQ(driver->state(), SenderState::Closing);
  EXPECT_EQ(driver->outcome(), SenderOutcome::ProtocolError);
}

TEST_F(SenderDriver, SecretIsKeptAndTheReceiverDisconnectRacingItDoesNotLoseIt) {
  settings.id = "alice";
  write_source(random_bytes(100));
  connect();
  accept.slot_count = 1;
  receive(accept);
  receive(proto::Credit{0, 1});
  transport.complete_sends();
  driver->poll();
  receive(proto::Verdict{proto::VerdictCode::Good, sha256_of(bytes)});
  EXPECT_EQ(transport.sent_of<proto::Id>().at(0).id, "alice");
  // The Secret is in the CQ when DISCONNECTED arrives: it is taken first.
  transport.deliver(proto::Secret{"s3cret"}, proto::kVersion2);
  driver->on_disconnected();
  EXPECT_TRUE(driver->finished());
  EXPECT_EQ(driver->outcome(), SenderOutcome::Success);
  EXPECT_EQ(driver->secret(), "s3cret");
}

TEST_F(SenderDriver, RegistrationFailureIsALocalFailure) {
  connect();
  transport.fail_registration_after = 0;  // the staging buffer cannot be registered
  receive(accept);
  EXPECT_EQ(driver->state(), SenderState::Closing);
  EXPECT_EQ(transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::Internal);
  EXPECT_EQ(driver->outcome(), SenderOutcome::LocalFailure);
}

TEST_F(SenderDriver, SendQueueFullWhileFailingEndsWithoutAnotherWord) {
  connect();
  transport.fail_registration_after = 0;
  transport.send_capacity = 1;  // the Hello fills it: the Error cannot be posted
  receive(accept);
  EXPECT_TRUE(driver->finished());
  EXPECT_TRUE(transport.shut);
  EXPECT_TRUE(transport.sent_of<proto::Error>().empty());
}

TEST_F(SenderDriver, EmptyFileSendsDoneRightAfterAccept) {
  write_source({});
  connect();
  accept.slot_count = 1;
  receive(accept);
  EXPECT_TRUE(chunks().empty());
  ASSERT_EQ(transport.sent_of<proto::Done>().size(), 1u);
  EXPECT_EQ(transport.sent_of<proto::Done>()[0].total_bytes, 0u);
}

TEST_F(SenderDriver, TheHelloNamesTheFsVerityDigest) {
  algorithm = proto::DigestAlgorithm::FsVeritySha256;
  connect();
  const auto hello = transport.sent_of<proto::Hello>().at(0);
  EXPECT_EQ(hello.digest_algorithm, proto::DigestAlgorithm::FsVeritySha256);
  EXPECT_EQ(hello.digest, merkle::digest_of(bytes));
}

TEST_F(SenderDriver, VersionOneCannotCarryTheFsVerityDigest) {
  algorithm = proto::DigestAlgorithm::FsVeritySha256;
  connect(proto::kVersion1);
  // The Hello cannot be built: a local failure, nothing offered.
  EXPECT_TRUE(transport.sent_of<proto::Hello>().empty());
  EXPECT_TRUE(driver->finished() || driver->state() == proto::SenderState::Closing);
  EXPECT_EQ(driver->outcome(), SenderOutcome::LocalFailure);
}

TEST_F(SenderDriver, SlotsOffTheBlockGridAreAProtocolViolationWithTheFsVerityDigest) {
  algorithm = proto::DigestAlgorithm::FsVeritySha256;
  connect();
  accept.slot_size = 6000;
  receive(accept);
  EXPECT_TRUE(chunks().empty());
  const auto errors = transport.sent_of<proto::Error>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, proto::ErrorCode::ProtocolViolation);
  EXPECT_EQ(driver->outcome(), SenderOutcome::ProtocolError);
}

TEST_F(SenderDriver, TheWholeFileDigestTakesAnySlotSize) {
  connect();
  accept.slot_size = 6000;
  accept_and_credit();
  EXPECT_FALSE(chunks().empty());
  EXPECT_TRUE(transport.sent_of<proto::Error>().empty());
}

TEST_F(SenderDriver, ConnectFailureBeforeConnectingFinishesAtOnce) {
  settings.name = "f.bin";
  driver.emplace(settings, *file, digest(), cm, "peer");
  driver->start();
  driver->on_connect_failed("nobody listens");
  EXPECT_TRUE(driver->finished());
  EXPECT_EQ(driver->outcome(), SenderOutcome::ConnectFailed);
  EXPECT_TRUE(transport.sent.empty());
}

TEST_F(SenderDriver, InterruptWhileSendingSaysShuttingDown) {
  connect();
  accept_and_credit();
  driver->interrupt(2);
  EXPECT_EQ(transport.sent_of<proto::Error>().at(0).code, proto::ErrorCode::ShuttingDown);
  EXPECT_EQ(driver->outcome(), SenderOutcome::Interrupted);
}

TEST_F(SenderDriver, ReceiverTimeoutOrShutdownIsAConnectionLostNotAProtocolError) {
  for (auto code : {proto::ErrorCode::Timeout, proto::ErrorCode::ShuttingDown}) {
    transport.sent.clear();
    connect();
    accept_and_credit();
    receive(proto::Error{code, "gave up"});
    EXPECT_EQ(driver->state(), SenderState::Closing);
    EXPECT_EQ(driver->outcome(), SenderOutcome::ConnectionLost) << proto::to_string(code);
    EXPECT_TRUE(transport.sent_of<proto::Error>().empty());  // no Error back to an Error
  }
  connect();
  receive(proto::Error{proto::ErrorCode::ProtocolViolation, "bad"});
  EXPECT_EQ(driver->outcome(), SenderOutcome::ProtocolError);
}

TEST_F(SenderDriver, Version1ErrorBeforeTheHelloWasSeenIsAcceptedOnVersion2) {
  connect();
  // The receiver timed out waiting for the Hello before it arrived: it wrote version 1.
  receive(proto::Error{proto::ErrorCode::Timeout, "no Hello"}, proto::kVersion1);
  EXPECT_EQ(driver->outcome(), SenderOutcome::ConnectionLost);
  EXPECT_TRUE(transport.sent_of<proto::Error>().empty());
}

}  // namespace
}  // namespace rdmax::test
