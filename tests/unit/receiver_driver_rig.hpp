#pragma once
// The receiver's connection driver on a test rig: the recipes that bring a real Connection
// over the fake transport into each state through real inputs, the inputs that raise each
// event, and the checks of what it did (its state, what it posted, the file on disk, how it
// leaves). Used by receiver_driver_rows_test.cpp and receiver_driver_ledger_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "common/crypto/auth_proof.hpp"
#include "common/digest/merkle.hpp"
#include "driver_harness.hpp"
#include "receiver/partial_store.hpp"

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
inline Posted refuse(proto::RejectReason reason) {
  return {T::Refuse, static_cast<int>(reason)};
}
inline Posted file_verdict(proto::VerdictCode code) {
  return {T::FileVerdict, static_cast<int>(code)};
}

// The process's umask, read without changing it (pool threads may be creating files).
inline unsigned process_umask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("Umask:"))
      return static_cast<unsigned>(std::stoul(line.substr(6), nullptr, 8));
  return 022;
}

// A session's entry as the sender offers it (docs/PROTOCOL.md 7.5).
struct SessionFile {
  std::string path;
  std::vector<std::uint8_t> bytes;
  std::uint16_t mode;
  std::int64_t mtime_sec;
  std::uint32_t mtime_nsec;
  proto::EntryKind kind = proto::EntryKind::File;
};

// The receiver, its inputs, and the recipes that bring it into each state. The window is two
// slots; the file, unless a test says otherwise, two chunks.
struct Rig {
  LogCapture log;  // first: it outlives the connection
  // Resume (PROTOCOL.md 7.6): partial files, when a row sets them up; outlives the connection.
  std::optional<receiver::PartialStore> partials;
  ReceiverHarness h{1};  // one pool thread: the gate decides how far the disk work gets
  PoolGate gate{h.pool};
  std::vector<std::uint8_t> bytes = random_bytes(2 * kSlot);
  std::string name = "f.bin";
  std::uint16_t version = proto::kVersion1;
  std::uint32_t keepalive_ms = 0;
  std::optional<Digest> digest;  // what the Hello (or an Offer) announces, if not the file's
  bool resume = false;           // the Hello or Open carries kExtensionResume
  // The Open carries kExtensionDigestAtEnd, and the entries are offered without their digest
  // (flagged(i)), which their FileDones (file_done) then carry (PROTOCOL.md 7.9).
  bool digest_at_end = false;
  // With digest_at_end: the Open carries kExtensionProveHeld, as this revision's sender's
  // does (7.9: a Holds then tells no digest).
  bool prove_held = true;
  std::uint64_t extra_total_bytes = 0;  // the Open announces this much more than the entries
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::WholeFileSha256;
  // A session's entries: a file of two chunks and one of a part of a chunk.
  std::vector<SessionFile> entries{{"a.bin", random_bytes(2 * kSlot, 11), 0640, 1700000000, 5},
                                   {"b.bin", random_bytes(100, 12), 0600, 1600000000, 7}};

  Rig() { h.options.slots = 2; }
  const std::vector<DriverCore::Step>& steps() { return h.connection->step_log().steps(); }
  ~Rig() {
    gate.open_all();
    if (h.connection) h.settle([&] { return h.connection->idle(); });
  }

  // ---- Inputs ----
  proto::Hello hello() const {
    proto::Hello m{bytes.size(), digest.value_or(sha256_of(bytes)), 0, name};
    m.keepalive_ms = keepalive_ms;
    if (resume) m.extensions.push_back({proto::kExtensionResume, {}});
    return m;
  }
  void peer(const proto::Message& m) { h.send(m, version); }
  void done() { peer(proto::Done{bytes.size()}); }
  proto::Accept accept() const { return h.transport.sent_of<proto::Accept>().at(0); }
  // The sender WRITEs bytes [offset, offset + length) into `slot` with its latest key and
  // announces them; returns whether the WRITE landed.
  bool write(std::uint64_t offset, std::uint32_t length, std::uint32_t slot) {
    std::vector<std::uint8_t> data(length);
    if (offset + length <= bytes.size())
      std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(offset), length, data.begin());
    // A zero-length WRITE carries nothing: only its Chunk arrives.
    const bool landed = length == 0 || h.transport.write_slot(slot, data);
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

  // ---- Session inputs (version 2) ----
  proto::Open open() const {
    std::uint64_t total = extra_total_bytes;
    for (const auto& e : entries) total += e.bytes.size();
    proto::Open o{algorithm, keepalive_ms, 0, static_cast<std::uint32_t>(entries.size()), total};
    if (resume) o.extensions.push_back({proto::kExtensionResume, {}});
    if (digest_at_end) o.extensions.push_back({proto::kExtensionDigestAtEnd, {}});
    if (digest_at_end && prove_held) o.extensions.push_back({proto::kExtensionProveHeld, {}});
    return o;
  }
  proto::Offer flagged(std::uint32_t i) {
    proto::Offer o = offer(i);
    o.digest = {};
    o.digest_at_end = true;
    offered_flagged.insert(i);
    return o;
  }
  std::set<std::uint32_t> offered_flagged;  // their FileDones carry the digest
  proto::Digest digest_of(const std::vector<std::uint8_t>& data) const {
    return algorithm == proto::DigestAlgorithm::FsVeritySha256 ? merkle::digest_of(data)
                                                               : sha256_of(data);
  }
  proto::Digest digest_of_entry(std::uint32_t i) const { return digest_of(entries.at(i).bytes); }
  proto::Offer offer(std::uint32_t i) const {
    const SessionFile& e = entries.at(i);
    const bool file = e.kind == proto::EntryKind::File;
    return {i,
            e.kind,
            e.mode,
            e.bytes.size(),
            e.mtime_sec,
            e.mtime_nsec,
            file ? digest.value_or(algorithm == proto::DigestAlgorithm::FsVeritySha256
                                       ? merkle::digest_of(e.bytes)
                                       : sha256_of(e.bytes))
                 : Digest{},
            e.path};
  }
  // The sender WRITEs bytes [offset, offset + length) of entry i into `slot` and announces
  // them in a FileChunk; returns whether the WRITE landed.
  bool file_chunk(std::uint32_t i, std::uint64_t offset, std::uint32_t length, std::uint32_t slot) {
    const auto& data = entries.at(i).bytes;
    const bool landed =
        length == 0 || h.transport.write_slot(
                           slot, std::span(data).subspan(static_cast<std::size_t>(offset), length));
    peer(proto::FileChunk{i, slot, offset, length});
    return landed;
  }
  void file_done(std::uint32_t i) {
    proto::FileDone done{i, entries.at(i).bytes.size()};
    if (offered_flagged.contains(i)) done.digest = digest.value_or(digest_of_entry(i));
    peer(done);
  }
  template <typename M>
  std::size_t sent_count() const {
    return h.transport.sent_of<M>().size();
  }
  bool settle_until_sent(T type, std::size_t count = 1) {
    return h.settle([&] {
      std::size_t n = 0;
      for (const auto& s : h.transport.sent) n += proto::type_of(s.message) == type ? 1 : 0;
      return n >= count;
    });
  }
  std::optional<proto::FileVerdict> verdict_of(std::uint32_t entry) const {
    for (const auto& v : h.transport.sent_of<proto::FileVerdict>())
      if (v.entry == entry) return v;
    return std::nullopt;
  }
  // Entry i committed under its path with its bytes, mode and time.
  void expect_entry_final(std::uint32_t i) const {
    const SessionFile& e = entries.at(i);
    const auto path = h.dir.path() / e.path;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    if (e.kind == proto::EntryKind::File) {
      EXPECT_EQ(read_file(path), std::string(e.bytes.begin(), e.bytes.end()));
    } else {
      EXPECT_TRUE(S_ISDIR(st.st_mode));
    }
    EXPECT_EQ(st.st_mode & 07777, e.mode & ~process_umask() & 07777);
    EXPECT_EQ(st.st_mtim.tv_sec, e.mtime_sec);
    EXPECT_EQ(st.st_mtim.tv_nsec, static_cast<long>(e.mtime_nsec));
  }

  // A Hello's answer went (Accept, Have or Reject), or the connection is ending.
  bool settle_answered() {
    return h.settle([&] {
      return sent_count<proto::Accept>() + sent_count<proto::Have>() + sent_count<proto::Reject>() >
                 0 ||
             h.state() != S::InSession;
    });
  }

  // ---- Recipes: each ends in its state or fails ----
  // A Hello is served as entry 0 of a session of one entry (receiver/hello_edge.hpp): the
  // connection is InSession from the Hello to the verdict.
  void await_hello() { h.start(); }
  // ---- Sender keys (PROTOCOL.md 7.8): alice's key is 00 01 ... 1f, bob's 1f 1e ... 00 and
  // bob writes beneath bob-dir. ----
  static constexpr const char* kSendersFile =
      "alice 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
      "bob 1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100 bob-dir\n";
  std::string key_id = "alice";
  std::string sender_key = counting_key(0, 1);  // what the sender proves with
  proto::Open open_sent{};
  static std::string counting_key(int first, int step) {
    std::string k;
    for (int i = 0; i < 32; ++i) k.push_back(static_cast<char>(first + step * i));
    return k;
  }
  proto::Open keyed_open() const {
    proto::Open o = open();
    proto::Nonce nonce{};
    nonce.fill(0x5a);
    o.extensions.push_back(proto::sender_key_extension(nonce, key_id));
    return o;
  }
  // AwaitOpen on a receiver that requires keys.
  void await_keyed_open() {
    version = proto::kVersion2;
    h.require_keys(kSendersFile);
    h.start();
  }
  // Challenged: the Open claimed key_id's key.
  void authenticating() {
    await_keyed_open();
    open_sent = keyed_open();
    peer(open_sent);
    ASSERT_EQ(h.state(), S::Authenticating);
  }
  proto::Challenge challenge() const { return h.transport.sent_of<proto::Challenge>().at(0); }
  proto::Proof proof() const {
    return {auth_proof(proto::ProofRole::Sender, sender_key, open_sent, challenge())};
  }
  void checking_hello() {  // entry 0 being checked, its file being created
    h.start();
    peer(hello());
    ASSERT_EQ(h.state(), S::InSession);
  }
  // ... with the temporary created, the result not yet taken.
  void checking_hello_created() {
    h.start();
    ASSERT_TRUE(gate.hold());
    peer(hello());
    gate.add();
    gate.open_next();
    ASSERT_TRUE(gate.reached(2));
    ASSERT_EQ(h.state(), S::InSession);
    ASSERT_EQ(open_files_under(h.dir.path()), 1u);
  }
  void receiving() {  // the Hello's Accept and Credits sent
    checking_hello();
    ASSERT_TRUE(settle_answered());
    ASSERT_EQ(sent_count<proto::Accept>(), 1u);
    ASSERT_EQ(h.state(), S::InSession);
  }
  void draining() {  // Done overtook chunk 0, which is still being stored
    receiving();
    ASSERT_TRUE(chunk(0));
    done();
    ASSERT_EQ(h.state(), S::InSession);
  }
  // Done after both chunks were queued; barrier 2 holds the pool after chunk 0's hashing and
  // write and before chunk 1's (the one thread takes the hash, disk and gate queues in turn).
  // (Barrier 2 holds it once both slots are revoked, until their stores are queued.)
  void draining_two_stores() {
    receiving();
    ASSERT_TRUE(gate.hold());
    ASSERT_TRUE(chunk(0));
    ASSERT_TRUE(chunk(1));
    slots_taken_behind_gate();
    gate.add();
    done();
    gate.open_next();
    ASSERT_TRUE(gate.reached(3));
  }
  // With the pool held at the gate's last barrier and chunks just arrived: their slots'
  // keys revoked on the one thread (up to a new barrier), and the answers taken, so that
  // their stores wait at the gate.
  void slots_taken_behind_gate() {
    gate.add();
    gate.open_next();
    ASSERT_TRUE(gate.reached(gate.added()));
    run_pool_once(h.pool);
  }
  // Chunk 0 stored; chunk 1's write failed (a full disk) and its result waits.
  void failed_store(bool then_done) {
    receiving();
    ASSERT_TRUE(chunk(0));
    ASSERT_TRUE(settle_idle());
    ASSERT_TRUE(gate.hold());
    ASSERT_TRUE(chunk(1));
    if (then_done) done();
    slots_taken_behind_gate();
    FileSizeLimit limit(kSlot);  // chunk 1 starts at kSlot
    gate.add();
    gate.open_next();
    ASSERT_TRUE(gate.reached(3));
  }
  void all_stored() {
    receiving();
    ASSERT_TRUE(chunk(0));
    ASSERT_TRUE(chunk(1));
    ASSERT_TRUE(settle_idle());
    ASSERT_EQ(h.state(), S::InSession);
  }
  void verifying() {  // the commit waits at the gate
    all_stored();
    ASSERT_TRUE(gate.hold());
    done();
    ASSERT_EQ(h.state(), S::InSession);
  }
  // The Hello's file verified Good: the sender may say Id or Bye.
  void hello_settled() {
    all_stored();
    done();
    ASSERT_TRUE(settle_until_sent(T::Verdict));
    ASSERT_EQ(h.state(), S::InSession);
  }
  void closing() {
    hello_settled();
    peer(proto::Bye{});
    ASSERT_EQ(h.state(), S::Closing);
  }
  void closed() {
    closing();
    h.connection->on_disconnected();
    ASSERT_EQ(h.state(), S::Closed);
  }
  // Sessions. InSession, nothing offered yet (the window's keys go with the first Take).
  void in_session() {
    version = proto::kVersion2;
    h.start();
    peer(open());
    ASSERT_EQ(h.state(), S::InSession);
  }
  // ... entry 0 offered, its file being created (the result not yet taken).
  void entry_offered() {
    in_session();
    peer(offer(0));
    ASSERT_EQ(h.state(), S::InSession);
  }
  // ... entry 0 taken.
  void entry_taken() {
    entry_offered();
    ASSERT_TRUE(settle_until_sent(T::Take));
    ASSERT_EQ(open_files_under(h.dir.path()), 1u);
  }
  // ... entry 0's first chunk stored and its slot credited again: the sender owes the rest.
  void session_resting() {
    entry_taken();
    ASSERT_TRUE(file_chunk(0, 0, kSlot, 0));
    ASSERT_TRUE(settle_until_sent(T::Credit, 3));
    ASSERT_TRUE(settle_idle());
  }
  // ... every chunk of entry 0 stored; its FileDone not sent yet.
  void entry_stored() {
    session_resting();
    ASSERT_TRUE(file_chunk(0, kSlot, kSlot, 1));
    ASSERT_TRUE(settle_until_sent(T::Credit, 4));
    ASSERT_TRUE(settle_idle());
  }
  // Every entry settled Good: the sender may say Id or Bye.
  void session_settled() {
    entry_stored();
    file_done(0);
    ASSERT_TRUE(settle_until_sent(T::FileVerdict));
    peer(offer(1));
    ASSERT_TRUE(settle_until_sent(T::Take, 2));
    ASSERT_TRUE(file_chunk(1, 0, 100, 0));
    ASSERT_TRUE(settle_idle());
    file_done(1);
    ASSERT_TRUE(settle_until_sent(T::FileVerdict, 2));
    for (std::uint32_t i = 0; i < 2; ++i)
      ASSERT_EQ(verdict_of(i).value().code, proto::VerdictCode::Good);
    ASSERT_EQ(h.state(), S::InSession);
  }
  // AwaitId after a session: every entry good, one Id denied.
  void session_await_id() {
    session_settled();
    peer(proto::Id{"mallory"});
    ASSERT_EQ(h.state(), S::AwaitId);
  }
  void reach(S s) {
    switch (s) {
      case S::AwaitOpen:
        return await_hello();
      case S::Authenticating:
        return authenticating();
      case S::InSession:
        return session_resting();
      case S::AwaitId:
        return session_await_id();
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
    const std::size_t in_dir = static_cast<std::size_t>(std::distance(
        std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
    switch (file) {
      case File::Any:
        return;
      case File::None:
        EXPECT_EQ(in_dir, 0u) << "nothing may be left in the directory";
        EXPECT_EQ(open_files_under(dir), 0u) << "the temporary must be gone";
        return;
      case File::Temp:
        EXPECT_FALSE(std::filesystem::exists(dir / name));
        EXPECT_EQ(open_files_under(dir), 1u) << "the temporary must exist";
        return;
      case File::Final:
        EXPECT_EQ(in_dir, 1u);
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

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// A partial of `path` holding the first `kept` bytes of `bytes`, kept for the offer of
// `bytes` with `digest` (its fs-verity digest by default), as an interrupted transfer leaves.
inline void keep_partial(Rig& r, const std::string& path, const std::vector<std::uint8_t>& bytes,
                         std::uint32_t kept, std::optional<proto::Digest> digest = std::nullopt) {
  if (!r.partials) r.partials.emplace(r.h.dir.fd(), receiver::PartialStore::Limits{});
  r.h.context.partials = &*r.partials;
  keep_partial_in(*r.partials, path, bytes, kept, digest.value_or(merkle::digest_of(bytes)));
}

}  // namespace rdmax::test::receiver_rig
