#pragma once
// The sender's session driver (sender/connection.hpp) on a test rig: a real
// Connection over the fake transport, carrying a plan of real files, the recipes that
// bring it into its states through real inputs, and the checks of what it did (its state,
// what it posted, the outcome and each entry's result, how it leaves). Used by
// sender_driver_rows_test.cpp and sender_driver_session_test.cpp.

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto/auth_proof.hpp"
#include "protocol/stripes.hpp"
#include "sender/connection.hpp"
#include "sender/stripe_link.hpp"
#include "sender_driver_rig.hpp"

namespace rdmax::test::sender_rig {

using Status = sender::EntryResult::Status;

// A stripe group of one connection that never stripes a file (docs/PROTOCOL.md 7.12): what the
// driver does with the extension and Stripes alone.
struct QuietStripeLink final : sender::StripeLink {
  proto::StripeGroup group() const override { return {{7}, 1, 2}; }
  std::optional<bool> offer_striped(std::uint32_t) override { return false; }
  void striped_taken(std::uint32_t, std::uint32_t, std::uint64_t, std::uint32_t) override {}
  void joined_settled(std::uint32_t, bool) override {}
};

// A Connection over a fake transport, for a plan of files in a temporary directory.
struct SessionHarness {
  TempDir dir{"rdmax-session"};
  sender::TransferPlan plan{proto::DigestAlgorithm::WholeFileSha256, {}, {}};
  std::vector<std::vector<std::uint8_t>> contents;  // each file's bytes, by entry
  sender::SenderSettings settings;
  // --digest-at-end (docs/PROTOCOL.md 7.9), when with_digest_at_end() is called: the
  // hashing threads (before the driver, which they outlive).
  std::optional<WorkPool> pool;
  // `shared`: a pool the test runs already (a linked receiver's), else one of its own.
  void with_digest_at_end(WorkPool* shared = nullptr) {
    plan.algorithm = proto::DigestAlgorithm::FsVeritySha256;
    if (shared == nullptr) shared = &pool.emplace(2);
    settings.digest_at_end = true;
    settings.pool = shared;
    for (auto& e : plan.entries) e.digest_known = false;
  }
  // Runs the hashing jobs' completions until `done` holds (false after 10 s), counting them
  // in `hashing_completions`.
  std::size_t hashing_completions = 0;
  template <class Done>
  bool settle_hashing(Done done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      const std::size_t ran = pool->run_completions();
      hashing_completions += ran;
      if (ran == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      driver->poll();
    }
    return true;
  }
  FakeTransport transport;
  ScriptedCm cm{transport};
  std::optional<sender::Connection> driver;
  // --key-file (docs/PROTOCOL.md 7.8), when with_key() is called: alice, 00 01 ... 1f,
  // and --no-seal: the messages after the proofs stay in clear, for the tests to read.
  // with_sealed_key(): the default, sealed (7.11).
  proto::SenderKey key;
  void with_key(bool seal = false) {
    key.id = "alice";
    key.key.clear();
    for (int i = 0; i < 32; ++i) key.key.push_back(static_cast<char>(i));
    settings.key = &key;
    settings.seal = seal;
  }
  void with_sealed_key() { with_key(true); }
  // Member 1 of a group of 2 (7.12): the Open carries the extension, Stripes is expected.
  QuietStripeLink stripe_link;
  void with_stripes() { settings.stripes = &stripe_link; }

  void add_file(const std::string& remote, std::vector<std::uint8_t> bytes,
                std::uint32_t mode = 0644) {
    const auto local = dir.path() / ("src" + std::to_string(plan.entries.size()));
    std::ofstream(local, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    plan.entries.push_back({proto::EntryKind::File, local.string(), remote, bytes.size(), mode,
                            1700000000, 7, sha256_of(bytes)});
    plan.results.emplace_back();
    contents.push_back(std::move(bytes));
  }
  void add_directory(const std::string& remote) {
    plan.entries.push_back(
        {proto::EntryKind::Directory, dir.path().string(), remote, 0, 0755, 1600000000, 0, {}});
    plan.results.emplace_back();
    contents.emplace_back();
  }
  // The first of several connections: its end waits for the others (others_finished).
  bool lead_of_several = false;
  // ResolvingAddress, carrying every entry of the plan in order.
  void start() {
    settings.version = proto::kVersion2;
    settings.timeout = std::chrono::seconds(3);
    settings.connect_timeout = std::chrono::seconds(3);
    std::vector<std::uint32_t> all(plan.entries.size());
    std::iota(all.begin(), all.end(), 0u);
    settings.hold_for_others = lead_of_several;
    driver.emplace(settings, plan, std::move(all), cm, "peer");
    driver->step_log().record();
    driver->start();
  }
  void receive(const proto::Message& message, std::uint16_t version = proto::kVersion2) {
    transport.deliver(message, version);
    driver->poll();
  }
  void complete_sends() {
    transport.complete_sends();
    driver->poll();
  }
  proto::SenderState state() const { return driver->state(); }
  Status status(std::uint32_t entry) const { return plan.results.at(entry).status; }
  // Whether the connection ended: Done, and, as its loop would, the jobs that still ran at the
  // end waited for on ticks (bounded) until it settles (sender::Connection::finished).
  bool ended() {
    if (driver->state() != proto::SenderState::Done) return false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!driver->finished() && std::chrono::steady_clock::now() < until) {
      if (!driver->idle()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      driver->tick(std::chrono::steady_clock::now());
    }
    return driver->finished();
  }
};

// The session's entries, unless a test says otherwise: a file of three chunks (the last one
// short) and a file of part of one. The receiver offers two slots.
struct SessionRig {
  LogCapture log;  // first: it outlives the connection
  SessionHarness h;
  proto::Accept accept{0x10000, 0, kSlot, 2};
  proto::Challenge challenge{[] {
    proto::Nonce n{};
    n.fill(0x77);
    return n;
  }()};

  SessionRig() {
    h.add_file("a.bin", random_bytes(2 * kSlot + 100, 21), 0640);
    h.add_file("d/b.bin", random_bytes(100, 22), 0600);
  }
  const std::vector<DriverCore::Step>& steps() { return h.driver->step_log().steps(); }

  // ---- Recipes: each ends in its state or fails ----
  void resolving_address() { h.start(); }
  void resolving_route() {
    h.start();
    h.driver->on_setup(proto::SetupEvent::AddressResolved);
    ASSERT_EQ(h.driver->setup_state(), proto::SetupState::ResolvingRoute);
  }
  void connecting() {
    resolving_route();
    h.driver->on_setup(proto::SetupEvent::RouteResolved);
    ASSERT_FALSE(h.driver->setup_state().has_value());
    ASSERT_EQ(h.state(), S::Connecting);
  }
  void await_accept() {  // Open sent
    connecting();
    h.driver->on_established();
    ASSERT_EQ(h.state(), S::AwaitAccept);
  }
  // With a key: challenged, our Proof sent.
  void proving() {
    h.with_key();
    await_accept();
    h.receive(challenge);
    ASSERT_EQ(h.transport.sent_of<proto::Proof>().size(), 1u);
  }
  // ... and the receiver's Proof checked good.
  void receiver_proven() {
    proving();
    h.receive(receiver_proof());
    ASSERT_EQ(h.state(), S::AwaitAccept);
  }
  proto::Open open_sent() const { return h.transport.sent_of<proto::Open>().at(0); }
  proto::Proof receiver_proof() const {
    return {auth_proof(proto::ProofRole::Receiver, h.key.key, open_sent(), challenge)};
  }
  void in_session() {  // every entry offered (at most kMaxEntriesInFlight), nothing credited
    await_accept();
    h.receive(accept);
    ASSERT_EQ(h.state(), S::InSession);
  }
  void credited() {  // ... and both slots credited; nothing taken yet
    in_session();
    h.receive(proto::Credit{0, 100});
    h.receive(proto::Credit{1, 101});
    ASSERT_TRUE(h.transport.sent_of<proto::FileChunk>().empty());
  }
  // Entry 1 (one chunk) taken, written, its FileDone sent; entry 0 only offered.
  void second_done() {
    credited();
    h.receive(proto::Take{1});
    h.complete_sends();
    ASSERT_EQ(file_dones().size(), 1u);
  }
  // Both files written and done; entry 0's verdict (Good) in, entry 1's to come.
  void all_but_last_settled() {
    second_done();
    h.receive(proto::Take{0});  // slot 1 still credited: chunk 0
    h.complete_sends();
    h.receive(proto::Credit{0, 200});
    h.receive(proto::Credit{1, 201});
    h.complete_sends();
    ASSERT_EQ(file_dones().size(), 2u);
    h.receive(proto::FileVerdict{0, VerdictCode::Good, {}});
    ASSERT_EQ(h.status(0), Status::Good);
    ASSERT_EQ(h.state(), S::InSession);
  }
  void await_secret() {
    h.settings.id = "alice";
    all_but_last_settled();
    h.receive(proto::FileVerdict{1, VerdictCode::Good, {}});
    ASSERT_EQ(h.state(), S::AwaitSecret);
  }
  void closing() {  // the session refused
    await_accept();
    h.receive(proto::Reject{proto::RejectReason::NoMemory, "full"});
    ASSERT_EQ(h.state(), S::Closing);
  }
  void done() {
    closing();
    h.complete_sends();
    h.driver->on_disconnected();
    ASSERT_TRUE(h.ended());
  }
  void reach(S s) {
    switch (s) {
      case S::Connecting:
        return connecting();
      case S::AwaitAccept:
        return await_accept();
      case S::InSession:
        return credited();
      case S::AwaitSecret:
        return await_secret();
      default:
        FAIL() << "no session recipe for " << proto::to_string(s);
    }
  }

  void reach(proto::SetupState s) {
    if (s == proto::SetupState::ResolvingAddress) return resolving_address();
    resolving_route();
  }

  std::vector<proto::Offer> offers() const { return h.transport.sent_of<proto::Offer>(); }
  std::vector<proto::FileChunk> chunks() const { return h.transport.sent_of<proto::FileChunk>(); }
  std::vector<proto::FileDone> file_dones() const { return h.transport.sent_of<proto::FileDone>(); }

  // ---- The transport's and the owner's inputs ----
  bool has_transport() const { return h.cm.connects > 0 && !h.cm.fail_connect; }
  void transport_fails() {
    if (!has_transport()) return h.driver->on_cm_failure("the RDMA device was removed");
    h.transport.fail("completion error: transport retry counter exceeded");
    h.driver->poll();
  }
  void undecodable_message() {
    h.transport.deliver_bytes(test::undecodable(proto::kVersion2));
    h.driver->poll();
  }
  void poll_fails() {
    h.transport.fail_next_poll = true;
    h.driver->poll();
  }
  void tick_late() { h.driver->tick(Clock::now() + kLater); }

  void check(const Want& want, std::size_t from) { check_row(h, want, from, proto::kVersion2); }
};

using SessionStep = void (*)(SessionRig&);

}  // namespace rdmax::test::sender_rig
