#pragma once
// The receiver's connection driver on a test rig: the recipes that bring a real Connection
// over the fake transport into each state through real inputs, the inputs that raise each
// event, and the checks of what it did (its state, what it posted, the file on disk, how it
// leaves). Used by receiver_driver_rows_test.cpp and receiver_driver_ledger_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "driver_harness.hpp"

namespace rdmax::test::receiver_rig {

using S = proto::ReceiverState;
using E = proto::ReceiverEvent;
using T = proto::MessageType;
using proto::ErrorCode;

inline constexpr std::uint32_t kSlot = 4096;
inline constexpr auto kLater = std::chrono::hours(1);  // past every deadline

// Where a row leaves the file: not checked; nothing (no temporary, nothing under the final
// name); a temporary only; the received file under its final name, and nothing else.
enum class File { Any, None, Temp, Final };
// How a row leaves the connection: carrying on; Closing, rdma_disconnect once every posted
// SEND has completed; Closed, its queue pair stopped.
enum class End { Open, Disconnects, Released };

struct Want {
  S state;
  std::vector<Posted> posted;  // everything the row's event made it post, in order
  File file = File::Any;
  End end = End::Open;
};

inline Posted error(ErrorCode code) {
  return {T::Error, static_cast<int>(code)};
}
inline Posted verdict(proto::VerdictCode code) {
  return {T::Verdict, static_cast<int>(code)};
}
inline Posted reject(proto::RejectReason reason) {
  return {T::Reject, static_cast<int>(reason)};
}

// The receiver, its inputs, and the recipes that bring it into each state. The window is two
// slots; the file, unless a test says otherwise, two chunks.
struct Rig {
  LogCapture log;        // first: it outlives the connection
  ReceiverHarness h{1};  // one pool thread: the gate decides how far the disk work gets
  PoolGate gate{h.pool};
  std::vector<std::uint8_t> bytes = random_bytes(2 * kSlot);
  std::string name = "f.bin";
  std::uint16_t version = proto::kVersion1;
  std::uint32_t keepalive_ms = 0;
  std::optional<Digest> digest;  // what the Hello announces, if not the file's

  Rig() { h.options.slots = 2; }
  ~Rig() {
    gate.open_all();
    if (h.connection) h.settle([&] { return h.connection->idle(); });
  }

  // ---- Inputs ----
  proto::Hello hello() const {
    proto::Hello m{bytes.size(), digest.value_or(sha256_of(bytes)), 0, name};
    m.keepalive_ms = keepalive_ms;
    return m;
  }
  void peer(const proto::Message& m) { h.send(m, version); }
  void done() { peer(proto::Done{bytes.size()}); }
  proto::Accept accept() const { return h.transport.sent_of<proto::Accept>().at(0); }
  std::uint32_t rkey_of(std::uint32_t slot) const {  // the latest credited, 0 if none
    std::uint32_t key = 0;
    for (const auto& c : h.transport.sent_of<proto::Credit>())
      if (c.slot == slot) key = c.rkey;
    return key;
  }
  // The sender WRITEs bytes [offset, offset + length) into `slot` with its latest key and
  // announces them; returns whether the WRITE landed.
  bool write(std::uint64_t offset, std::uint32_t length, std::uint32_t slot) {
    const auto a = accept();
    std::vector<std::uint8_t> data(length);
    if (offset + length <= bytes.size())
      std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(offset), length, data.begin());
    // A zero-length WRITE carries nothing: only its Chunk arrives.
    const bool landed =
        length == 0 || h.transport.write_remote(a.region_addr + std::uint64_t{slot} * a.slot_size,
                                                rkey_of(slot), data);
    peer(proto::Chunk{offset, length, slot});
    return landed;
  }
  bool chunk(std::uint32_t i) {  // chunk i, in slot i % 2
    const std::uint64_t offset = std::uint64_t{i} * kSlot;
    return write(offset,
                 static_cast<std::uint32_t>(std::min<std::uint64_t>(kSlot, bytes.size() - offset)),
                 i % 2);
  }
  bool settle_idle() {
    return h.settle([&] { return h.connection->idle(); });
  }
  bool settle_out_of(S s) {
    return h.settle([&] { return h.state() != s; });
  }

  // ---- Recipes: each ends in its state or fails ----
  void await_hello() { h.start(); }
  void checking_hello() {
    h.start();
    peer(hello());
    ASSERT_EQ(h.state(), S::CheckingHello);
  }
  // CheckingHello with the temporary created, the result not yet taken.
  void checking_hello_created() {
    h.start();
    ASSERT_TRUE(gate.hold());
    peer(hello());
    gate.add();
    gate.open_next();
    ASSERT_TRUE(gate.reached(2));
    ASSERT_EQ(h.state(), S::CheckingHello);
    ASSERT_EQ(open_files_under(h.dir.path()), 1u);
  }
  void receiving() {
    checking_hello();
    ASSERT_TRUE(settle_out_of(S::CheckingHello));
    ASSERT_EQ(h.state(), S::Receiving);
  }
  void draining() {  // Done overtook chunk 0, which is still being stored
    receiving();
    ASSERT_TRUE(chunk(0));
    done();
    ASSERT_EQ(h.state(), S::Draining);
  }
  // Draining with both chunks queued; barrier 2 holds the pool after chunk 0's hashing and
  // write and before chunk 1's (the one thread takes the hash, disk and gate queues in turn).
  void draining_two_stores() {
    receiving();
    ASSERT_TRUE(gate.hold());
    ASSERT_TRUE(chunk(0));
    ASSERT_TRUE(chunk(1));
    gate.add();
    done();
    ASSERT_EQ(h.state(), S::Draining);
    gate.open_next();
    ASSERT_TRUE(gate.reached(2));
  }
  // ... and chunk 0's result taken; barrier 3 holds the pool after chunk 1's jobs.
  void draining_last_store() {
    draining_two_stores();
    run_pool_once(h.pool);
    ASSERT_EQ(h.state(), S::Draining);
    gate.add();
    gate.open_next();
    ASSERT_TRUE(gate.reached(3));
  }
  // Chunk 0 stored; chunk 1's write failed (a full disk) and its result waits.
  void failed_store(bool then_done) {
    receiving();
    ASSERT_TRUE(chunk(0));
    ASSERT_TRUE(settle_idle());
    ASSERT_TRUE(gate.hold());
    ASSERT_TRUE(chunk(1));
    if (then_done) done();
    FileSizeLimit limit(kSlot);  // chunk 1 starts at kSlot
    gate.add();
    gate.open_next();
    ASSERT_TRUE(gate.reached(2));
  }
  void all_stored() {
    receiving();
    ASSERT_TRUE(chunk(0));
    ASSERT_TRUE(chunk(1));
    ASSERT_TRUE(settle_idle());
    ASSERT_EQ(h.state(), S::Receiving);
  }
  void verifying() {  // the commit waits at the gate
    all_stored();
    ASSERT_TRUE(gate.hold());
    done();
    ASSERT_EQ(h.state(), S::Verifying);
  }
  void await_id() {
    all_stored();
    done();
    ASSERT_TRUE(settle_out_of(S::Verifying));
    ASSERT_EQ(h.state(), S::AwaitId);
  }
  void closing() {
    await_id();
    peer(proto::Bye{});
    ASSERT_EQ(h.state(), S::Closing);
  }
  void closed() {
    closing();
    h.connection->on_disconnected();
    ASSERT_EQ(h.state(), S::Closed);
  }
  void reach(S s) {
    switch (s) {
      case S::AwaitHello:
        return await_hello();
      case S::CheckingHello:
        return checking_hello_created();
      case S::Receiving:
        return receiving();
      case S::Draining:
        return draining();
      case S::Verifying:
        return verifying();
      case S::AwaitId:
        return await_id();
      default:
        FAIL() << "no recipe for " << proto::to_string(s);
    }
  }

  // ---- The transport's and the owner's inputs ----
  void disconnected() { h.connection->on_disconnected(); }
  void transport_fails() {
    h.transport.fail("completion error: transport retry counter exceeded");
    h.poll();
  }
  void undecodable_message() {
    h.transport.deliver_bytes(test::undecodable(version));
    h.poll();
  }
  void poll_fails() {
    h.transport.fail_next_poll = true;
    h.poll();
  }
  void tick_late() { h.connection->tick(Clock::now() + kLater); }

  // ---- Checks ----
  void expect_file(File file) const {
    const auto dir = h.dir.path();
    const std::size_t entries = static_cast<std::size_t>(std::distance(
        std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
    switch (file) {
      case File::Any:
        return;
      case File::None:
        EXPECT_EQ(entries, 0u) << "nothing may be left in the directory";
        EXPECT_EQ(open_files_under(dir), 0u) << "the temporary must be gone";
        return;
      case File::Temp:
        EXPECT_FALSE(std::filesystem::exists(dir / name));
        EXPECT_EQ(open_files_under(dir), 1u) << "the temporary must exist";
        return;
      case File::Final:
        EXPECT_EQ(entries, 1u);
        EXPECT_EQ(read_file(dir / name), std::string(bytes.begin(), bytes.end()));
        return;
    }
  }
  void check(const Want& want, std::size_t from) {
    EXPECT_EQ(proto::to_string(h.state()), std::string(proto::to_string(want.state)));
    EXPECT_EQ(describe_sent(h.transport, from, want.posted), describe(want.posted));
    for (std::size_t i = from; i < h.transport.sent.size(); ++i)
      EXPECT_EQ(h.transport.sent[i].version, version);
    if (want.end == End::Disconnects) {
      if (h.transport.sent.size() > from) {
        EXPECT_FALSE(h.transport.disconnected) << "disconnected before its last SEND completed";
      }
      h.transport.complete_sends();
      h.poll();
      EXPECT_TRUE(h.transport.disconnected);
      EXPECT_FALSE(h.transport.shut);
      EXPECT_EQ(h.state(), S::Closing);
    } else if (want.end == End::Released) {
      EXPECT_TRUE(h.transport.shut);
    }
    if (want.end != End::Open) {
      gate.open_all();
      EXPECT_TRUE(settle_idle());
    }
    expect_file(want.file);
  }
};

using Step = void (*)(Rig&);

}  // namespace rdmax::test::receiver_rig
