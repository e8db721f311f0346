#pragma once
// The sender's one driver and the receiver's driver linked through their fakes
// (driver_harness.hpp, LinkOf), with what the link tests ask of the pair.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "sender_session_rig.hpp"

namespace rdmax::test::sender_rig {

struct SessionPair {
  LogCapture log;  // first: it outlives both connections
  ReceiverHarness receiver;
  SessionHarness sender;
  LinkOf<SessionHarness> link{receiver, sender};
  std::optional<receiver::PartialStore> partials;  // keep_partial()'s

  SessionPair() {
    receiver.options.slots = 3;
    sender.plan.entries.clear();
    sender.plan.results.clear();
    sender.contents.clear();
  }
  ~SessionPair() {
    receiver.settle([&] { return receiver.connection->idle(); });
  }
  void start() {
    receiver.start();
    sender.start();
    sender.driver->on_setup(proto::SetupEvent::AddressResolved);
    sender.driver->on_setup(proto::SetupEvent::RouteResolved);
    sender.driver->on_established();
  }
  // DISCONNECTED reaches both sides once one side called rdma_disconnect (rdma_cm tells the
  // side that called it too).
  void pass_disconnects() {
    const bool gone = receiver.transport.disconnected || sender.transport.disconnected;
    if (gone && sender.state() != proto::SenderState::Done) sender.driver->on_disconnected();
    if (gone && !receiver.connection->closed()) receiver.connection->on_disconnected();
  }
  bool run_to_the_end() {
    return link.run_until([&] {
      pass_disconnects();
      return sender.ended() && receiver.connection->closed();
    });
  }
  bool run() {  // false: it did not end in time
    start();
    return run_to_the_end();
  }
  // run() with the digest at the end (PROTOCOL.md 7.9), hashed on the receiver's pool.
  bool run_at_end(proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256) {
    sender.with_digest_at_end(&receiver.pool);
    sender.plan.algorithm = algorithm;
    return run();
  }
  // A partial of `path` kept at the receiver, holding the first `kept` bytes of entry
  // `entry`'s contents, as an interrupted transfer leaves it (keep_partial_in()).
  void keep_partial(const std::string& path, std::size_t entry, std::uint32_t kept,
                    const proto::Digest& digest = {},
                    proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256) {
    partials.emplace(receiver.dir.fd(), receiver::PartialStore::Limits{});
    receiver.context.partials = &*partials;
    keep_partial_in(*partials, path, sender.contents.at(entry), kept, digest, algorithm);
  }
  std::string arrived(const std::string& name) const {
    return read_file(receiver.dir.path() / name);
  }
  std::string sent(std::size_t entry) const {
    const auto& bytes = sender.contents.at(entry);
    return {bytes.begin(), bytes.end()};
  }
  // A file already at the receiver under `name` (a path beneath its directory).
  void place_at_receiver(const std::string& name, const std::string& bytes) const {
    const auto path = receiver.dir.path() / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }
  // The entry was resumed at `from` with the digest at the end: its digest computed from the
  // prefix's nodes and the rest, no chunk of it below `from`, and the whole file arrived.
  void expect_resumed(std::uint32_t entry, const std::string& name, std::uint64_t from,
                      const Digest& digest) const {
    EXPECT_EQ(sender.plan.results[entry].resumed_from, from);
    EXPECT_EQ(arrived(name), sent(entry));
    EXPECT_EQ(sender.plan.entries[entry].digest, digest) << "prefix nodes, then the rest";
    for (const auto& c : sender.transport.sent_of<proto::FileChunk>())
      if (c.entry == entry) {
        EXPECT_GE(c.offset, from);
      }
  }
};

}  // namespace rdmax::test::sender_rig
