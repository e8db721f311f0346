// The sender's one driver and the receiver's driver linked through their fakes, as RC would
// link them (driver_harness.hpp, LinkOf): a tree, a single file as a session of one entry,
// a corrupted chunk, and a version-1 receiver reached through the sender's version-1 edge
// (sender/version1_transport.hpp), all end to end without a device.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/digest/blake3_tree.hpp"
#include "common/digest/merkle.hpp"
#include "receiver/output_file.hpp"
#include "sender/version1_transport.hpp"
#include "sender_session_rig.hpp"
#include "tests/unit/page_cache.hpp"
#include "tests/unit/session_pair.hpp"

namespace rdmax::test::sender_rig {
namespace {

TEST(SessionLink, ATreeArrivesWithItsModesAndEarnsTheSecret) {
  SessionPair p;
  p.sender.settings.id = "alice";
  p.sender.add_file("a.bin", random_bytes(5 * kSlot + 1, 41), 0640);
  p.sender.add_file("d/b.bin", random_bytes(100, 42), 0600);
  p.sender.add_file("empty.bin", {}, 0644);
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.driver->secret(), "s3cret");
  for (std::uint32_t i = 0; i < 3; ++i) EXPECT_EQ(p.sender.status(i), Status::Good) << i;
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
  EXPECT_EQ(p.arrived("d/b.bin"), p.sent(1));
  EXPECT_EQ(p.arrived("empty.bin"), "");
  struct stat st {};
  ASSERT_EQ(::stat((p.receiver.dir.path() / "d/b.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(p.receiver.metrics.files(receiver::FileOutcome::Good), 3u);
}

// What a single-file command is now: a session of one entry, verified by the fs-verity
// digest over slots of one block and of whole 128-block groups and a half.
TEST(SessionLink, OneFileIsASessionOfOneEntryVerifiedByTheFsVerityDigest) {
  for (std::uint32_t slot : {kSlot, 192 * kSlot}) {
    SCOPED_TRACE(slot);
    SessionPair p;
    p.receiver.options.slot_size = slot;
    p.sender.plan.algorithm = proto::DigestAlgorithm::FsVeritySha256;
    p.sender.add_file("one.bin", random_bytes(3 * 192 * kSlot + 77, 43));
    p.sender.plan.entries[0].digest = merkle::digest_of(p.sender.contents[0]);
    ASSERT_TRUE(p.run());
    EXPECT_EQ(p.sender.driver->outcome(), O::Success);
    EXPECT_EQ(p.sender.status(0), Status::Good);
    EXPECT_EQ(p.arrived("one.bin"), p.sent(0));
    const auto verdicts = p.receiver.transport.sent_of<proto::FileVerdict>();
    ASSERT_EQ(verdicts.size(), 1u);
    EXPECT_EQ(verdicts[0].received_digest, p.sender.plan.entries[0].digest);
  }
}

// rdma-recv --direct-io: every whole block of a slot goes from the slot to the file with
// O_DIRECT, none through the page cache; only the file's last partial block does.
TEST(SessionLink, WithDirectIoTheSlotsGoToTheFileBypassingTheCache) {
  SessionPair p;
  {
    auto probe = OutputFile::create(p.receiver.dir.fd(), "probe", false);
    if (!probe.use_direct_io())
      GTEST_SKIP() << p.receiver.dir.path() << ": this file system has no direct I/O";
  }
  p.receiver.options.direct_io = true;
  p.receiver.options.slot_size = 4 * kSlot;
  p.sender.plan.algorithm = proto::DigestAlgorithm::FsVeritySha256;  // hashed from the slots
  p.sender.add_file("direct.bin", random_bytes(9 * kSlot + 10, 44));
  p.sender.plan.entries[0].digest = merkle::digest_of(p.sender.contents[0]);
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.status(0), Status::Good);
  // The residency first: reading the file brings its pages into the cache.
  const auto cached = cached_pages((p.receiver.dir.path() / "direct.bin").string());
  ASSERT_EQ(cached.size(), 10u);
  for (std::size_t page = 0; page < 9; ++page) EXPECT_FALSE(cached[page]) << "page " << page;
  EXPECT_TRUE(cached[9]) << "the last partial block goes through the cache";
  EXPECT_EQ(p.arrived("direct.bin"), p.sent(0));
}

// A flipped byte fails its own file only; the others are stored, and no secret is earned.
TEST(SessionLink, AFlippedByteFailsItsFileOnly) {
  SessionPair p;
  p.sender.settings.id = "alice";
  p.sender.settings.inject_corruption = 3 * kSlot + 5;  // in every file that long: a.bin
  p.sender.add_file("a.bin", random_bytes(6 * kSlot, 44));
  p.sender.add_file("b.bin", random_bytes(kSlot, 45));
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.status(0), Status::Failed);
  EXPECT_EQ(p.sender.plan.results[0].outcome, O::HashMismatch);
  EXPECT_EQ(p.sender.status(1), Status::Good);
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "a.bin"));
  EXPECT_EQ(p.arrived("b.bin"), p.sent(1));
  EXPECT_EQ(p.sender.driver->secret(), "");
  EXPECT_TRUE(p.sender.transport.sent_of<proto::Id>().empty());
}

// A receiver's Hello flow (as a version-1 receiver speaks it) reached by the session driver
// through the version-1 edge: the wire carries version 1 only, the file arrives, and the
// id earns the secret.
TEST(SessionLink, TheVersion1EdgeReachesTheHelloFlow) {
  SessionPair p;
  p.sender.settings.id = "alice";
  p.sender.add_file("v1.bin", random_bytes(4 * kSlot + 9, 46));
  sender::Version1Transport edge(p.sender.transport, sender::offer_of(0, p.sender.plan.entries[0]));
  p.sender.cm.instead = &edge;
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.status(0), Status::Good);
  EXPECT_EQ(p.sender.driver->secret(), "s3cret");
  EXPECT_EQ(p.arrived("v1.bin"), p.sent(0));
  for (const auto& sent : p.sender.transport.sent) EXPECT_EQ(sent.version, proto::kVersion1);
  for (const auto& sent : p.receiver.transport.sent) EXPECT_EQ(sent.version, proto::kVersion1);
  EXPECT_FALSE(p.receiver.transport.sent_of<proto::Verdict>().empty());
}

// 5.4: a WRITE with a key the receiver revoked fails at the writer. A receiver that handed
// slot 0's old key back (instead of a fresh one) breaks the sender's next WRITE into it: the
// sender's queue pair fails and reports a lost connection; nothing arrives under the name.
TEST(SessionLink, AWriteWithAStaleKeyFailsAtTheReceiver) {
  SessionPair p;
  p.sender.add_file("stale.bin", random_bytes(6 * kSlot, 47));
  std::optional<std::uint32_t> first_key;
  p.link.tamper = [&](proto::Message& m) {
    if (auto* c = std::get_if<proto::Credit>(&m); c != nullptr && c->slot == 0) {
      if (first_key) c->rkey = *first_key;  // the key it revoked when chunk 0 arrived
      first_key = c->rkey;
    }
  };
  p.start();
  ASSERT_TRUE(p.link.run_until([&] { return p.sender.ended(); }));
  EXPECT_TRUE(p.link.broken);
  EXPECT_EQ(p.sender.driver->outcome(), O::ConnectionLost);
  EXPECT_EQ(p.sender.status(0), Status::NotSent);
  p.receiver.connection->on_disconnected();
  ASSERT_TRUE(p.receiver.settle([&] { return p.receiver.connection->idle(); }));
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "stale.bin"));
}

// ---- Sender keys (docs/PROTOCOL.md 7.8), both drivers end to end ----

// alice's key is the sender rig's (00 01 ... 1f); bob's is the same bytes, and bob writes
// beneath bob-dir.
constexpr const char* kSenders =
    "alice 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
    "bob 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f bob-dir\n";

TEST(SessionLinkKeys, AKeyedSenderAndReceiverProveItToEachOtherThenSendATree) {
  SessionPair p;
  p.receiver.require_keys(kSenders);
  p.sender.with_key();
  p.sender.settings.id = "alice";
  p.sender.add_file("a.bin", random_bytes(3 * kSlot + 5, 51), 0640);
  p.sender.add_file("d/b.bin", random_bytes(10, 52), 0600);
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.driver->secret(), "s3cret");  // the id/secret exchange is unchanged
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
  EXPECT_EQ(p.arrived("d/b.bin"), p.sent(1));
  EXPECT_EQ(p.sender.transport.sent_of<proto::Proof>().size(), 1u);
  EXPECT_EQ(p.receiver.transport.sent_of<proto::Proof>().size(), 1u);
}

// A SUBDIR id writes beneath DIR/SUBDIR, whatever its paths say.
TEST(SessionLinkKeys, AnIdWithASubdirectoryWritesOnlyBeneathIt) {
  SessionPair p;
  p.receiver.require_keys(kSenders);
  p.sender.with_key();
  p.sender.key.id = "bob";
  p.sender.add_file("a.bin", random_bytes(kSlot, 53), 0640);
  p.sender.add_file("d/b.bin", random_bytes(10, 54), 0600);
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.arrived("bob-dir/a.bin"), p.sent(0));
  EXPECT_EQ(p.arrived("bob-dir/d/b.bin"), p.sent(1));
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "a.bin"));
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "d"));
}

// What a keyed sender is told of files already there (docs/SECURITY.md, "What a sender
// learns"; issue 41, hole 18): only of its own SUBDIR. bob offers a.bin without its digest;
// DIR/a.bin, of the same size, is not his to learn about (no Holds); DIR/bob-dir/d/b.bin is.
TEST(SessionLinkKeys, AKeyedSenderLearnsOfItsOwnSubdirectoryOnly) {
  SessionPair p;
  p.receiver.require_keys(kSenders);
  p.receiver.options.overwrite = false;
  p.sender.with_key();
  p.sender.key.id = "bob";
  p.sender.add_file("a.bin", random_bytes(2 * kSlot, 58), 0640);
  p.sender.add_file("d/b.bin", random_bytes(kSlot + 3, 59), 0600);
  const std::string others(p.sent(0).size(), 'o');
  const std::string his(p.sent(1).size(), 'h');
  p.place_at_receiver("a.bin", others);
  p.place_at_receiver("bob-dir/d/b.bin", his);
  ASSERT_TRUE(p.run_at_end());
  const auto holds = p.receiver.transport.sent_of<proto::Holds>();
  ASSERT_EQ(holds.size(), 1u) << "one Holds, of bob's own file";
  EXPECT_EQ(holds[0].entry, 1u);
  EXPECT_EQ(holds[0].digest, std::nullopt) << "how much is held, never its digest";
  EXPECT_EQ(p.sender.status(0), Status::Good);
  EXPECT_EQ(p.arrived("bob-dir/a.bin"), p.sent(0));
  EXPECT_EQ(p.arrived("a.bin"), others) << "the other file is untouched";
  EXPECT_EQ(p.sender.status(1), Status::Refused) << "his own, another file: not overwritten";
  EXPECT_EQ(p.arrived("bob-dir/d/b.bin"), his);
}

TEST(SessionLinkKeys, AWrongKeyIsRefusedBeforeAnyMemoryAndCostsTheAddressAWait) {
  SessionPair p;
  p.receiver.require_keys(kSenders);
  p.sender.with_key();
  p.sender.key.key[0] ^= 1;
  p.sender.add_file("a.bin", random_bytes(kSlot, 55), 0640);
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::AuthFailed);
  EXPECT_EQ(p.receiver.transport.sent_of<proto::Accept>().size(), 0u);
  EXPECT_EQ(p.receiver.transport.live_regions(), 0u);
  EXPECT_TRUE(p.sender.transport.sent_of<proto::Offer>().empty());
  EXPECT_TRUE(std::filesystem::is_empty(p.receiver.dir.path()));
  EXPECT_TRUE(p.receiver.penalties.refused_for(ReceiverHarness::kPeerAddress,
                                               std::chrono::steady_clock::now()));
}

TEST(SessionLinkKeys, ASenderWithoutAKeyIsToldOneIsRequired) {
  SessionPair p;
  p.receiver.require_keys(kSenders);
  p.sender.add_file("a.bin", random_bytes(kSlot, 56), 0640);
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::AuthFailed);
  ASSERT_EQ(p.receiver.transport.sent_of<proto::Reject>().size(), 1u);
  EXPECT_EQ(p.receiver.transport.sent_of<proto::Reject>()[0].reason,
            proto::RejectReason::AuthRequired);
  EXPECT_TRUE(std::filesystem::is_empty(p.receiver.dir.path()));
}

// A receiver that does not authenticate (no --senders, or an impostor) cannot prove our key:
// a sender with a key sends nothing to it.
TEST(SessionLinkKeys, AKeyedSenderSendsNothingToAReceiverThatDoesNotProveTheKey) {
  SessionPair p;
  p.sender.with_key();
  p.sender.add_file("a.bin", random_bytes(kSlot, 57), 0640);
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::AuthFailed);
  EXPECT_TRUE(p.sender.transport.sent_of<proto::Offer>().empty());
  ASSERT_EQ(p.sender.transport.sent_of<proto::Error>().size(), 1u);
  EXPECT_EQ(p.sender.transport.sent_of<proto::Error>()[0].code, proto::ErrorCode::AuthFailed);
  EXPECT_TRUE(std::filesystem::is_empty(p.receiver.dir.path()));
}

// ---- The digest at the end (PROTOCOL.md 7.9): both drivers, linked ----

struct DigestAtEndPair : SessionPair {
  DigestAtEndPair() {
    sender.add_file("a.bin", random_bytes(5 * kSlot + 1, 61), 0640);
    sender.add_file("d/b.bin", random_bytes(100, 62), 0600);
    sender.add_file("empty.bin", {}, 0644);
  }
  Digest digest_of(std::size_t entry) const { return merkle::digest_of(sender.contents.at(entry)); }
};

TEST(SessionLinkDigestAtEnd, ATreeGoesWithoutItsDigestsAndArrivesVerified) {
  DigestAtEndPair p;
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.sender.status(i), Status::Good) << i;
    EXPECT_EQ(p.sender.plan.entries[i].digest, p.digest_of(i)) << "computed as it was sent";
  }
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
  EXPECT_EQ(p.arrived("d/b.bin"), p.sent(1));
  EXPECT_EQ(p.arrived("empty.bin"), "");
  const auto offers = p.sender.transport.sent_of<proto::Offer>();
  ASSERT_EQ(offers.size(), 3u);
  for (const auto& o : offers) EXPECT_TRUE(o.digest_at_end && o.digest == Digest{});
  for (const auto& d : p.sender.transport.sent_of<proto::FileDone>())
    EXPECT_EQ(d.digest, p.digest_of(d.entry));
  // Each non-empty file read once, its digest learned for the cache.
  EXPECT_EQ(p.sender.plan.learned.size(), 2u) << p.log.since(0);
}

TEST(SessionLinkDigestAtEnd, AFileAlreadyThereIsCheckedHereAndNotSent) {
  DigestAtEndPair p;
  p.receiver.options.overwrite = false;
  p.place_at_receiver("a.bin", p.sent(0));
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_TRUE(p.sender.plan.results[0].identical);
  EXPECT_EQ(p.sender.transport.sent_of<proto::Continue>().at(0),
            (proto::Continue{0, p.sent(0).size(), p.digest_of(0)}));
  for (const auto& c : p.sender.transport.sent_of<proto::FileChunk>()) EXPECT_NE(c.entry, 0u);
}

// The file the receiver said it holds is gone by the time our Continue from its size comes
// (we may hash for minutes): the receiver takes the file whole instead of claiming to have
// it (PROTOCOL.md 7.9, issue 41's hole 19), and the sender sends it from 0.
TEST(SessionLinkDigestAtEnd, AHeldFileGoneBeforeTheContinueIsTakenWhole) {
  DigestAtEndPair p;
  p.receiver.options.overwrite = false;
  p.place_at_receiver("a.bin", p.sent(0));
  const auto held = p.receiver.dir.path() / "a.bin";
  p.link.tamper = [&](proto::Message& m) {
    if (std::holds_alternative<proto::Holds>(m)) std::filesystem::remove(held);
  };
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.status(0), Status::Good);
  EXPECT_FALSE(p.sender.plan.results[0].identical);
  EXPECT_EQ(p.sender.transport.sent_of<proto::Continue>().at(0),
            (proto::Continue{0, p.sent(0).size(), p.digest_of(0)}));
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
  EXPECT_TRUE(p.receiver.transport.sent_of<proto::Have>().empty());
}

// Changed instead (another file of the same size): it is not had, and not overwritten either.
TEST(SessionLinkDigestAtEnd, AHeldFileChangedBeforeTheContinueIsNotHadNorOverwritten) {
  DigestAtEndPair p;
  p.receiver.options.overwrite = false;
  p.place_at_receiver("a.bin", p.sent(0));
  const auto held = p.receiver.dir.path() / "a.bin";
  const std::string other(p.sent(0).size(), 'x');
  p.link.tamper = [&](proto::Message& m) {
    if (std::holds_alternative<proto::Holds>(m)) {
      std::filesystem::remove(held);
      std::ofstream(held, std::ios::binary) << other;
    }
  };
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.status(0), Status::Refused);
  EXPECT_EQ(p.arrived("a.bin"), other);
  EXPECT_TRUE(p.receiver.transport.sent_of<proto::Have>().empty());
  EXPECT_EQ(p.sender.status(1), Status::Good);
}

TEST(SessionLinkDigestAtEnd, AnotherFileOfTheSameSizeIsNotOverwritten) {
  DigestAtEndPair p;
  const std::string other(p.sent(0).size(), 'x');
  std::ofstream(p.receiver.dir.path() / "a.bin", std::ios::binary) << other;
  ASSERT_TRUE(p.run_at_end());
  // Our digest goes, not the receiver's: it compares, and the file here is not ours.
  EXPECT_EQ(p.sender.transport.sent_of<proto::Continue>().at(0),
            (proto::Continue{0, p.sent(0).size(), p.digest_of(0)}));
  EXPECT_EQ(p.sender.status(0), Status::Refused);  // Exists
  EXPECT_EQ(p.arrived("a.bin"), other);
  EXPECT_EQ(p.sender.status(1), Status::Good);
}

TEST(SessionLinkDigestAtEnd, AKeptPartialIsCheckedAndResumedAndTheWholeFileVerified) {
  DigestAtEndPair p;
  ASSERT_NO_FATAL_FAILURE(p.keep_partial("a.bin", 0, 3 * kSlot));
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  p.expect_resumed(0, "a.bin", 3u * kSlot, p.digest_of(0));
}

TEST(SessionLinkDigestAtEnd, APartialOfAnotherFileIsNotResumed) {
  DigestAtEndPair p;
  ASSERT_NO_FATAL_FAILURE(p.keep_partial("a.bin", 0, 3 * kSlot));
  p.sender.contents[0][10] ^= 0xFF;  // ours differs in its first chunk
  std::ofstream(p.sender.plan.entries[0].local_path, std::ios::binary)
      .write(reinterpret_cast<const char*>(p.sender.contents[0].data()),
             static_cast<std::streamsize>(p.sender.contents[0].size()));
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.plan.results[0].resumed_from, 0u);
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
}

TEST(SessionLinkDigestAtEnd, AFileChangedWhileItIsSentIsAbandonedAndNotKept) {
  DigestAtEndPair p;
  p.sender.plan.entries.resize(1);
  p.sender.plan.results.resize(1);
  bool touched = false;
  p.link.tamper = [&](proto::Message& m) {
    // After its first chunk, the file is written again (same size, a new time).
    if (!touched && std::holds_alternative<proto::Credit>(m) &&
        !p.sender.transport.sent_of<proto::FileChunk>().empty()) {
      touched = true;
      std::ofstream(p.sender.plan.entries[0].local_path, std::ios::binary | std::ios::in)
          .write("changed", 7);
    }
  };
  ASSERT_TRUE(p.run_at_end());
  EXPECT_TRUE(touched);
  ASSERT_EQ(p.sender.transport.sent_of<proto::FileAbort>().size(), 1u);
  EXPECT_EQ(p.sender.transport.sent_of<proto::FileAbort>()[0].reason, proto::AbortReason::Changed);
  EXPECT_TRUE(p.sender.transport.sent_of<proto::FileDone>().empty());
  EXPECT_EQ(p.sender.status(0), Status::Failed);
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "a.bin"));
  EXPECT_TRUE(p.sender.plan.learned.empty()) << "nothing for the digest cache";
}

// A file cut short while it is sent (or gone, or failing with EIO): its next read fails. The
// file is abandoned, the session goes on with the next one.
TEST(SessionLinkDigestAtEnd, AFileThatCannotBeReadIsAbandonedAndTheSessionGoesOn) {
  DigestAtEndPair p;
  bool cut = false;
  p.link.tamper = [&](proto::Message& m) {
    if (!cut && std::holds_alternative<proto::Credit>(m) &&
        !p.sender.transport.sent_of<proto::FileChunk>().empty()) {
      cut = true;
      std::filesystem::resize_file(p.sender.plan.entries[0].local_path, 100);
    }
  };
  ASSERT_TRUE(p.run_at_end());
  EXPECT_TRUE(cut);
  ASSERT_EQ(p.sender.transport.sent_of<proto::FileAbort>().size(), 1u);
  EXPECT_EQ(p.sender.transport.sent_of<proto::FileAbort>()[0],
            (proto::FileAbort{0, proto::AbortReason::Unreadable}));
  EXPECT_EQ(p.sender.status(0), Status::Failed);
  EXPECT_FALSE(std::filesystem::exists(p.receiver.dir.path() / "a.bin"));
  EXPECT_EQ(p.sender.status(1), Status::Good);
  EXPECT_EQ(p.arrived("d/b.bin"), p.sent(1));
  EXPECT_EQ(p.sender.driver->outcome(), O::SomeFailed) << p.log.since(0);
}

// ---- BLAKE3 (PROTOCOL.md 7.10): both drivers, linked, every message through the codec ----

struct Blake3Pair : SessionPair {
  Blake3Pair() {
    // One file of several slots and a short last chunk, one of a single chunk (hashed whole
    // as BLAKE3's root), one of exactly one BLAKE3 chunk, an empty one.
    sender.add_file("a.bin", random_bytes(5 * kSlot + 1, 71), 0640);
    sender.add_file("d/b.bin", random_bytes(100, 72), 0600);
    sender.add_file("c.bin", random_bytes(1024, 73), 0600);
    sender.add_file("empty.bin", {}, 0644);
    sender.plan.algorithm = proto::DigestAlgorithm::Blake3;
    for (std::size_t i = 0; i < sender.contents.size(); ++i)
      sender.plan.entries[i].digest = digest_of(i);
  }
  bool run_at_end() { return SessionPair::run_at_end(proto::DigestAlgorithm::Blake3); }
  Digest digest_of(std::size_t entry) const { return blake3::digest_of(sender.contents.at(entry)); }
};

TEST(SessionLinkBlake3, ATreeArrivesVerifiedByBlake3) {
  Blake3Pair p;
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.transport.sent_of<proto::Open>().at(0).digest_algorithm,
            proto::DigestAlgorithm::Blake3);
  for (std::uint32_t i = 0; i < 4; ++i) EXPECT_EQ(p.sender.status(i), Status::Good) << i;
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
  EXPECT_EQ(p.arrived("d/b.bin"), p.sent(1));
  EXPECT_EQ(p.arrived("c.bin"), p.sent(2));
  for (const auto& v : p.receiver.transport.sent_of<proto::FileVerdict>())
    EXPECT_EQ(v.received_digest, p.digest_of(v.entry)) << "the receiver's own BLAKE3";
}

// The receiver hashes BLAKE3 itself: a digest by another algorithm is a bad verdict.
TEST(SessionLinkBlake3, AnotherAlgorithmsDigestFailsTheFile) {
  Blake3Pair p;
  p.sender.plan.entries[0].digest = merkle::digest_of(p.sender.contents[0]);
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.status(0), Status::Failed);
  EXPECT_EQ(p.sender.status(1), Status::Good);
}

TEST(SessionLinkBlake3, TheDigestAtTheEndIsBlake3AsItIsSent) {
  Blake3Pair p;
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.sender.status(i), Status::Good) << i;
    EXPECT_EQ(p.sender.plan.entries[i].digest, p.digest_of(i)) << "computed as it was sent";
  }
  for (const auto& d : p.sender.transport.sent_of<proto::FileDone>())
    EXPECT_EQ(d.digest, p.digest_of(d.entry));
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
}

// A kept partial of a BLAKE3 session (its nodes BLAKE3's: the partial's format 2): offered
// without its digest, held, checked by the sender, resumed, and the whole file verified.
TEST(SessionLinkBlake3, AKeptPartialIsHeldResumedAndTheWholeFileVerified) {
  Blake3Pair p;
  ASSERT_NO_FATAL_FAILURE(
      p.keep_partial("a.bin", 0, 3 * kSlot, proto::Digest{}, proto::DigestAlgorithm::Blake3));
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  const auto holds = p.receiver.transport.sent_of<proto::Holds>();
  ASSERT_FALSE(holds.empty());
  EXPECT_EQ(holds[0].length, 3u * kSlot);
  EXPECT_EQ(holds[0].digest, std::nullopt);
  EXPECT_EQ(p.sender.transport.sent_of<proto::Continue>().at(0).digest,
            blake3::digest_of(std::span(p.sender.contents.at(0)).first(3 * kSlot)))
      << "the sender proves the prefix by its hash, as a file of its length";
  p.expect_resumed(0, "a.bin", 3u * kSlot, p.digest_of(0));
}

// With the digests first (PROTOCOL.md 7.6): the Offer's BLAKE3 digest matches the kept
// partial's, which is resumed.
TEST(SessionLinkBlake3, ADigestFirstOfferResumesAKeptPartial) {
  Blake3Pair p;
  ASSERT_NO_FATAL_FAILURE(
      p.keep_partial("a.bin", 0, 2 * kSlot, p.digest_of(0), proto::DigestAlgorithm::Blake3));
  ASSERT_TRUE(p.run());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_EQ(p.sender.plan.results[0].resumed_from, 2u * kSlot);
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
}

// A partial kept for the fs-verity digest never continues a BLAKE3 transfer of the same
// path (its nodes are another tree's): the file goes whole, and verifies.
TEST(SessionLinkBlake3, AnFsVerityPartialIsNotResumedByBlake3) {
  Blake3Pair p;
  ASSERT_NO_FATAL_FAILURE(p.keep_partial("a.bin", 0, 3 * kSlot));
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_TRUE(p.receiver.transport.sent_of<proto::Holds>().empty());
  EXPECT_EQ(p.sender.plan.results[0].resumed_from, 0u);
  EXPECT_EQ(p.arrived("a.bin"), p.sent(0));
}

TEST(SessionLinkBlake3, AFileAlreadyThereIsCheckedByItsBlake3AndNotSent) {
  Blake3Pair p;
  p.receiver.options.overwrite = false;
  p.place_at_receiver("a.bin", p.sent(0));
  ASSERT_TRUE(p.run_at_end());
  EXPECT_EQ(p.sender.driver->outcome(), O::Success);
  EXPECT_TRUE(p.sender.plan.results[0].identical);
  const auto holds = p.receiver.transport.sent_of<proto::Holds>();
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].digest, std::nullopt);
  EXPECT_EQ(p.sender.transport.sent_of<proto::Continue>().at(0).digest, p.digest_of(0));
  for (const auto& c : p.sender.transport.sent_of<proto::FileChunk>()) EXPECT_NE(c.entry, 0u);
}

}  // namespace
}  // namespace rdmax::test::sender_rig
