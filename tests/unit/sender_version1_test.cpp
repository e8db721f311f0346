// Version 1 at the edge (sender/version1_transport.hpp): the one session driver, carrying a
// command of one file, speaks version 1 on the wire to a receiver that knows nothing else.
// Driven message by message through the fake transport, as a version-1 receiver answers.

#include "sender/version1_transport.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "sender_session_rig.hpp"

namespace rdmax::test::sender_rig {
namespace {

struct Version1Rig {
  LogCapture log;  // first: it outlives the connection
  TempDir dir{"rdmax-v1"};
  std::vector<std::uint8_t> bytes = random_bytes(2 * kSlot + 100, 31);
  sender::TransferPlan plan{proto::DigestAlgorithm::WholeFileSha256, {}, {}};
  sender::SenderSettings settings;
  FakeTransport wire;
  std::optional<sender::Version1Transport> adapter;
  struct Cm final : sender::SenderCm {
    Transport* transport = nullptr;
    void resolve_route() override {}
    Transport& connect() override { return *transport; }
  } cm;
  std::optional<sender::Connection> driver;

  Version1Rig() {
    const auto local = dir.path() / "src.bin";
    std::ofstream(local, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    plan.entries.push_back({proto::EntryKind::File, local.string(), "a.bin", bytes.size(), 0644,
                            1700000000, 7, sha256_of(bytes)});
    plan.results.emplace_back();
    adapter.emplace(wire, sender::offer_of(0, plan.entries[0]));
    cm.transport = &*adapter;
    settings.version = proto::kVersion1;
    settings.timeout = std::chrono::seconds(3);
    settings.connect_timeout = std::chrono::seconds(3);
  }
  void connected() {
    driver.emplace(settings, plan, std::vector<std::uint32_t>{0}, cm, "peer");
    driver->start();
    driver->on_setup(proto::SetupEvent::AddressResolved);
    driver->on_setup(proto::SetupEvent::RouteResolved);
    driver->on_established();
  }
  void receive(const proto::Message& m) {  // from a version-1 receiver
    wire.deliver(m, proto::kVersion1);
    driver->poll();
  }
  void complete_sends() {
    wire.complete_sends();
    driver->poll();
  }
  // Accept and two slots credited: chunks 0 and 1; slot 0 again: chunk 2; then the Done.
  void send_the_file() {
    receive(proto::Accept{0x10000, 0, kSlot, 2});
    receive(proto::Credit{0, 100});
    receive(proto::Credit{1, 101});
    complete_sends();
    receive(proto::Credit{0, 200});
    complete_sends();
  }
  const sender::EntryResult& result() const { return plan.results.front(); }
};

TEST(SenderVersion1, OneFileGoesAsHelloChunksAndDoneAllInVersion1) {
  Version1Rig r;
  r.connected();
  // The Hello comes first, naming the file: version 1 has no Open.
  ASSERT_EQ(r.wire.sent.size(), 1u);
  const auto hello = r.wire.sent_of<proto::Hello>().at(0);
  EXPECT_EQ(hello.name, "a.bin");
  EXPECT_EQ(hello.file_size, r.bytes.size());
  EXPECT_EQ(hello.digest, sha256_of(r.bytes));
  ASSERT_NO_FATAL_FAILURE(r.send_the_file());
  EXPECT_EQ(r.driver->state(), S::InSession) << r.log.since(0);
  // What was written is the file, chunk by chunk, each followed by its version-1 Chunk.
  const auto chunks = r.wire.sent_of<proto::Chunk>();
  ASSERT_EQ(chunks.size(), 3u);
  std::vector<std::uint8_t> written;
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    EXPECT_EQ(chunks[k].offset, written.size());
    const auto& w = r.wire.writes.at(k).bytes;
    written.insert(written.end(), w.begin(), w.end());
  }
  EXPECT_EQ(written, r.bytes);
  ASSERT_EQ(r.wire.sent_of<proto::Done>().size(), 1u);
  EXPECT_EQ(r.wire.sent_of<proto::Done>()[0].total_bytes, r.bytes.size());
  r.receive(proto::Verdict{VerdictCode::Good, sha256_of(r.bytes)});
  EXPECT_EQ(r.result().status, sender::EntryResult::Status::Good);
  // No id: Bye. Nothing of a session ever reached the wire, and all of it in version 1.
  EXPECT_EQ(r.wire.sent_of<proto::Bye>().size(), 1u);
  for (const auto& sent : r.wire.sent) {
    EXPECT_EQ(sent.version, proto::kVersion1) << proto::to_string(proto::type_of(sent.message));
    const auto type = proto::type_of(sent.message);
    EXPECT_TRUE(type == T::Hello || type == T::Chunk || type == T::Done || type == T::Bye)
        << proto::to_string(type);
  }
}

TEST(SenderVersion1, TheIdAfterAGoodVerdictEarnsTheSecret) {
  Version1Rig r;
  r.settings.id = "alice";
  r.connected();
  r.send_the_file();
  r.receive(proto::Verdict{VerdictCode::Good, sha256_of(r.bytes)});
  ASSERT_EQ(r.wire.sent_of<proto::Id>().size(), 1u);
  EXPECT_EQ(r.wire.sent.back().version, proto::kVersion1);
  r.receive(proto::Secret{"s3cret"});
  EXPECT_EQ(r.driver->secret(), "s3cret");
  EXPECT_EQ(r.driver->outcome(), O::Success);
}

TEST(SenderVersion1, ARejectedHelloIsTheFilesRefusal) {
  Version1Rig r;
  r.connected();
  r.receive(proto::Reject{proto::RejectReason::Exists, "a file of that name exists"});
  EXPECT_EQ(r.result().status, sender::EntryResult::Status::Refused);
  EXPECT_EQ(r.result().outcome, O::Rejected);
  EXPECT_NE(r.result().detail.find("Exists"), std::string::npos);
  EXPECT_TRUE(r.wire.sent_of<proto::Chunk>().empty());
}

TEST(SenderVersion1, ABadVerdictFailsTheFile) {
  Version1Rig r;
  r.connected();
  r.send_the_file();
  r.receive(proto::Verdict{VerdictCode::HashMismatch, {}});
  EXPECT_EQ(r.result().status, sender::EntryResult::Status::Failed);
  EXPECT_EQ(r.result().outcome, O::HashMismatch);
  EXPECT_TRUE(r.wire.sent_of<proto::Id>().empty());
  // As a version-1 sender: nothing after a bad verdict (the receiver disconnects, 4.3).
  EXPECT_TRUE(r.wire.sent_of<proto::Bye>().empty());
  r.complete_sends();
  EXPECT_TRUE(r.wire.disconnected);
}

// What version 1 cannot say is a logic error at the edge, never a malformed message.
TEST(SenderVersion1, TheEdgeRefusesWhatVersion1CannotCarry) {
  FakeTransport wire;
  const proto::Offer file{0, proto::EntryKind::File, 0644, 10, 0, 0, {}, "a.bin"};
  sender::Version1Transport adapter(wire, file);
  proto::Open fsverity{proto::DigestAlgorithm::FsVeritySha256, 0, 0, 1, 10};
  EXPECT_THROW(adapter.send(fsverity, proto::kVersion2, 0), std::logic_error);
  proto::Open two{proto::DigestAlgorithm::WholeFileSha256, 0, 0, 2, 10};
  EXPECT_THROW(adapter.send(two, proto::kVersion2, 0), std::logic_error);
  // Another entry than the one its Hello named.
  EXPECT_THROW(adapter.send(proto::Offer{1, proto::EntryKind::File, 0644, 10, 0, 0, {}, "b"},
                            proto::kVersion2, 0),
               std::logic_error);
  EXPECT_TRUE(wire.sent.empty());
  // The file offered without its digest (7.9): version 1 has no FileDone to carry it, so
  // not even its Hello goes.
  proto::Offer at_end = file;
  at_end.digest_at_end = true;
  sender::Version1Transport without_digest(wire, at_end);
  const proto::Open one{proto::DigestAlgorithm::WholeFileSha256, 0, 0, 1, 10};
  EXPECT_THROW(without_digest.send(one, proto::kVersion2, 0), std::logic_error);
  // A directory cannot be a Hello's file.
  proto::Offer directory = file;
  directory.kind = proto::EntryKind::Directory;
  sender::Version1Transport of_directory(wire, directory);
  EXPECT_THROW(of_directory.send(one, proto::kVersion2, 0), std::logic_error);
  EXPECT_TRUE(wire.sent.empty());
  // The one it was given: the Hello names it.
  adapter.send(one, proto::kVersion2, 0);
  ASSERT_EQ(wire.sent_of<proto::Hello>().size(), 1U);
  EXPECT_EQ(wire.sent_of<proto::Hello>().at(0).name, "a.bin");
  EXPECT_EQ(wire.sent_of<proto::Hello>().at(0).file_size, 10U);
}

}  // namespace
}  // namespace rdmax::test::sender_rig
