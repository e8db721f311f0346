// One file over two connections of a stripe group (docs/PROTOCOL.md 7.12), the receiver's side
// through the fake transport: one daemon context, a lead and a member connection. The file's
// chunks come on both, in any order, into the one temporary; it is verified and committed
// once; a member lost halfway interrupts it and keeps its stored prefix for a resume.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "common/digest/merkle.hpp"
#include "driver_harness.hpp"
#include "protocol/stripes.hpp"
#include "receiver/partial_store.hpp"
#include "receiver/stripe_groups.hpp"

namespace receiver_stripes_test {

using namespace rdmax;
using rdmax::test::FakeTransport;
using rdmax::test::random_bytes;
using rdmax::test::read_file;
using rdmax::test::run_pool_until;

using S = proto::ReceiverState;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kSlot = 4096;

struct Link {
  FakeTransport transport;
  std::optional<receiver::Connection> connection;
  template <class T>
  std::vector<T> sent() const {
    return transport.sent_of<T>();
  }
};

struct StripedRig {
  TempDir dir{"rdmax-stripes"};
  receiver::ReceiverOptions options = [] {
    receiver::ReceiverOptions o;
    o.slot_size = kSlot;
    o.slots = 4;
    o.direct_io = false;
    o.timeout = std::chrono::seconds(5);
    return o;
  }();
  proto::SecretStore secrets =
      std::get<proto::SecretStore>(proto::SecretStore::parse("alice s3cret\n"));
  WorkPool pool{2};
  receiver::ReceiverMetrics metrics{dir.fd()};
  receiver::ReceiverContext context{options, dir.fd(), &secrets, pool, metrics, 0};
  receiver::StripeGroups groups;
  receiver::PartialStore partials{dir.fd(), receiver::PartialStore::Limits{}};
  std::vector<std::uint8_t> bytes = random_bytes(5 * kSlot + 100, 21);  // 6 chunks
  proto::StripeToken token{1, 2, 3, 4};
  Link lead, member;

  StripedRig() {
    context.stripe_groups = &groups;
    context.partials = &partials;
  }
  ~StripedRig() {
    for (Link* l : {&lead, &member}) {
      if (!l->connection) continue;
      l->connection->abandon();
      run_pool_until(pool, [&] { return l->connection->idle(); });
    }
    member.connection.reset();
    lead.connection.reset();
  }
  StripedRig(const StripedRig&) = delete;
  StripedRig& operator=(const StripedRig&) = delete;

  proto::Open open(std::uint16_t member_number, std::uint32_t entries) const {
    proto::Open o{proto::DigestAlgorithm::FsVeritySha256, 0, 0, entries, bytes.size()};
    o.extensions.push_back({proto::kExtensionResume, {}});
    o.extensions.push_back(proto::stripe_group_extension({token, member_number, 2}));
    return o;
  }
  void connect(Link& l, const proto::Open& o) {
    l.connection.emplace(l.transport, &l == &lead ? "lead" : "member", context, "192.0.2.9");
    l.connection->on_established();
    send(l, o);
  }
  void send(Link& l, const proto::Message& m) {
    l.transport.deliver(m, proto::kVersion2);
    poll();
  }
  void poll() {
    for (Link* l : {&lead, &member})
      if (l->connection) l->connection->poll();
  }
  bool settle(const std::function<bool()>& done) {
    return run_pool_until(pool, [&] {
      poll();
      return done();
    });
  }
  proto::Offer striped_offer() const {
    proto::Offer o{0, proto::EntryKind::File,   0640,     bytes.size(), 1700000000,
                   5, merkle::digest_of(bytes), "big.bin"};
    o.striped = true;
    return o;
  }
  // Chunk `index` of the file, written into `slot` of `l`'s window and announced as `entry`.
  bool chunk(Link& l, std::uint32_t entry, std::uint32_t index, std::uint32_t slot) {
    const std::uint64_t offset = std::uint64_t{index} * kSlot;
    const auto length =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(kSlot, bytes.size() - offset));
    const bool landed = l.transport.write_slot(
        slot, std::span(bytes).subspan(static_cast<std::size_t>(offset), length));
    send(l, proto::FileChunk{entry, slot, offset, length});
    return landed;
  }
  std::size_t credits(const Link& l) const { return l.sent<proto::Credit>().size(); }
  // Both connections in session, the file taken on the lead, joined on the member (after
  // `member_entries` Offers of its own that its Open announces: its Join is numbered next).
  void joined(std::uint32_t member_entries = 0) {
    connect(lead, open(0, 1));
    connect(member, open(1, member_entries));
    for (Link* l : {&lead, &member}) {
      ASSERT_EQ(l->connection->state(), S::InSession);
      // Stripes right before the Accept.
      ASSERT_GE(l->transport.sent.size(), 2u);
      EXPECT_TRUE(std::holds_alternative<proto::Stripes>(l->transport.sent.at(0).message));
      EXPECT_TRUE(std::holds_alternative<proto::Accept>(l->transport.sent.at(1).message));
    }
    send(lead, striped_offer());
    ASSERT_TRUE(settle([&] { return !lead.sent<proto::Take>().empty(); }));
    send(member, proto::Join{member_entries, 0});
    ASSERT_TRUE(settle([&] { return !member.sent<proto::Take>().empty(); }));
    ASSERT_TRUE(settle([&] { return credits(lead) >= 4 && credits(member) >= 4; }));
  }
};

TEST(ReceiverStripes, AFileOverTwoConnectionsIsStoredInAnyOrderAndVerifiedOnce) {
  StripedRig r;
  ASSERT_NO_FATAL_FAILURE(r.joined());
  EXPECT_EQ(r.member.sent<proto::Take>().at(0).entry, 0u);
  // The member carries chunks 5, 1 and 3 (the last first), the lead 0, 2 and 4.
  ASSERT_TRUE(r.chunk(r.member, 0, 5, 0));
  ASSERT_TRUE(r.chunk(r.member, 0, 1, 1));
  ASSERT_TRUE(r.chunk(r.lead, 0, 0, 0));
  ASSERT_TRUE(r.chunk(r.lead, 0, 2, 1));
  ASSERT_TRUE(r.chunk(r.member, 0, 3, 2));
  ASSERT_TRUE(r.chunk(r.lead, 0, 4, 2));
  // Every chunk stored (the lead is credited nothing more once every chunk is claimed).
  ASSERT_TRUE(r.settle([&] { return r.credits(r.member) >= 7 && r.lead.connection->idle(); }));
  r.send(r.member, proto::FileDone{0, 2 * kSlot + 100});
  ASSERT_TRUE(r.settle([&] { return !r.member.sent<proto::FileVerdict>().empty(); }));
  EXPECT_EQ(r.member.sent<proto::FileVerdict>().at(0).code, proto::VerdictCode::Good);
  EXPECT_FALSE(std::filesystem::exists(r.dir.path() / "big.bin")) << "not before the lead's end";
  r.send(r.lead, proto::FileDone{0, r.bytes.size()});
  ASSERT_TRUE(r.settle([&] { return !r.lead.sent<proto::FileVerdict>().empty(); }));
  const auto verdict = r.lead.sent<proto::FileVerdict>().at(0);
  EXPECT_EQ(verdict.code, proto::VerdictCode::Good);
  EXPECT_EQ(verdict.received_digest, merkle::digest_of(r.bytes));
  EXPECT_EQ(read_file(r.dir.path() / "big.bin"), std::string(r.bytes.begin(), r.bytes.end()));
  r.send(r.member, proto::Bye{});
  r.send(r.lead, proto::Bye{});
  EXPECT_EQ(r.member.connection->state(), S::Closing);
  EXPECT_EQ(r.lead.connection->state(), S::Closing);
}

// The member's entry has a number of its own, not the lead's: its Take, its chunks and its
// verdict all name it.
TEST(ReceiverStripes, AJoinedEntryIsAnsweredUnderItsOwnNumber) {
  StripedRig r;
  ASSERT_NO_FATAL_FAILURE(r.joined(1));
  EXPECT_EQ(r.member.sent<proto::Take>().at(0).entry, 1u);
  for (std::uint32_t index : {1u, 3u, 5u}) ASSERT_TRUE(r.chunk(r.member, 1, index, index / 2));
  for (std::uint32_t index : {0u, 2u, 4u}) ASSERT_TRUE(r.chunk(r.lead, 0, index, index / 2));
  ASSERT_TRUE(r.settle([&] { return r.lead.connection->idle(); }));
  r.send(r.member, proto::FileDone{1, 2 * kSlot + 100});
  ASSERT_TRUE(r.settle([&] { return !r.member.sent<proto::FileVerdict>().empty(); }));
  const auto part = r.member.sent<proto::FileVerdict>().at(0);
  EXPECT_EQ(part.entry, 1u);
  EXPECT_EQ(part.code, proto::VerdictCode::Good);
  r.send(r.lead, proto::FileDone{0, r.bytes.size()});
  ASSERT_TRUE(r.settle([&] { return !r.lead.sent<proto::FileVerdict>().empty(); }));
  EXPECT_EQ(r.lead.sent<proto::FileVerdict>().at(0).code, proto::VerdictCode::Good);
  EXPECT_EQ(read_file(r.dir.path() / "big.bin"), std::string(r.bytes.begin(), r.bytes.end()));
}

TEST(ReceiverStripes, AChunkSentTwiceInTheGroupIsAViolation) {
  StripedRig r;
  ASSERT_NO_FATAL_FAILURE(r.joined());
  ASSERT_TRUE(r.chunk(r.lead, 0, 1, 0));
  r.chunk(r.member, 0, 1, 0);
  ASSERT_TRUE(r.settle([&] { return r.member.connection->state() != S::InSession; }));
  EXPECT_EQ(r.member.sent<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
  // The member's end interrupts the file on the lead.
  ASSERT_TRUE(r.settle([&] { return !r.lead.sent<proto::FileVerdict>().empty(); }));
  EXPECT_EQ(r.lead.sent<proto::FileVerdict>().at(0).code, proto::VerdictCode::Interrupted);
}

TEST(ReceiverStripes, TheLeadsFileDoneBeforeEveryChunkIsAViolation) {
  StripedRig r;
  ASSERT_NO_FATAL_FAILURE(r.joined());
  ASSERT_TRUE(r.chunk(r.lead, 0, 0, 0));
  r.send(r.lead, proto::FileDone{0, r.bytes.size()});
  ASSERT_TRUE(r.settle([&] { return r.lead.connection->state() != S::InSession; }));
  EXPECT_EQ(r.lead.sent<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
  // The lead's end settles the member's joined entry.
  ASSERT_TRUE(r.settle([&] { return !r.member.sent<proto::FileVerdict>().empty(); }));
  EXPECT_EQ(r.member.sent<proto::FileVerdict>().at(0).code, proto::VerdictCode::Interrupted);
}

// A member lost halfway: the lead's entry is Interrupted and what is stored in file order is
// kept; offered again (here on one connection), the file resumes from that prefix.
TEST(ReceiverStripes, AMemberLostInterruptsTheFileAndItsPrefixResumes) {
  StripedRig r;
  ASSERT_NO_FATAL_FAILURE(r.joined());
  ASSERT_TRUE(r.chunk(r.lead, 0, 0, 0));
  ASSERT_TRUE(r.chunk(r.member, 0, 1, 0));
  ASSERT_TRUE(r.chunk(r.lead, 0, 3, 1));  // past a hole (chunk 2): not kept
  ASSERT_TRUE(r.settle([&] { return r.credits(r.lead) >= 6 && r.credits(r.member) >= 5; }));
  r.member.connection->on_cm_failure("RDMA_CM_EVENT_DISCONNECTED");
  ASSERT_TRUE(r.settle([&] { return !r.lead.sent<proto::FileVerdict>().empty(); }));
  EXPECT_EQ(r.lead.sent<proto::FileVerdict>().at(0).code, proto::VerdictCode::Interrupted);
  EXPECT_FALSE(std::filesystem::exists(r.dir.path() / "big.bin"));
  ASSERT_TRUE(r.settle([&] { return r.member.connection->idle() && r.lead.connection->idle(); }));
  r.send(r.lead, proto::Bye{});
  ASSERT_TRUE(r.settle([&] { return r.lead.connection->idle(); }));
  r.lead.connection.reset();
  r.member.connection.reset();

  // The next command: the same file, on one connection, resumes after the two chunks.
  Link again;
  again.connection.emplace(again.transport, "again", r.context, "192.0.2.9");
  again.connection->on_established();
  proto::Open o{proto::DigestAlgorithm::FsVeritySha256, 0, 0, 1, r.bytes.size()};
  o.extensions.push_back({proto::kExtensionResume, {}});
  again.transport.deliver(o, proto::kVersion2);
  again.connection->poll();
  proto::Offer offer = r.striped_offer();
  offer.striped = false;
  again.transport.deliver(offer, proto::kVersion2);
  ASSERT_TRUE(run_pool_until(r.pool, [&] {
    again.connection->poll();
    return !again.sent<proto::Resume>().empty();
  }));
  EXPECT_EQ(again.sent<proto::Resume>().at(0).offset, 2 * kSlot);
  again.connection->abandon();
  run_pool_until(r.pool, [&] { return again.connection->idle(); });
}

// Without the daemon's groups (or to an Open without the extension) no Stripes goes, and a
// Join is a violation.
TEST(ReceiverStripes, NoStripesWithoutAGroupAndThenAJoinIsAViolation) {
  StripedRig r;
  r.context.stripe_groups = nullptr;
  r.connect(r.member, r.open(1, 0));
  ASSERT_EQ(r.member.connection->state(), S::InSession);
  EXPECT_TRUE(r.member.sent<proto::Stripes>().empty());
  r.send(r.member, proto::Join{0, 0});
  EXPECT_NE(r.member.connection->state(), S::InSession);
  EXPECT_EQ(r.member.sent<proto::Error>().at(0).code, proto::ErrorCode::ProtocolViolation);
}

// A Join for an entry the lead does not have in flight is refused, and that is no failure.
TEST(ReceiverStripes, AJoinOfNoStripedEntryIsRefused) {
  StripedRig r;
  r.connect(r.lead, r.open(0, 1));
  r.connect(r.member, r.open(1, 0));
  r.send(r.member, proto::Join{0, 7});
  ASSERT_TRUE(r.settle([&] { return !r.member.sent<proto::Refuse>().empty(); }));
  EXPECT_EQ(r.member.sent<proto::Refuse>().at(0).entry, 0u);
  EXPECT_EQ(r.member.connection->state(), S::InSession);
  r.send(r.member, proto::Join{1, 0});  // the lead's entry 0 is not offered yet
  ASSERT_TRUE(r.settle([&] { return r.member.sent<proto::Refuse>().size() == 2; }));
  r.send(r.member, proto::Bye{});
  EXPECT_EQ(r.member.connection->state(), S::Closing);
}

// A member whose Open announced no bytes has no window to carry any: its Join is refused.
TEST(ReceiverStripes, AMemberWithoutBytesIsRefusedItsJoin) {
  StripedRig r;
  r.connect(r.lead, r.open(0, 1));
  proto::Open empty = r.open(1, 0);
  empty.total_bytes = 0;
  r.connect(r.member, empty);
  r.send(r.lead, r.striped_offer());
  ASSERT_TRUE(r.settle([&] { return !r.lead.sent<proto::Take>().empty(); }));
  r.send(r.member, proto::Join{0, 0});
  ASSERT_TRUE(r.settle([&] { return !r.member.sent<proto::Refuse>().empty(); }));
  EXPECT_TRUE(r.member.sent<proto::Take>().empty());
  r.send(r.member, proto::Bye{});
  EXPECT_EQ(r.member.connection->state(), S::Closing);
}

// A stripe group waits as one (7.12): the sender's lead, its own files done, holds its
// directories until the other connections are done, however long their files take (the soak
// of issue 53 saw a lead time out so while its member still sent). It waits while another
// connection of its group moves, and no longer: once nothing in the group moved for the
// timeout, every connection ends.
TEST(ReceiverStripes, AnIdleConnectionWaitsWhileAnotherOfItsGroupMoves) {
  StripedRig r;
  r.connect(r.lead, r.open(0, 2));
  r.connect(r.member, r.open(1, 1));
  const auto small = random_bytes(100, 3);
  r.send(r.lead, proto::Offer{0, proto::EntryKind::File, 0640, small.size(), 1700000000, 5,
                              merkle::digest_of(small), "small.bin"});
  ASSERT_TRUE(
      r.settle([&] { return !r.lead.sent<proto::Take>().empty() && r.credits(r.lead) > 0; }));
  ASSERT_TRUE(r.lead.transport.write_slot(0, small));
  r.send(r.lead, proto::FileChunk{0, 0, 0, static_cast<std::uint32_t>(small.size())});
  ASSERT_TRUE(r.settle([&] { return r.lead.connection->idle(); }));
  r.send(r.lead, proto::FileDone{0, small.size()});
  ASSERT_TRUE(r.settle([&] { return !r.lead.sent<proto::FileVerdict>().empty(); }));
  ASSERT_EQ(r.lead.sent<proto::FileVerdict>().at(0).code, proto::VerdictCode::Good);
  ASSERT_STREQ(r.lead.connection->waiting_for(), "the sender's next entry or chunk");
  // The lead's wait began before this; the member moves after it.
  const auto before = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  proto::Offer own = r.striped_offer();
  own.striped = false;
  r.send(r.member, own);
  ASSERT_TRUE(
      r.settle([&] { return !r.member.sent<proto::Take>().empty() && r.credits(r.member) > 0; }));
  ASSERT_TRUE(r.chunk(r.member, 0, 0, 0));
  ASSERT_TRUE(r.settle([&] { return r.member.connection->idle() && r.credits(r.member) > 4; }));

  // Past the lead's own deadline, not past the member's.
  r.lead.connection->tick(before + r.options.timeout + std::chrono::milliseconds(10));
  EXPECT_EQ(r.lead.connection->state(), S::InSession);
  EXPECT_TRUE(r.lead.sent<proto::Error>().empty());

  // Nothing moves for the timeout: both end, each with its Timeout.
  const auto later = Clock::now() + r.options.timeout + std::chrono::seconds(1);
  r.lead.connection->tick(later);
  r.member.connection->tick(later);
  for (Link* l : {&r.lead, &r.member}) {
    EXPECT_NE(l->connection->state(), S::InSession);
    ASSERT_FALSE(l->sent<proto::Error>().empty());
    EXPECT_EQ(l->sent<proto::Error>().at(0).code, proto::ErrorCode::Timeout);
  }
}

// The wait of one idle connection does not count as the group moving: two idle connections
// of a group do not keep each other in session for ever.
TEST(ReceiverStripes, TwoIdleConnectionsOfAGroupDoNotKeepEachOtherWaiting) {
  StripedRig r;
  r.connect(r.lead, r.open(0, 1));
  const auto before = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r.connect(r.member, r.open(1, 0));
  ASSERT_EQ(r.member.connection->state(), S::InSession);
  // The lead's deadline passed while the member's has not: it waits on.
  const auto first = before + r.options.timeout + std::chrono::milliseconds(10);
  r.lead.connection->tick(first);
  EXPECT_EQ(r.lead.connection->state(), S::InSession);
  // The member's deadline passes: the lead's waiting was no move, so the member ends ...
  const auto second = Clock::now() + r.options.timeout + std::chrono::milliseconds(10);
  r.member.connection->tick(second);
  EXPECT_NE(r.member.connection->state(), S::InSession);
  // ... and then the lead, with no one of its group left moving.
  r.lead.connection->tick(second);
  EXPECT_NE(r.lead.connection->state(), S::InSession);
  ASSERT_FALSE(r.lead.sent<proto::Error>().empty());
  EXPECT_EQ(r.lead.sent<proto::Error>().at(0).code, proto::ErrorCode::Timeout);
}

}  // namespace receiver_stripes_test
