// One file over two connections, the sending side (docs/PROTOCOL.md 7.12): two real sender
// Connections over fake transports, joined by hand as sender/transfer_run.cpp joins them (the
// lead offers the file striped; once it is taken, the member joins it and both draw chunks
// from one StripePlan), the receiver's answers scripted. Which connection reads which chunk is
// chosen by the credits each gets.

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <thread>

#include "common/digest/merkle.hpp"
#include "protocol/stripe_plan.hpp"
#include "sender_session_rig.hpp"

namespace rdmax::test::sender_rig {
namespace {

// Lead and member, and the group's part of the run between them.
struct TwoConnections {
  LogCapture log;  // first: it outlives the connections
  WorkPool pool{2};
  SessionHarness lead;
  SessionHarness member;
  std::shared_ptr<proto::StripePlan> plan;
  std::uint32_t members_settled = 0;

  struct Link final : sender::StripeLink {
    TwoConnections& two;
    std::uint16_t index;
    Link(TwoConnections& t, std::uint16_t i) : two(t), index(i) {}
    proto::StripeGroup group() const override { return {{9}, index, 2}; }
    std::optional<bool> offer_striped(std::uint32_t) override { return index == 0; }
    void striped_taken(std::uint32_t index_in_plan, std::uint32_t entry, std::uint64_t from,
                       std::uint32_t slot_size) override {
      two.taken(index_in_plan, entry, from, slot_size);
    }
    void joined_settled(std::uint32_t, bool) override { two.joined_settled(); }
  };
  Link lead_link{*this, 0};
  Link member_link{*this, 1};

  // What TransferRun::striped_taken does: the plan, the lead's entry striped, the member joined.
  void taken(std::uint32_t index, std::uint32_t entry, std::uint64_t from, std::uint32_t slot) {
    plan = std::make_shared<proto::StripePlan>(lead.plan.entries[index].size, slot, from, 2);
    ASSERT_TRUE(lead.driver->entries().ledger().stripe(entry, plan));
    member.driver->entries().join(index, lead.driver->entries(), entry, plan, 1);
    lead.driver->entries().ledger().entry(entry)->members_pending = 1;
    member.driver->poke();
  }
  void joined_settled() {
    ++members_settled;
    if (auto* e = lead.driver->entries().ledger().entry(0); e && e->members_pending > 0)
      --e->members_pending;
    lead.driver->poke();
  }

  // One file of three chunks (the last short), hashed as it is sent; the member reads the same
  // file (the run's one plan).
  explicit TwoConnections(std::size_t bytes = 2 * kSlot + 100) {
    lead.add_file("big.bin", random_bytes(bytes, 31));
    member.add_file("big.bin", lead.contents[0]);
    member.plan.entries[0].local_path = lead.plan.entries[0].local_path;
    for (SessionHarness* h : {&lead, &member}) {
      h->with_digest_at_end(&pool);
      h->settings.version = proto::kVersion2;
      h->settings.timeout = std::chrono::seconds(3);
      h->settings.connect_timeout = std::chrono::seconds(3);
    }
    lead.settings.stripes = &lead_link;
    member.settings.stripes = &member_link;
    member.settings.striped_bytes = bytes;
    lead.driver.emplace(lead.settings, lead.plan, std::vector<std::uint32_t>{0}, lead.cm, "lead");
    member.driver.emplace(member.settings, member.plan, std::vector<std::uint32_t>{}, member.cm,
                          "member");
  }

  // Both connected and answered Stripes and an Accept of two slots.
  void in_session() {
    for (SessionHarness* h : {&lead, &member}) {
      h->driver->start();
      h->driver->on_setup(proto::SetupEvent::AddressResolved);
      h->driver->on_setup(proto::SetupEvent::RouteResolved);
      h->driver->on_established();
      h->receive(proto::Stripes{2});
      h->receive(proto::Accept{0x10000, 0, kSlot, 2});
      ASSERT_EQ(h->state(), proto::SenderState::InSession);
    }
    ASSERT_EQ(lead.transport.sent_of<proto::Offer>().size(), 1u);
    ASSERT_TRUE(lead.transport.sent_of<proto::Offer>()[0].striped);
  }
  // The member's Join answered, and a credit given to each as asked.
  void joined() {
    lead.receive(proto::Take{0});
    ASSERT_EQ(member.transport.sent_of<proto::Join>().size(), 1u);
    member.receive(proto::Take{member.transport.sent_of<proto::Join>()[0].entry});
  }
  // Runs the pool's reads and hashes and both connections until `done` holds (false after 10 s).
  template <class Done>
  bool run_until(Done done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      if (pool.run_completions() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      lead.driver->poll();
      member.driver->poll();
    }
    return true;
  }
  std::size_t chunks(const SessionHarness& h) const {
    return h.transport.sent_of<proto::FileChunk>().size();
  }
  // The credits asked: chunk 0 read and sent by the lead, chunks 1 and 2 (the last) by the
  // member, all written; the member's part done and both hashed.
  bool lead_reads_first_member_the_rest() {
    lead.receive(proto::Credit{0, 100});
    if (!run_until([&] { return chunks(lead) == 1; })) return false;
    member.receive(proto::Credit{0, 200});
    member.receive(proto::Credit{1, 201});
    if (!run_until([&] { return chunks(member) == 2; })) return false;
    lead.complete_sends();
    member.complete_sends();
    return run_until([&] {
      const auto* e = lead.driver->entries().ledger().entry(0);
      return e != nullptr && e->chunks_held == 0 &&
             member.transport.sent_of<proto::FileDone>().size() == 1;
    });
  }
  void member_part_stored() {
    member.receive(proto::FileVerdict{
        member.transport.sent_of<proto::FileDone>()[0].entry, proto::VerdictCode::Good, {}});
    ASSERT_TRUE(run_until([&] { return members_settled == 1; }));
  }
};

// The member reads the file's last chunk; the file is written after every chunk was read. The
// lead must find it changed when its FileDone is due, and abandon it instead (FileAbort): the
// check a file on one connection gets after its last read (as tar makes it).
TEST(SenderStripes, AFileChangedAfterAMemberReadItsLastChunkIsAbandoned) {
  TwoConnections two;
  two.in_session();
  two.joined();
  ASSERT_TRUE(two.lead_reads_first_member_the_rest());
  EXPECT_EQ(two.member.transport.sent_of<proto::FileChunk>()[1].offset, 2u * kSlot);
  // Every chunk read: now the file is written (same size, a new time).
  std::ofstream(two.lead.plan.entries[0].local_path, std::ios::binary | std::ios::in)
      .write("changed", 7);
  two.member_part_stored();
  EXPECT_EQ(two.members_settled, 1u);
  EXPECT_TRUE(two.lead.transport.sent_of<proto::FileDone>().empty());
  ASSERT_EQ(two.lead.transport.sent_of<proto::FileAbort>().size(), 1u);
  EXPECT_EQ(two.lead.transport.sent_of<proto::FileAbort>()[0].reason, proto::AbortReason::Changed);
  two.lead.receive(proto::FileVerdict{0, proto::VerdictCode::Abandoned, {}});
  EXPECT_EQ(two.lead.status(0), Status::Failed);
  EXPECT_TRUE(two.lead.plan.learned.empty()) << "nothing for the digest cache";
}

// The same file left alone: the lead's FileDone carries the digest of the whole file, folded
// from both connections' chunks.
TEST(SenderStripes, AnUnchangedFileIsDoneWithTheDigestOfBothConnectionsChunks) {
  TwoConnections two;
  two.in_session();
  two.joined();
  ASSERT_TRUE(two.lead_reads_first_member_the_rest());
  two.member_part_stored();
  ASSERT_EQ(two.lead.transport.sent_of<proto::FileDone>().size(), 1u);
  EXPECT_TRUE(two.lead.transport.sent_of<proto::FileAbort>().empty());
  const auto done = two.lead.transport.sent_of<proto::FileDone>()[0];
  ASSERT_TRUE(done.digest.has_value());
  EXPECT_EQ(*done.digest,
            merkle::digest_of(two.lead.contents[0]));  // the whole file's, as on one connection
}

}  // namespace
}  // namespace rdmax::test::sender_rig
