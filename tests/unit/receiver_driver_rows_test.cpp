// Every row of the receiver's transition table (docs/PROTOCOL.md 7.5; the reference is
// protocol/receiver_machine.cpp), driven through the real Connection over the fake
// transport. Each row is brought about by real inputs (messages, send completions, CM
// events, ticks, the pool's results, injected failures); the driver's recorded steps prove the
// row's (state, event) was taken, and what it did is checked from outside: its state, what
// it posted, the file on disk and how it leaves. This is the one layer that pins the
// transitions (tests/fuzz/fuzz_machines.cpp checks the machine's invariants along any
// sequence, the absorbing Closing and Closed among them): every (state, event) pair of an
// open state, and every result of the entries' work (proto::session_result), is raised here
// by a real input. A Hello is served as entry 0 of a session of
// one entry (receiver/hello_edge.hpp): its rows are the session's, driven by a version-1
// sender, and what they post is the Hello flow's (PROTOCOL.md 4). The data-phase rules are
// driven in receiver_driver_ledger_test.cpp; whole sessions in
// receiver_driver_session_test.cpp.

#include <gtest/gtest.h>

#include <array>
#include <initializer_list>
#include <map>
#include <set>
#include <tuple>
#include <variant>

#include "protocol/enum_names.hpp"
#include "receiver_driver_rig.hpp"
#include "table_rows.hpp"

namespace rdmax::test::receiver_rig {
namespace {

using SR = proto::WorkResult;

// A row's event: the machine's, or a result of the entries' work (InSession's alone).
struct RowEvent {
  std::variant<E, SR> v;
  RowEvent(E e) : v(e) {}   // NOLINT: implicit, so that a row names either
  RowEvent(SR r) : v(r) {}  // NOLINT
  bool operator==(E e) const { return v == std::variant<E, SR>(e); }
  const E* event() const { return std::get_if<E>(&v); }
};
const char* to_string(const RowEvent& e) {
  return std::visit([](auto x) { return proto::to_string(x); }, e.v);
}

// A row of the table (table_rows.hpp).
using At = RowAt<S, RowEvent>;
using Row = TableRow<S, RowEvent, Step, Want>;

// ---- The protocol's rows ----

// The Hello flow's rows (PROTOCOL.md 4): a version-1 sender, one file of two chunks, a
// window of two slots. Where the connection ends after the answer (a Reject, a Verdict other
// than Good) the edge gives the driver a Bye at the next poll.
std::vector<Row> hello_rows() {
  using V = proto::VerdictCode;
  using R = proto::RejectReason;
  const Posted credit0{T::Credit, 0}, credit1{T::Credit, 1};
  const Step answered_then_poll = [](Rig& r) {
    r.settle_answered();
    r.h.poll();
  };
  return {
      // The Hello's Open is accepted; nothing is registered, and no Accept goes, before the
      // file is checked.
      {{S::AwaitOpen, E::GotOpen, "AcceptedHello"},
       [](Rig& r) { r.await_hello(); },
       [](Rig& r) { r.peer(r.hello()); },
       {S::InSession, {}},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      {{S::InSession, SR::EntryTaken, "Hello"},
       [](Rig& r) { r.checking_hello(); },
       [](Rig& r) { r.settle_answered(); },
       {S::InSession, {{T::Accept}, credit0, credit1}, File::Temp},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.live_regions(), 2u);
         EXPECT_EQ(r.accept().slot_count, 2u);
       }},
      // Resume (PROTOCOL.md 7.6): the file offered is in place, and the sender asked.
      {{S::InSession, SR::EntryHave, "Hello"},
       [](Rig& r) {
         r.version = proto::kVersion2;
         r.resume = true;
         write_bytes(r.h.dir.path() / r.name, r.bytes);
         r.checking_hello();
       },
       [](Rig& r) { r.settle_answered(); },
       {S::InSession, {{T::Have}}, File::Any},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Have>().at(0).digest, sha256_of(r.bytes));
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
         EXPECT_EQ(r.h.transport.live_regions(), 0u);
       }},
      {{S::InSession, SR::EntryRefused, "HelloExists"},
       [](Rig& r) {
         std::ofstream(r.h.dir.path() / r.name) << "taken";
         r.checking_hello();
       },
       answered_then_poll,
       {S::Closing, {reject(R::Exists)}, File::Any, End::Disconnects},
       [](Rig& r) {
         EXPECT_EQ(read_file(r.h.dir.path() / r.name), "taken");
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
       }},
      // A Hello names one plain file name (PROTOCOL.md 3.1): a path is refused as BadName.
      {{S::InSession, SR::EntryRefused, "HelloBadName"},
       [](Rig& r) { r.await_hello(); },
       [](Rig& r) {
         r.name = "a/b";
         r.peer(r.hello());
         r.h.poll();
       },
       {S::Closing, {reject(R::BadName)}, File::None, End::Disconnects}},
      // The window is registered once the file exists (the create job reported).
      {{S::InSession, SR::EntryRefused, "HelloRegistrationFails"},
       [](Rig& r) {
         r.await_hello();
         r.h.transport.fail_registration_after = 1;  // the second slot's
       },
       [](Rig& r) {
         r.peer(r.hello());
         r.settle_idle();
         r.h.poll();
       },
       {S::Closing, {reject(R::NoMemory)}, File::None, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      {{S::AwaitOpen, E::GotOpen, "RejectedForeignVersion"},
       [](Rig& r) { r.await_hello(); },
       [](Rig& r) {
         std::vector<std::uint8_t> m = proto::encode(r.hello(), proto::kVersion1);
         m[4] = 3;  // header.version
         r.h.transport.deliver_bytes(m);
         r.h.poll();
       },
       {S::Closing, {reject(R::UnsupportedVersion)}, File::None, End::Disconnects}},
      {{S::InSession, E::GotChunk, "Hello"},
       [](Rig& r) { r.receiving(); },
       [](Rig& r) { EXPECT_TRUE(r.chunk(0)); },
       {S::InSession, {}, File::Temp},
       [](Rig& r) {  // the slot's key dies on a worker before its store is even queued
         const std::uint32_t old_key = r.h.transport.latest_rkey(0);
         ASSERT_TRUE(r.gate.hold());
         r.slots_taken_behind_gate();  // revoked; its store waits at the gate
         EXPECT_EQ(r.h.transport.live_regions(), 1u);
         EXPECT_FALSE(r.h.transport.write_remote(r.accept().region_addr, old_key, r.bytes));
         r.gate.open_all();
       }},
      {{S::InSession, SR::ChunkStored, "Hello"},
       [](Rig& r) {
         r.receiving();
         ASSERT_TRUE(r.chunk(0));
       },
       [](Rig& r) { r.settle_idle(); },
       {S::InSession, {credit0}, File::Temp},
       [](Rig& r) {
         const auto credits = r.h.transport.sent_of<proto::Credit>();
         EXPECT_NE(credits.back().rkey, credits.front().rkey);
         EXPECT_EQ(r.h.transport.live_regions(), 2u);
       }},
      // Done: no byte may come any more, so no key works: the slot still credited is revoked
      // at once, on the loop; chunk 0's slot was revoked on its own queue, a worker's job
      // that may still be queued when the Done arrives (it runs before anything reads the
      // slot), and is not granted again.
      {{S::InSession, E::GotFileDone, "Hello"},
       [](Rig& r) {
         r.receiving();
         ASSERT_TRUE(r.chunk(0));
       },
       [](Rig& r) { r.done(); },
       {S::InSession, {}, File::Temp},
       [](Rig& r) {
         EXPECT_LE(r.h.transport.live_regions(), 1u) << "the credited slot's key outlived Done";
         ASSERT_TRUE(r.settle_idle());
         EXPECT_EQ(r.h.transport.live_regions(), 0u);
       }},
      {{S::InSession, SR::EntrySettled, "HelloWriteFails"},
       [](Rig& r) { r.failed_store(false); },
       [](Rig& r) {
         run_pool_once(r.h.pool);
         r.h.poll();
       },
       {S::Closing, {verdict(V::StorageError)}, File::None, End::Disconnects},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Verdict>().at(0).received_digest, Digest{});
       }},
      // After the Done a stored chunk's slot is not credited back.
      {{S::InSession, SR::ChunkStored, "HelloAfterDone"},
       [](Rig& r) { r.draining_two_stores(); },
       [](Rig& r) { run_pool_once(r.h.pool); },
       {S::InSession, {}, File::Temp}},
      {{S::InSession, SR::EntrySettled, "HelloWriteFailsAfterDone"},
       [](Rig& r) { r.failed_store(true); },
       [](Rig& r) {
         run_pool_once(r.h.pool);
         r.h.poll();
       },
       {S::Closing, {verdict(V::StorageError)}, File::None, End::Disconnects}},
      {{S::InSession, SR::EntrySettled, "HelloGood"},
       [](Rig& r) { r.verifying(); },
       [](Rig& r) {
         r.gate.open_all();
         r.settle_until_sent(T::Verdict);
       },
       {S::InSession, {verdict(V::Good)}, File::Final},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Verdict>().at(0).received_digest,
                   sha256_of(r.bytes));
         // A Hello says nothing of the file's mode and time: ours (0666 less the umask).
         struct stat st {};
         ASSERT_EQ(::stat((r.h.dir.path() / r.name).c_str(), &st), 0);
         EXPECT_EQ(st.st_mode & 07777, 0666 & ~process_umask());
       }},
      {{S::InSession, SR::EntrySettled, "HelloHashMismatch"},
       [](Rig& r) {
         r.digest = Digest{};
         r.all_stored();
       },
       [](Rig& r) {
         r.done();
         r.h.poll();
       },
       {S::Closing, {verdict(V::HashMismatch)}, File::None, End::Disconnects}},
      {{S::InSession, SR::EntrySettled, "HelloSizeMismatch"},
       [](Rig& r) { r.all_stored(); },
       [](Rig& r) {
         r.peer(proto::Done{r.bytes.size() - 1});
         r.h.poll();
       },
       {S::Closing, {verdict(V::SizeMismatch)}, File::None, End::Disconnects}},
      {{S::InSession, SR::EntrySettled, "HelloCommitFails"},
       [](Rig& r) {
         r.verifying();
         std::ofstream(r.h.dir.path() / r.name) << "taken";  // appeared since the Hello
       },
       [](Rig& r) {
         r.gate.open_all();
         r.settle_until_sent(T::Verdict);
         r.h.poll();
       },
       {S::Closing, {verdict(V::StorageError)}, File::Any, End::Disconnects},
       [](Rig& r) {
         EXPECT_EQ(read_file(r.h.dir.path() / r.name), "taken");
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
       }},
      {{S::InSession, E::GotId, "UnknownHello"},
       [](Rig& r) { r.hello_settled(); },
       [](Rig& r) { r.peer(proto::Id{"mallory"}); },
       {S::AwaitId, {{T::Denied, 2}}, File::Final}},
      {{S::InSession, E::GotBye, "Hello"},
       [](Rig& r) { r.hello_settled(); },
       [](Rig& r) { r.peer(proto::Bye{}); },
       {S::Closing, {}, File::Final, End::Disconnects}},
      {{S::InSession, E::GotId, "KnownHello"},
       [](Rig& r) { r.hello_settled(); },
       [](Rig& r) { r.peer(proto::Id{"alice"}); },
       {S::Closing, {{T::Secret}}, File::Final, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.transport.sent_of<proto::Secret>().at(0).secret, "s3cret"); }},
      {{S::AwaitId, E::GotId, "Unknown"},
       [](Rig& r) {
         r.hello_settled();
         r.peer(proto::Id{"mallory"});
       },
       [](Rig& r) { r.peer(proto::Id{"bob"}); },
       {S::AwaitId, {{T::Denied, 1}}, File::Final}},
      {{S::AwaitId, E::GotId, "AttemptsExhausted"},
       [](Rig& r) {
         r.hello_settled();
         r.peer(proto::Id{"mallory"});
         r.peer(proto::Id{"bob"});
       },
       [](Rig& r) { r.peer(proto::Id{"eve"}); },
       {S::Closing, {{T::Denied, 0}}, File::Final, End::Disconnects}},
      {{S::AwaitId, E::GotId, "Known"},
       [](Rig& r) {
         r.hello_settled();
         r.peer(proto::Id{"mallory"});
       },
       [](Rig& r) { r.peer(proto::Id{"alice"}); },
       {S::Closing, {{T::Secret}}, File::Final, End::Disconnects}},
      {{S::AwaitId, E::GotBye, ""},
       [](Rig& r) {
         r.hello_settled();
         r.peer(proto::Id{"mallory"});
       },
       [](Rig& r) { r.peer(proto::Bye{}); },
       {S::Closing, {}, File::Final, End::Disconnects}},
  };
}

// ---- A version-2 session's rows (PROTOCOL.md 7.5) ----

std::vector<Row> session_rows() {
  using V = proto::VerdictCode;
  using R = proto::RejectReason;
  const Posted credit0{T::Credit, 0}, credit1{T::Credit, 1};
  const Step open = [](Rig& r) {
    r.version = proto::kVersion2;
    r.await_hello();
  };
  const Step send_open = [](Rig& r) { r.peer(r.open()); };
  const Step entry_refused = [](Rig& r) {  // the refused entry is settled, nothing is left
    EXPECT_EQ(r.h.transport.sent_of<proto::Refuse>().at(0).entry, 0u);
    EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
  };
  return {
      // The window's keys go with the first Take: nothing is registered yet.
      {{S::AwaitOpen, E::GotOpen, "Accepted"},
       open,
       send_open,
       {S::InSession, {{T::Accept}}, File::None},
       [](Rig& r) {
         EXPECT_EQ(r.accept().slot_count, 2u);
         EXPECT_EQ(r.h.transport.live_regions(), 0u);
       }},
      {{S::AwaitOpen, E::GotOpen, "RejectedNoMemory"},
       [](Rig& r) {
         r.h.options.max_memory = kSlot;  // the window wants two slots
         r.version = proto::kVersion2;
         r.await_hello();
       },
       send_open,
       {S::Closing, {reject(R::NoMemory)}, File::None, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      // The window is registered when the first file is taken: a failure refuses that file.
      {{S::InSession, SR::EntryRefused, "RegistrationFails"},
       [](Rig& r) {
         r.entry_offered();
         r.h.transport.fail_registration_after = 1;  // the second slot's
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::Refuse)); },
       {S::InSession, {refuse(R::NoMemory)}},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.live_regions(), 0u);
         EXPECT_TRUE(r.settle_idle());
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
       }},
      {{S::InSession, E::GotOffer, ""},
       [](Rig& r) { r.in_session(); },
       [](Rig& r) { r.peer(r.offer(0)); },
       {S::InSession, {}}},  // the file is created on the pool
      // Resume (PROTOCOL.md 7.6): the file is in place already (a sender that asked).
      {{S::InSession, SR::EntryHave, ""},
       [](Rig& r) {
         r.resume = true;
         write_bytes(r.h.dir.path() / "a.bin", r.entries[0].bytes);
         r.entry_offered();
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::Have)); },
       {S::InSession, {{T::Have}}, File::Any},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Have>().at(0).entry, 0u);
         EXPECT_EQ(r.h.transport.sent_of<proto::Have>().at(0).digest,
                   sha256_of(r.entries[0].bytes));
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);  // no temporary was made
       }},
      // The digest at the end (PROTOCOL.md 7.9): a file of the offered size is here: Holds.
      {{S::InSession, SR::EntryHeld, ""},
       [](Rig& r) {
         r.resume = true;
         r.digest_at_end = true;
         write_bytes(r.h.dir.path() / "a.bin", random_bytes(r.entries[0].bytes.size(), 77));
         r.in_session();
         r.peer(r.flagged(0));
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::Holds)); },
       {S::InSession, {{T::Holds}}, File::Any},
       [](Rig& r) {
         const proto::Holds holds = r.h.transport.sent_of<proto::Holds>().at(0);
         EXPECT_EQ(holds.length, r.entries[0].bytes.size());
         EXPECT_EQ(holds.digest, std::nullopt) << "how much is here, never its digest";
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);  // no temporary was made
       }},
      // ...and the sender's file is the same: Have, once the file here is found unchanged
      // (looked at again on the directories' queue: PROTOCOL.md 7.9).
      {{S::InSession, E::GotContinue, ""},
       [](Rig& r) {
         r.resume = true;
         r.digest_at_end = true;
         write_bytes(r.h.dir.path() / "a.bin", r.entries[0].bytes);
         r.in_session();
         r.peer(r.flagged(0));
         ASSERT_TRUE(r.settle_until_sent(T::Holds));
       },
       [](Rig& r) {
         r.peer(proto::Continue{0, r.entries[0].bytes.size(), r.digest_of_entry(0)});
         ASSERT_TRUE(r.settle_until_sent(T::Have));
       },
       {S::InSession, {{T::Have}}, File::Any},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Have>().at(0).digest, r.digest_of_entry(0));
         const auto& sent = r.entries[0].bytes;
         EXPECT_EQ(read_file(r.h.dir.path() / "a.bin"), std::string(sent.begin(), sent.end()));
       }},
      // A file taken without its digest, abandoned by the sender: nothing of it is kept.
      {{S::InSession, E::GotFileAbort, ""},
       [](Rig& r) {
         r.resume = true;
         r.digest_at_end = true;
         r.in_session();
         r.peer(r.flagged(0));
         ASSERT_TRUE(r.settle_until_sent(T::Take));
         ASSERT_TRUE(r.file_chunk(0, 0, kSlot, 0));
         ASSERT_TRUE(r.settle_idle());
       },
       [](Rig& r) {
         r.peer(proto::FileAbort{0, proto::AbortReason::Changed});
       },
       {S::InSession, {file_verdict(V::Abandoned)}},
       [](Rig& r) {
         EXPECT_TRUE(r.settle_idle());
         EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u) << "no temporary, no partial";
       }},
      // ...or its first chunk is kept as a partial of the same digest: taken from there.
      {{S::InSession, SR::EntryResumed, ""},
       [](Rig& r) {
         r.resume = true;
         r.algorithm = proto::DigestAlgorithm::FsVeritySha256;
         keep_partial(r, "a.bin", r.entries[0].bytes, kSlot);
         r.entry_offered();
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::Resume)); },
       {S::InSession, {{T::Resume}, credit0, credit1}, File::Any},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Resume>().at(0),
                   (proto::Resume{0, std::uint64_t{kSlot}}));
         EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
       }},
      {{S::InSession, SR::EntryTaken, ""},
       [](Rig& r) { r.entry_offered(); },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::Take)); },
       {S::InSession, {{T::Take}, credit0, credit1}},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Take>().at(0).entry, 0u);
         EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
         EXPECT_EQ(open_files_under(r.h.dir.path()), 1u);  // the temporary
       }},
      // Refused by the path rule before anything is created (PROTOCOL.md 7.5).
      {{S::InSession, SR::EntryRefused, "BadName"},
       [](Rig& r) {
         r.entries[0].path = "../a.bin";
         r.in_session();
       },
       [](Rig& r) { r.peer(r.offer(0)); },
       {S::InSession, {refuse(R::BadName)}, File::None},
       entry_refused},
      {{S::InSession, SR::EntryRefused, "Exists"},
       [](Rig& r) {
         std::ofstream(r.h.dir.path() / "a.bin") << "taken";
         r.entry_offered();
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::Refuse)); },
       {S::InSession, {refuse(R::Exists)}},
       [](Rig& r) {
         EXPECT_EQ(read_file(r.h.dir.path() / "a.bin"), "taken");
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
       }},
      {{S::InSession, E::GotChunk, ""},
       [](Rig& r) { r.entry_taken(); },
       [](Rig& r) { EXPECT_TRUE(r.file_chunk(0, 0, kSlot, 0)); },
       {S::InSession, {}},
       [](Rig& r) {  // the slot's key dies on a worker before its store is even queued
         const std::uint32_t old_key = r.h.transport.latest_rkey(0);
         ASSERT_TRUE(r.gate.hold());
         r.slots_taken_behind_gate();  // revoked; its store waits at the gate
         EXPECT_EQ(r.h.transport.live_regions(), 1u);
         EXPECT_FALSE(r.h.transport.write_remote(r.accept().region_addr, old_key, r.bytes));
         r.gate.open_all();
       }},
      {{S::InSession, SR::ChunkStored, ""},
       [](Rig& r) {
         r.entry_taken();
         ASSERT_TRUE(r.file_chunk(0, 0, kSlot, 0));
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_idle()); },
       {S::InSession, {credit0}},
       [](Rig& r) {
         const auto credits = r.h.transport.sent_of<proto::Credit>();
         EXPECT_NE(credits.back().rkey, credits.front().rkey);
         EXPECT_EQ(r.h.transport.live_regions(), 2u);
       }},
      // The last chunk stored and FileDone in: the file is verified and committed on the pool.
      {{S::InSession, E::GotFileDone, ""},
       [](Rig& r) { r.entry_stored(); },
       [](Rig& r) { r.file_done(0); },
       {S::InSession, {}},
       [](Rig& r) {
         EXPECT_TRUE(r.settle_until_sent(T::FileVerdict));
         EXPECT_EQ(r.verdict_of(0).value().code, V::Good);
       }},
      {{S::InSession, SR::EntrySettled, "Good"},
       [](Rig& r) {
         r.entry_stored();
         r.file_done(0);
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::FileVerdict)); },
       {S::InSession, {file_verdict(V::Good)}},
       [](Rig& r) {
         EXPECT_EQ(r.verdict_of(0).value().received_digest, sha256_of(r.entries[0].bytes));
         r.expect_entry_final(0);
       }},
      {{S::InSession, SR::EntrySettled, "HashMismatch"},
       [](Rig& r) {
         r.digest = Digest{};  // what the Offer announces
         r.entry_stored();
       },
       [](Rig& r) { r.file_done(0); },
       {S::InSession, {file_verdict(V::HashMismatch)}},
       [](Rig& r) {
         EXPECT_TRUE(r.settle_idle());
         EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
       }},
      {{S::InSession, SR::EntrySettled, "Directory"},
       [](Rig& r) {
         r.entries = {{"d", {}, 0750, 1500000000, 9, proto::EntryKind::Directory}};
         r.in_session();
         r.peer(r.offer(0));
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::FileVerdict)); },
       {S::InSession, {file_verdict(V::Good)}},
       [](Rig& r) { r.expect_entry_final(0); }},
      {{S::InSession, E::GotId, "Known"},
       [](Rig& r) { r.session_settled(); },
       [](Rig& r) { r.peer(proto::Id{"alice"}); },
       {S::Closing, {{T::Secret}}, File::Any, End::Disconnects},
       [](Rig& r) {
         r.expect_entry_final(0);
         r.expect_entry_final(1);
       }},
      {{S::InSession, E::GotBye, ""},
       [](Rig& r) { r.session_settled(); },
       [](Rig& r) { r.peer(proto::Bye{}); },
       {S::Closing, {}, File::Any, End::Disconnects},
       [](Rig& r) {
         r.expect_entry_final(0);
         r.expect_entry_final(1);
       }},
  };
}

// ---- The aborts, from every open state the connection rests in ----

// Where the connection rests: AwaitOpen, a session in progress, AwaitId after a denied id,
// and the Hello flow's stages (all InSession). `own_work`: the wait is on the receiver's own
// disk, so nothing times out; `committing`: a shutdown waits for the commit.
struct Resting {
  S state;
  const char* variant;
  Step reach;
  File file;  // where an abort leaves the file
  bool own_work = false;
  bool committing = false;
};

std::vector<Resting> resting_states() {
  return {
      {S::AwaitOpen, "", [](Rig& r) { r.await_hello(); }, File::None},
      {S::Authenticating, "", [](Rig& r) { r.authenticating(); }, File::None},
      {S::InSession, "", [](Rig& r) { r.session_resting(); }, File::None},
      {S::AwaitId, "", [](Rig& r) { r.session_await_id(); }, File::Any},
      {S::InSession, "HelloChecking", [](Rig& r) { r.checking_hello_created(); }, File::None, true},
      {S::InSession, "HelloReceiving", [](Rig& r) { r.receiving(); }, File::None},
      {S::InSession, "HelloDraining", [](Rig& r) { r.draining(); }, File::None, true},
      {S::InSession, "HelloVerifying", [](Rig& r) { r.verifying(); }, File::None, true, true},
      {S::InSession, "HelloSettled", [](Rig& r) { r.hello_settled(); }, File::Final},
  };
}

std::vector<Row> abort_rows() {
  struct Abort {
    E event;
    Step inject;
    S next;
    std::optional<ErrorCode> says;  // the Error it sends
  };
  const std::vector<Abort> aborts{
      {E::Disconnected, [](Rig& r) { r.disconnected(); }, S::Closed, {}},
      // A broken queue pair still owes the peer a DREQ (receiver_machine.cpp).
      {E::TransportFailed, [](Rig& r) { r.transport_fails(); }, S::Closing, {}},
      {E::GotError,
       [](Rig& r) {
         r.peer(proto::Error{ErrorCode::Internal, "gave up"});
       },
       S::Closing,
       {}},
      {E::ProtocolViolation, [](Rig& r) { r.undecodable_message(); }, S::Closing,
       ErrorCode::ProtocolViolation},
      {E::LocalFailure, [](Rig& r) { r.poll_fails(); }, S::Closing, ErrorCode::Internal},
      {E::Timeout, [](Rig& r) { r.tick_late(); }, S::Closing, ErrorCode::Timeout},
      {E::ShuttingDown, [](Rig& r) { r.h.connection->shut_down(); }, S::Closing,
       ErrorCode::ShuttingDown},
  };
  std::vector<Row> rows;
  for (const Resting& at : resting_states()) {
    for (const Abort& a : aborts) {
      if (a.event == E::Timeout && at.own_work) continue;  // NoDeadlineWhileTheDiskWorks
      // A shutdown during the commit waits for it (its own test below).
      if (a.event == E::ShuttingDown && at.committing) continue;
      Want want{a.next, {}, at.file, a.next == S::Closed ? End::Released : End::Disconnects};
      if (a.says) want.posted.push_back(error(*a.says));
      rows.push_back({{at.state, a.event, at.variant}, at.reach, a.inject, want});
    }
  }
  // LocalFailure through the failures of the driver's own actions, not only a poll.
  rows.push_back({{S::InSession, E::LocalFailure, "WorkingPostFails"},
                  [](Rig& r) {
                    r.version = proto::kVersion2;
                    r.keepalive_ms = 200;
                    r.checking_hello();
                    r.h.transport.fail_one_send_after = 0;
                  },
                  [](Rig& r) { r.h.connection->tick(Clock::now() + std::chrono::seconds(1)); },
                  {S::Closing, {error(ErrorCode::Internal)}, File::None, End::Disconnects}});
  rows.push_back({{S::InSession, E::LocalFailure, "CreditRegistrationFails"},
                  [](Rig& r) {
                    r.receiving();
                    r.h.transport.fail_registration_after = 0;
                    ASSERT_TRUE(r.chunk(0));
                  },
                  [](Rig& r) { r.settle_idle(); },
                  {S::Closing, {error(ErrorCode::Internal)}, File::None, End::Disconnects}});
  rows.push_back({{S::InSession, E::LocalFailure, "VerdictPostFails"},
                  [](Rig& r) {
                    r.verifying();
                    r.h.transport.fail_one_send_after = 0;
                  },
                  [](Rig& r) {
                    r.gate.open_all();
                    r.h.settle([&] { return r.h.state() != S::InSession; });
                  },
                  {S::Closing, {error(ErrorCode::Internal)}, File::Final, End::Disconnects}});
  rows.push_back({{S::InSession, E::LocalFailure, "TakePostFails"},
                  [](Rig& r) {
                    r.entry_offered();
                    r.h.transport.fail_one_send_after = 0;
                  },
                  [](Rig& r) { r.settle_out_of(S::InSession); },
                  {S::Closing, {error(ErrorCode::Internal)}, File::None, End::Disconnects}});
  // The session's rules, checked before anything is done (PROTOCOL.md 7.5): each of these
  // InSession rows ends in a ProtocolViolation Error.
  struct Violation {
    E event;
    const char* variant;
    Step reach;
    Step inject;
  };
  const Step entry_taken_v2 = [](Rig& r) {
    r.version = proto::kVersion2;
    r.entry_taken();
  };
  const std::vector<Violation> violations{
      {E::ProtocolViolation, "OfferOutOfOrder", [](Rig& r) { r.in_session(); },
       [](Rig& r) { r.peer(r.offer(1)); }},
      {E::ProtocolViolation, "ChunkAtWrongOffset", [](Rig& r) { r.entry_taken(); },
       [](Rig& r) { r.file_chunk(0, kSlot, kSlot, 0); }},
      {E::GotId, "BeforeEveryEntryIsSettled", [](Rig& r) { r.session_resting(); },
       [](Rig& r) { r.peer(proto::Id{"alice"}); }},
      {E::GotBye, "BeforeEveryEntryIsSettled", [](Rig& r) { r.session_resting(); },
       [](Rig& r) { r.peer(proto::Bye{}); }},
      // The digest at the end never negotiated: nothing is held or flagged, so a Continue or
      // a FileAbort names an entry the ledger cannot take it for.
      {E::ProtocolViolation, "ContinueNeverNegotiated", entry_taken_v2,
       [](Rig& r) {
         r.peer(proto::Continue{0, 0});
       }},
      {E::ProtocolViolation, "OfferWithDigestAtEndNeverNegotiated",
       [](Rig& r) {
         r.version = proto::kVersion2;
         r.in_session();
       },
       [](Rig& r) { r.peer(r.flagged(0)); }},
      {E::ProtocolViolation, "FileAbortNeverNegotiated", entry_taken_v2,
       [](Rig& r) {
         r.peer(proto::FileAbort{0, proto::AbortReason::Changed});
       }},
      // One file over several connections (7.12) never negotiated: this connection was not
      // answered Stripes, so the ledger takes no Join.
      {E::GotJoin, "NeverNegotiated", entry_taken_v2,
       [](Rig& r) {
         r.peer(proto::Join{2, 0});
       }},
      // The Hello flow's own: a session message after a Hello, a Chunk before the Accept.
      {E::ProtocolViolation, "HelloThenFileChunk",
       [](Rig& r) {
         r.version = proto::kVersion2;
         r.receiving();
       },
       [](Rig& r) {
         r.peer(proto::FileChunk{0, 0, 0, kSlot});
       }},
      {E::ProtocolViolation, "HelloChunkBeforeAccept", [](Rig& r) { r.checking_hello_created(); },
       [](Rig& r) {
         r.peer(proto::Chunk{0, kSlot, 0});
       }},
  };
  const Want violation{
      S::Closing, {error(ErrorCode::ProtocolViolation)}, File::None, End::Disconnects};
  for (const Violation& v : violations)
    rows.push_back({{S::InSession, v.event, v.variant}, v.reach, v.inject, violation});
  // The connection is over in rdma_cm itself: nothing is left to disconnect.
  rows.push_back({{S::InSession, E::Disconnected, "CmEvent"},
                  [](Rig& r) { r.receiving(); },
                  [](Rig& r) { r.h.connection->on_cm_failure("RDMA_CM_EVENT_DEVICE_REMOVAL"); },
                  {S::Closed, {}, File::None, End::Released}});
  return rows;
}

// ---- Closing and Closed ----

std::vector<Row> closing_rows() {
  const Step closing = [](Rig& r) { r.closing(); };
  const Step closed = [](Rig& r) { r.closed(); };
  const Want ends{S::Closed, {}, File::Final, End::Released};
  const Want stays{S::Closing, {}, File::Final, End::Disconnects};
  return {
      {{S::Closing, E::Disconnected, ""}, closing, [](Rig& r) { r.disconnected(); }, ends},
      {{S::Closing, E::TransportFailed, ""}, closing, [](Rig& r) { r.transport_fails(); }, ends},
      {{S::Closing, E::Timeout, ""}, closing, [](Rig& r) { r.tick_late(); }, ends},
      {{S::Closing, E::GotChunk, ""}, closing, [](Rig& r) { r.write(0, kSlot, 0); }, stays},
      {{S::Closing, E::GotUnexpected, ""}, closing, [](Rig& r) { r.peer(r.hello()); }, stays},
      {{S::Closing, E::GotError, ""},
       closing,
       [](Rig& r) {
         r.peer(proto::Error{ErrorCode::Internal, ""});
       },
       stays},
      {{S::Closing, E::ProtocolViolation, ""},
       closing,
       [](Rig& r) { r.undecodable_message(); },
       stays},
      // A failure of our own on the way out ends it at once (its step was cut short).
      {{S::Closing, E::LocalFailure, ""}, closing, [](Rig& r) { r.poll_fails(); }, ends},
      // shut_down() and Closed take no event at all: no step is taken.
      {{S::Closing, E::ShuttingDown, ""},
       closing,
       [](Rig& r) { r.h.connection->shut_down(); },
       stays},
      {{S::Closed, E::GotUnexpected, ""}, closed, [](Rig& r) { r.peer(proto::Id{"alice"}); }, ends},
      {{S::Closed, E::Timeout, ""}, closed, [](Rig& r) { r.tick_late(); }, ends},
      {{S::Closed, E::ShuttingDown, ""}, closed, [](Rig& r) { r.h.connection->shut_down(); }, ends},
      {{S::Closed, E::Disconnected, ""}, closed, [](Rig& r) { r.disconnected(); }, ends},
  };
}

// ---- Sender keys (PROTOCOL.md 7.8): nothing is granted before a good Proof ----

std::vector<Row> auth_rows() {
  using R = proto::RejectReason;
  const Want refused{S::Closing, {reject(R::AuthFailed)}, File::None, End::Disconnects};
  // Refused, counted against the address, and nothing was ever registered.
  const Step penalized = [](Rig& r) {
    EXPECT_EQ(r.h.transport.live_regions(), 0u);
    EXPECT_TRUE(
        r.h.penalties.refused_for(ReceiverHarness::kPeerAddress, std::chrono::steady_clock::now()));
  };
  return {
      {{S::AwaitOpen, E::GotOpen, "NeedsProof"},
       [](Rig& r) { r.await_keyed_open(); },
       [](Rig& r) {
         r.open_sent = r.keyed_open();
         r.peer(r.open_sent);
       },
       {S::Authenticating, {{T::Challenge}}, File::None},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      {{S::AwaitOpen, E::GotOpen, "RejectedNoKey"},
       [](Rig& r) { r.await_keyed_open(); },
       [](Rig& r) { r.peer(r.open()); },
       {S::Closing, {reject(R::AuthRequired)}, File::None, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      // Version 1 cannot carry a key: its Hello is told so in words it knows.
      {{S::AwaitOpen, E::GotOpen, "RejectedHelloWhenKeysAreRequired"},
       [](Rig& r) {
         r.await_keyed_open();
         r.version = proto::kVersion1;
       },
       [](Rig& r) { r.peer(r.hello()); },
       {S::Closing, {reject(R::UnsupportedVersion)}, File::None, End::Disconnects},
       [](Rig& r) {
         EXPECT_NE(r.h.transport.sent_of<proto::Reject>().at(0).text.find("key"),
                   std::string::npos);
         EXPECT_EQ(r.h.transport.live_regions(), 0u);
       }},
      // The receiver proves the key back, before the Accept; still nothing is registered
      // (the window's keys come with the first Take).
      {{S::Authenticating, E::GotProof, "Accepted"},
       [](Rig& r) { r.authenticating(); },
       [](Rig& r) { r.peer(r.proof()); },
       {S::InSession, {{T::Proof}, {T::Accept}}},
       [](Rig& r) {
         EXPECT_EQ(
             r.h.transport.sent_of<proto::Proof>().at(0).mac,
             auth_proof(proto::ProofRole::Receiver, r.sender_key, r.open_sent, r.challenge()));
         EXPECT_EQ(r.h.transport.live_regions(), 0u);
         EXPECT_FALSE(r.h.penalties.refused_for(ReceiverHarness::kPeerAddress,
                                                std::chrono::steady_clock::now()));
       }},
      {{S::Authenticating, E::GotProof, "RejectedWrongKey"},
       [](Rig& r) {
         r.sender_key = Rig::counting_key(1, 1);
         r.authenticating();
       },
       [](Rig& r) { r.peer(r.proof()); },
       refused,
       penalized},
      {{S::Authenticating, E::GotProof, "RejectedUnknownId"},
       [](Rig& r) {
         r.key_id = "carol";
         r.authenticating();
       },
       [](Rig& r) { r.peer(r.proof()); },
       refused,
       penalized},
      // A proof made with the right key for another challenge (recorded, or relayed from
      // another connection) proves nothing here.
      {{S::Authenticating, E::GotProof, "RejectedProofForAnotherChallenge"},
       [](Rig& r) { r.authenticating(); },
       [](Rig& r) {
         proto::Challenge other = r.challenge();
         other.nonce[0] ^= 1;
         r.peer(
             proto::Proof{auth_proof(proto::ProofRole::Sender, r.sender_key, r.open_sent, other)});
       },
       refused,
       penalized},
      // The receiver's own Proof sent back: another label, so no reflection.
      {{S::Authenticating, E::GotProof, "RejectedReflectedProof"},
       [](Rig& r) { r.authenticating(); },
       [](Rig& r) {
         r.peer(proto::Proof{
             auth_proof(proto::ProofRole::Receiver, r.sender_key, r.open_sent, r.challenge())});
       },
       refused,
       penalized},
      // Authenticated, the Open meets the memory cap like any other.
      {{S::Authenticating, E::GotProof, "RejectedNoMemoryAfterAGoodProof"},
       [](Rig& r) {
         r.authenticating();
         r.h.context.window_bytes_in_use = r.h.options.max_memory;
       },
       [](Rig& r) { r.peer(r.proof()); },
       {S::Closing, {reject(R::NoMemory)}, File::None, End::Disconnects}},
  };
}

std::vector<Row> all_rows() {
  std::vector<Row> rows = hello_rows();
  for (auto& part : {session_rows(), auth_rows(), abort_rows(), closing_rows()})
    rows.insert(rows.end(), part.begin(), part.end());
  return rows;
}

class ReceiverDriverRows : public ::testing::TestWithParam<Row> {
 protected:
  Rig r;
};

TEST_P(ReceiverDriverRows, DriverCarriesOutTheRow) {
  const Row& row = GetParam();
  // Closing and Closed take some inputs without a step (shut_down(), or anything once
  // Closed): for those the state staying put is the whole row.
  const bool steps =
      row.at.state != S::Closed && !(row.at.state == S::Closing && row.at.event == E::ShuttingDown);
  drive_row(r, row.reach, row.inject,
            steps ? std::optional(step_of(row.at.state, row.at.event)) : std::nullopt, row.want,
            row.also);
}

INSTANTIATE_TEST_SUITE_P(Table, ReceiverDriverRows, ::testing::ValuesIn(all_rows()), row_name<Row>);

// ---- A peer message out of place, in every state it can arrive in ----

struct Misplaced {
  S state;
  std::string name;
  E event;
  proto::Message message;
  bool session = false;        // AwaitId after a session (Id denied once)
  bool digest_at_end = false;  // the session's Open asked for the digest at the end (7.9)
};

std::ostream& operator<<(std::ostream& out, const Misplaced& m) {
  return out << m.name << " in " << proto::to_string(m.state) << (m.session ? " (session)" : "");
}

std::vector<Misplaced> misplaced_messages() {
  using W = proto::WorkPhase;
  const std::vector<std::tuple<std::string, E, proto::Message>> messages{
      {"Hello", E::GotUnexpected, proto::Hello{10, {}, 0, "other.bin"}},
      {"Chunk", E::GotUnexpected, proto::Chunk{0, kSlot, 0}},
      {"Done", E::GotUnexpected, proto::Done{2 * kSlot}},
      {"Id", E::GotId, proto::Id{"alice"}},
      {"Bye", E::GotBye, proto::Bye{}},
      {"Accept", E::GotUnexpected, proto::Accept{0x1000, 1, kSlot, 1}},
      {"Credit", E::GotUnexpected, proto::Credit{0, 1}},
      {"Verdict", E::GotUnexpected, proto::Verdict{}},
      {"Secret", E::GotUnexpected, proto::Secret{"x"}},
      {"Denied", E::GotUnexpected, proto::Denied{1}},
      {"Reject", E::GotUnexpected, proto::Reject{proto::RejectReason::Exists, ""}},
      {"Working", E::GotUnexpected, proto::Working{W::Storing, 0}},
      {"Open", E::GotOpen, proto::Open{proto::DigestAlgorithm::WholeFileSha256, 0, 0, 1, 10}},
      {"Offer", E::GotOffer, proto::Offer{0, proto::EntryKind::File, 0644, 1, 0, 0, {}, "x"}},
      {"FileChunk", E::GotChunk, proto::FileChunk{0, 0, 0, kSlot}},
      {"FileDone", E::GotFileDone, proto::FileDone{0, 1}},
      {"Take", E::GotUnexpected, proto::Take{0}},
      {"Refuse", E::GotUnexpected, proto::Refuse{0, proto::RejectReason::Exists, ""}},
      {"FileVerdict", E::GotUnexpected, proto::FileVerdict{}},
      {"Challenge", E::GotUnexpected, proto::Challenge{}},
      {"Proof", E::GotProof, proto::Proof{}},
      // The digest at the end (PROTOCOL.md 7.9): a Holds is the receiver's.
      {"Holds", E::GotUnexpected, proto::Holds{0, 1, {}}},
      {"FileAbort", E::GotFileAbort, proto::FileAbort{0, proto::AbortReason::Changed}},
      {"Continue", E::GotContinue, proto::Continue{0, 0}},
      // One file over several connections (7.12): Stripes is the receiver's; a Join is
      // checked in a session (the ledger refuses it where Stripes was not sent: see the rows).
      {"Stripes", E::GotUnexpected, proto::Stripes{2}},
      {"Join", E::GotJoin, proto::Join{1, 0}},
  };
  // Continue and FileAbort out of place after a denied id, also in a session whose Open asked
  // for the digest at the end (7.9), where they are the session's own before the id.
  const std::vector<std::tuple<std::string, E, proto::Message>> digest_at_end{
      {"Continue", E::GotContinue, proto::Continue{0, 0}},
      {"FileAbort", E::GotFileAbort, proto::FileAbort{0, proto::AbortReason::Changed}},
  };
  // A Hello first is the Hello flow (the rows above); in a session Offer, FileChunk and
  // FileDone are its own, and Id and Bye legal once every entry is settled (a
  // ProtocolViolation before: see the rows), a Continue and a FileAbort too (the ledger
  // finds them wrong where nothing is held or flagged: see the rows); after a denied id, Id
  // and Bye.
  const std::set<std::pair<S, std::string>> legal{
      {S::AwaitOpen, "Hello"},      {S::AwaitOpen, "Open"},     {S::InSession, "Offer"},
      {S::InSession, "FileChunk"},  {S::InSession, "FileDone"}, {S::InSession, "Id"},
      {S::InSession, "Bye"},        {S::AwaitId, "Id"},         {S::AwaitId, "Bye"},
      {S::Authenticating, "Proof"}, {S::InSession, "Continue"}, {S::InSession, "FileAbort"},
      {S::InSession, "Join"}};
  std::vector<Misplaced> out;
  for (S s : {S::AwaitOpen, S::Authenticating, S::InSession, S::AwaitId})
    for (const auto& [name, event, message] : messages)
      if (!legal.contains({s, name})) out.push_back({s, name, event, message, s == S::AwaitId});
  for (const auto& [name, event, message] : digest_at_end)
    out.push_back({S::AwaitId, name + "WithTheDigestAtEnd", event, message, true, true});
  return out;
}

class ReceiverDriverIllegal : public ::testing::TestWithParam<Misplaced> {
 protected:
  Rig r;
};

// The named illegal-event abort: Error(ProtocolViolation) naming the event and the state,
// the temporary removed before the verdict, then the disconnect.
TEST_P(ReceiverDriverIllegal, IsAProtocolViolation) {
  const Misplaced& m = GetParam();
  r.version = proto::kVersion2;  // Working exists only in version 2
  r.digest_at_end = m.digest_at_end;
  ASSERT_NO_FATAL_FAILURE(r.reach(m.state));
  const std::size_t sent = r.h.transport.sent.size();
  const std::size_t stepped = r.steps().size();
  r.peer(m.message);
  EXPECT_TRUE(took(r.steps(), stepped, proto::to_string(m.state), proto::to_string(m.event)))
      << steps_since(r.steps(), stepped);
  ASSERT_GT(r.h.transport.sent.size(), sent);
  EXPECT_EQ(
      std::get<proto::Error>(r.h.transport.sent[sent].message).text,
      std::string(proto::to_string(m.event)) + " not allowed in " + proto::to_string(m.state));
  r.check({S::Closing,
           {error(ErrorCode::ProtocolViolation)},
           m.session ? File::Any : File::None,
           End::Disconnects},
          sent);
  if (m.session) {  // the committed entries stay
    r.expect_entry_final(0);
    r.expect_entry_final(1);
  }
}

std::string misplaced_name(const ::testing::TestParamInfo<Misplaced>& p) {
  return p.param.name + "_in_" + proto::to_string(p.param.state);
}

INSTANTIATE_TEST_SUITE_P(Messages, ReceiverDriverIllegal, ::testing::ValuesIn(misplaced_messages()),
                         misplaced_name);

TEST(ReceiverDriverRows, ShutdownDuringTheCommitWaitsForTheVerdict) {
  Rig r;
  r.verifying();  // the commit job is held at the gate
  r.h.connection->shut_down();
  EXPECT_EQ(r.h.state(), S::InSession);
  r.gate.open_all();
  ASSERT_TRUE(r.h.settle([&] { return r.h.state() != S::InSession; }));
  ASSERT_TRUE(r.settle_idle());
  EXPECT_EQ(r.h.state(), S::Closing);
  ASSERT_EQ(r.h.transport.sent_of<proto::Verdict>().size(), 1u);
  EXPECT_EQ(r.h.transport.sent_of<proto::Verdict>()[0].code, proto::VerdictCode::Good);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).code, ErrorCode::ShuttingDown);
  r.expect_file(File::Final);
}

// A store that finishes after the connection began closing credits nothing back: no memory
// is granted to a connection that is ending (stores are not answered outside InSession, and
// the ledger, closed with the Disconnect, grants nothing either).
TEST(ReceiverDriverRows, AStoreThatFinishesWhileClosingCreditsNothing) {
  Rig r;
  r.receiving();
  ASSERT_TRUE(r.gate.hold());
  ASSERT_TRUE(r.chunk(0));  // its store waits behind the gate
  const std::size_t credits = r.h.transport.sent_of<proto::Credit>().size();
  r.undecodable_message();
  ASSERT_EQ(r.h.state(), S::Closing);
  r.gate.open_all();
  ASSERT_TRUE(r.settle_idle());
  EXPECT_EQ(r.h.transport.sent_of<proto::Credit>().size(), credits);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).code, ErrorCode::ProtocolViolation);
}

// Every (open state, event) pair is a row driven above or a misplaced message driven above,
// never both; and every result of the entries' work has a row.
TEST(ReceiverDriverCoverage, EveryPairOfAnOpenStateIsDriven) {
  std::map<std::pair<S, E>, std::string> seen;
  std::set<SR> results;
  for (const Row& row : all_rows()) {
    if (row.at.state == S::Closing || row.at.state == S::Closed) continue;
    if (const E* e = row.at.event.event())
      seen.emplace(std::pair{row.at.state, *e}, "row");
    else
      results.insert(std::get<SR>(row.at.event.v));
  }
  for (const Misplaced& m : misplaced_messages()) {
    auto [it, added] = seen.emplace(std::pair{m.state, m.event}, "illegal");
    EXPECT_TRUE(added || it->second == "illegal") << m;
  }
  for (S s : {S::AwaitOpen, S::Authenticating, S::InSession, S::AwaitId})
    for (E e : proto::enum_values<proto::ReceiverEvent>())
      EXPECT_TRUE(seen.contains({s, e})) << proto::to_string(s) << " + " << proto::to_string(e);
  // 4 open states, 18 events.
  EXPECT_EQ(seen.size(), 4u * 18u);
  EXPECT_EQ(results.size(), proto::enum_values<proto::WorkResult>().size());
}

TEST(ReceiverDriverCoverage, NoDeadlineWhileTheDiskWorks) {
  for (const Resting& at : resting_states()) {
    if (!at.own_work) continue;
    SCOPED_TRACE(at.variant);
    Rig r;
    ASSERT_NO_FATAL_FAILURE(at.reach(r));
    const std::size_t sent = r.h.transport.sent.size();
    r.tick_late();
    EXPECT_EQ(r.h.state(), at.state);
    EXPECT_EQ(r.h.transport.sent.size(), sent);
  }
}

}  // namespace
}  // namespace rdmax::test::receiver_rig
