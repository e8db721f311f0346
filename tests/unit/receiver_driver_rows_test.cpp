// Every row of the receiver's transition table (docs/PROTOCOL.md 4.5; the reference is
// protocol/receiver_machine.cpp), driven through the real Connection over the fake
// transport. Each row is brought about by real inputs (messages, send completions, CM
// events, ticks, the pool's results, injected failures); the driver's trace log proves the
// row's (state, event) was taken, and what it did is checked from outside: its state, what
// it posted, the file on disk and how it leaves. receiver_machine_test.cpp checks the pure
// table; this file checks that the driver carries it out, and lists, with the reason, every
// (state, event) pair no real input can raise. The data-phase rules are driven in
// receiver_driver_ledger_test.cpp; whole sessions (PROTOCOL.md 7.5) in
// receiver_driver_session_test.cpp.

#include <gtest/gtest.h>

#include <array>
#include <initializer_list>
#include <map>
#include <set>
#include <tuple>

#include "machine_enums.hpp"
#include "receiver_driver_rig.hpp"

namespace rdmax::test::receiver_rig {
namespace {

// A row of the table, and how the event was raised where a row has several ways.
struct At {
  S state;
  E event;
  const char* variant = "";  // not std::string: GCC 12 -O2 misreports it as uninitialized
};

struct Row {
  At at;
  Step reach;
  Step inject;
  Want want;
  Step also = nullptr;  // row-specific checks, after the common ones
};

std::ostream& operator<<(std::ostream& out, const Row& row) {
  return out << proto::to_string(row.at.state) << " + " << proto::to_string(row.at.event) << " "
             << row.at.variant;
}

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  const Row& r = info.param;
  return std::string(proto::to_string(r.at.state)) + "_" + proto::to_string(r.at.event) +
         (*r.at.variant == '\0' ? std::string() : "_" + std::string(r.at.variant));
}

// ---- The protocol's rows ----

void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// Leaves a partial of `path` holding its first `kept` bytes, durable, as an interrupted
// transfer would; the rig's receiver uses the same store.
void keep_partial(Rig& r, const std::string& path, const std::vector<std::uint8_t>& bytes,
                  std::uint32_t kept) {
  r.partials.emplace(r.h.dir.fd(), receiver::PartialStore::Limits{});
  r.h.context.partials = &*r.partials;
  auto handle = r.partials->open({path, bytes.size(), merkle::digest_of(bytes)}, kSlot);
  ASSERT_TRUE(handle.has_value());
  ASSERT_EQ(::pwrite(handle->fd(), bytes.data(), kept, 0), static_cast<ssize_t>(kept));
  std::vector<merkle::Node> nodes;
  merkle::BlockHasher().nodes(0, std::span(bytes).first(kept), nodes);
  handle->checkpoint(kept, nodes);
}

std::vector<Row> protocol_rows() {
  using V = proto::VerdictCode;
  using R = proto::RejectReason;
  const Posted credit0{T::Credit, 0}, credit1{T::Credit, 1};
  return {
      {{S::AwaitHello, E::GotHello, ""},
       [](Rig& r) { r.await_hello(); },
       [](Rig& r) { r.peer(r.hello()); },
       {S::CheckingHello, {}}},
      {{S::CheckingHello, E::HelloAccepted, ""},
       [](Rig& r) { r.checking_hello(); },
       [](Rig& r) { r.settle_out_of(S::CheckingHello); },
       {S::Receiving, {{T::Accept}, credit0, credit1}, File::Temp},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 2u); }},
      // Resume (PROTOCOL.md 7.6): the file offered is in place, and the sender asked.
      {{S::CheckingHello, E::HelloHave, ""},
       [](Rig& r) {
         r.version = proto::kVersion2;
         r.resume = true;
         write_bytes(r.h.dir.path() / r.name, r.bytes);
         r.checking_hello();
       },
       [](Rig& r) { r.settle_out_of(S::CheckingHello); },
       {S::AwaitId, {{T::Have}}, File::Any},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Have>().at(0).digest, sha256_of(r.bytes));
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
       }},
      {{S::CheckingHello, E::HelloRejected, "Exists"},
       [](Rig& r) {
         std::ofstream(r.h.dir.path() / r.name) << "taken";
         r.checking_hello();
       },
       [](Rig& r) { r.settle_out_of(S::CheckingHello); },
       {S::Closing, {reject(R::Exists)}, File::Any, End::Disconnects},
       [](Rig& r) {
         EXPECT_EQ(read_file(r.h.dir.path() / r.name), "taken");
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
       }},
      {{S::CheckingHello, E::HelloRejected, "BadName"},
       [](Rig& r) { r.await_hello(); },
       [](Rig& r) {
         r.name = "a/b";
         r.peer(r.hello());
       },
       {S::Closing, {reject(R::BadName)}, File::None, End::Disconnects}},
      // The window is registered once the file exists (the create job reported).
      {{S::CheckingHello, E::HelloRejected, "RegistrationFails"},
       [](Rig& r) {
         r.await_hello();
         r.h.transport.fail_registration_after = 1;  // the second slot's
       },
       [](Rig& r) {
         r.peer(r.hello());
         r.settle_idle();
       },
       {S::Closing, {reject(R::NoMemory)}, File::None, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      {{S::CheckingHello, E::HelloRejected, "ForeignVersion"},
       [](Rig& r) { r.await_hello(); },
       [](Rig& r) {
         std::vector<std::uint8_t> m = proto::encode(r.hello());
         m[4] = 3;  // header.version
         r.h.transport.deliver_bytes(m);
         r.h.poll();
       },
       {S::Closing, {reject(R::UnsupportedVersion)}, File::None, End::Disconnects}},
      {{S::Receiving, E::GotChunk, ""},
       [](Rig& r) { r.receiving(); },
       [](Rig& r) { EXPECT_TRUE(r.chunk(0)); },
       {S::Receiving, {}, File::Temp},
       [](Rig& r) {  // the slot's key died with its Chunk
         EXPECT_EQ(r.h.transport.live_regions(), 1u);
         EXPECT_FALSE(r.h.transport.write_remote(r.accept().region_addr, r.rkey_of(0), r.bytes));
       }},
      {{S::Receiving, E::ChunkStored, ""},
       [](Rig& r) {
         r.receiving();
         ASSERT_TRUE(r.chunk(0));
       },
       [](Rig& r) { r.settle_idle(); },
       {S::Receiving, {credit0}, File::Temp},
       [](Rig& r) {
         const auto credits = r.h.transport.sent_of<proto::Credit>();
         EXPECT_NE(credits.back().rkey, credits.front().rkey);
         EXPECT_EQ(r.h.transport.live_regions(), 2u);
       }},
      {{S::Receiving, E::GotDone, ""},
       [](Rig& r) {
         r.receiving();
         ASSERT_TRUE(r.chunk(0));
       },
       [](Rig& r) { r.done(); },
       {S::Draining, {}, File::Temp},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      {{S::Receiving, E::VerifiedBad, "WriteFails"},
       [](Rig& r) { r.failed_store(false); },
       [](Rig& r) { run_pool_once(r.h.pool); },
       {S::Closing, {verdict(V::StorageError)}, File::None, End::Disconnects},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Verdict>().at(0).received_digest, Digest{});
       }},
      {{S::Draining, E::ChunkStored, ""},
       [](Rig& r) { r.draining_two_stores(); },
       [](Rig& r) { run_pool_once(r.h.pool); },
       {S::Draining, {}, File::Temp}},
      {{S::Draining, E::Drained, ""},
       [](Rig& r) { r.draining_last_store(); },
       [](Rig& r) { run_pool_once(r.h.pool); },
       {S::Verifying, {}, File::Temp}},
      {{S::Draining, E::VerifiedBad, "WriteFails"},
       [](Rig& r) { r.failed_store(true); },
       [](Rig& r) { run_pool_once(r.h.pool); },
       {S::Closing, {verdict(V::StorageError)}, File::None, End::Disconnects}},
      {{S::Verifying, E::VerifiedGood, ""},
       [](Rig& r) { r.verifying(); },
       [](Rig& r) {
         r.gate.open_all();
         r.settle_out_of(S::Verifying);
       },
       {S::AwaitId, {verdict(V::Good)}, File::Final},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Verdict>().at(0).received_digest,
                   sha256_of(r.bytes));
       }},
      {{S::Verifying, E::VerifiedBad, "HashMismatch"},
       [](Rig& r) {
         r.digest = Digest{};
         r.all_stored();
       },
       [](Rig& r) { r.done(); },
       {S::Closing, {verdict(V::HashMismatch)}, File::None, End::Disconnects}},
      {{S::Verifying, E::VerifiedBad, "SizeMismatch"},
       [](Rig& r) { r.all_stored(); },
       [](Rig& r) { r.peer(proto::Done{r.bytes.size() - 1}); },
       {S::Closing, {verdict(V::SizeMismatch)}, File::None, End::Disconnects}},
      {{S::Verifying, E::VerifiedBad, "CommitFails"},
       [](Rig& r) {
         r.verifying();
         std::ofstream(r.h.dir.path() / r.name) << "taken";  // appeared since the Hello
       },
       [](Rig& r) {
         r.gate.open_all();
         r.settle_out_of(S::Verifying);
       },
       {S::Closing, {verdict(V::StorageError)}, File::Any, End::Disconnects},
       [](Rig& r) {
         EXPECT_EQ(read_file(r.h.dir.path() / r.name), "taken");
         EXPECT_EQ(open_files_under(r.h.dir.path()), 0u);
       }},
      // LookupId answers within the dispatch of GotId: CheckingId shows only in the log.
      {{S::AwaitId, E::GotId, ""},
       [](Rig& r) { r.await_id(); },
       [](Rig& r) { r.peer(proto::Id{"mallory"}); },
       {S::AwaitId, {{T::Denied, 2}}, File::Final},
       [](Rig& r) { EXPECT_TRUE(r.log.took(0, S::CheckingId, E::IdUnknown)); }},
      {{S::AwaitId, E::GotBye, ""},
       [](Rig& r) { r.await_id(); },
       [](Rig& r) { r.peer(proto::Bye{}); },
       {S::Closing, {}, File::Final, End::Disconnects}},
      {{S::CheckingId, E::IdKnown, ""},
       [](Rig& r) { r.await_id(); },
       [](Rig& r) { r.peer(proto::Id{"alice"}); },
       {S::Closing, {{T::Secret}}, File::Final, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.transport.sent_of<proto::Secret>().at(0).secret, "s3cret"); }},
      {{S::CheckingId, E::IdUnknown, ""},
       [](Rig& r) {
         r.await_id();
         r.peer(proto::Id{"mallory"});
       },
       [](Rig& r) { r.peer(proto::Id{"bob"}); },
       {S::AwaitId, {{T::Denied, 1}}, File::Final}},
      {{S::CheckingId, E::IdAttemptsExhausted, ""},
       [](Rig& r) {
         r.await_id();
         r.peer(proto::Id{"mallory"});
         r.peer(proto::Id{"bob"});
       },
       [](Rig& r) { r.peer(proto::Id{"eve"}); },
       {S::Closing, {{T::Denied, 0}}, File::Final, End::Disconnects}},
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
      // CheckOpen answers within the dispatch of GotOpen: CheckingOpen shows only in the log.
      {{S::AwaitHello, E::GotOpen, ""},
       open,
       send_open,
       {S::InSession, {{T::Accept}, credit0, credit1}, File::None},
       [](Rig& r) {
         EXPECT_TRUE(r.log.took(0, S::CheckingOpen, E::OpenAccepted));
         EXPECT_EQ(r.accept().slot_count, 2u);
         EXPECT_EQ(r.h.transport.live_regions(), 2u);
       }},
      {{S::CheckingOpen, E::OpenAccepted, ""},
       open,
       send_open,
       {S::InSession, {{T::Accept}, credit0, credit1}, File::None}},
      {{S::CheckingOpen, E::OpenRejected, "NoMemory"},
       [](Rig& r) {
         r.h.options.max_memory = kSlot;  // the window wants two slots
         r.version = proto::kVersion2;
         r.await_hello();
       },
       send_open,
       {S::Closing, {reject(R::NoMemory)}, File::None, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      {{S::CheckingOpen, E::OpenRejected, "RegistrationFails"},
       [](Rig& r) {
         r.version = proto::kVersion2;
         r.await_hello();
         r.h.transport.fail_registration_after = 1;  // the second slot's
       },
       send_open,
       {S::Closing, {reject(R::NoMemory)}, File::None, End::Disconnects},
       [](Rig& r) { EXPECT_EQ(r.h.transport.live_regions(), 0u); }},
      {{S::InSession, E::GotOffer, ""},
       [](Rig& r) { r.in_session(); },
       [](Rig& r) { r.peer(r.offer(0)); },
       {S::InSession, {}}},  // the file is created on the pool
      // Resume (PROTOCOL.md 7.6): the file is in place already (a sender that asked).
      {{S::InSession, E::EntryHave, ""},
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
      // ...or its first chunk is kept as a partial of the same digest: taken from there.
      {{S::InSession, E::EntryResumed, ""},
       [](Rig& r) {
         r.resume = true;
         r.algorithm = proto::DigestAlgorithm::FsVeritySha256;
         keep_partial(r, "a.bin", r.entries[0].bytes, kSlot);
         r.entry_offered();
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::Resume)); },
       {S::InSession, {{T::Resume}}, File::Any},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Resume>().at(0),
                   (proto::Resume{0, std::uint64_t{kSlot}}));
         EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
       }},
      {{S::InSession, E::EntryTaken, ""},
       [](Rig& r) { r.entry_offered(); },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::Take)); },
       {S::InSession, {{T::Take}}},
       [](Rig& r) {
         EXPECT_EQ(r.h.transport.sent_of<proto::Take>().at(0).entry, 0u);
         EXPECT_FALSE(std::filesystem::exists(r.h.dir.path() / "a.bin"));
         EXPECT_EQ(open_files_under(r.h.dir.path()), 1u);  // the temporary
       }},
      // Refused by the path rule before anything is created (PROTOCOL.md 7.5).
      {{S::InSession, E::EntryRefused, "BadName"},
       [](Rig& r) {
         r.entries[0].path = "../a.bin";
         r.in_session();
       },
       [](Rig& r) { r.peer(r.offer(0)); },
       {S::InSession, {refuse(R::BadName)}, File::None},
       entry_refused},
      {{S::InSession, E::EntryRefused, "Exists"},
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
       [](Rig& r) {  // the slot's key died with its FileChunk
         EXPECT_EQ(r.h.transport.live_regions(), 1u);
         EXPECT_FALSE(r.h.transport.write_remote(r.accept().region_addr, r.rkey_of(0), r.bytes));
       }},
      {{S::InSession, E::ChunkStored, ""},
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
      {{S::InSession, E::EntrySettled, "Good"},
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
      {{S::InSession, E::EntrySettled, "HashMismatch"},
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
      {{S::InSession, E::EntrySettled, "Directory"},
       [](Rig& r) {
         r.entries = {{"d", {}, 0750, 1500000000, 9, proto::EntryKind::Directory}};
         r.in_session();
         r.peer(r.offer(0));
       },
       [](Rig& r) { EXPECT_TRUE(r.settle_until_sent(T::FileVerdict)); },
       {S::InSession, {file_verdict(V::Good)}},
       [](Rig& r) { r.expect_entry_final(0); }},
      // LookupId answers within the dispatch of GotId.
      {{S::InSession, E::GotId, ""},
       [](Rig& r) { r.session_settled(); },
       [](Rig& r) { r.peer(proto::Id{"alice"}); },
       {S::Closing, {{T::Secret}}, File::Any, End::Disconnects},
       [](Rig& r) {
         EXPECT_TRUE(r.log.took(0, S::CheckingId, E::IdKnown));
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

constexpr std::array kRestingStates{S::AwaitHello, S::CheckingHello, S::Receiving, S::Draining,
                                    S::Verifying,  S::AwaitId,       S::InSession};

bool before_verdict(S s) {
  return s != S::AwaitId && s != S::CheckingId;
}

// The Timeout rows of the states that wait on the receiver's own disk work cannot happen.
bool times_out(S s) {
  return s != S::CheckingHello && s != S::Draining && s != S::Verifying;
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
      {E::TransportFailed, [](Rig& r) { r.transport_fails(); }, S::Closed, {}},
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
  // A Step cannot capture the state: one recipe per resting state.
  const std::map<S, Step> reach{
      {S::AwaitHello, [](Rig& r) { r.reach(S::AwaitHello); }},
      {S::CheckingHello, [](Rig& r) { r.reach(S::CheckingHello); }},
      {S::Receiving, [](Rig& r) { r.reach(S::Receiving); }},
      {S::Draining, [](Rig& r) { r.reach(S::Draining); }},
      {S::Verifying, [](Rig& r) { r.reach(S::Verifying); }},
      {S::AwaitId, [](Rig& r) { r.reach(S::AwaitId); }},
      {S::InSession, [](Rig& r) { r.reach(S::InSession); }},
  };
  std::vector<Row> rows;
  for (S s : kRestingStates) {
    for (const Abort& a : aborts) {
      if (a.event == E::Timeout && !times_out(s)) continue;
      // A shutdown during the commit waits for it (unreachable_rows; its own test below).
      if (a.event == E::ShuttingDown && s == S::Verifying) continue;
      Want want{a.next,
                {},
                before_verdict(s) ? File::None : File::Final,
                a.next == S::Closed ? End::Released : End::Disconnects};
      if (a.says) want.posted.push_back(error(*a.says));
      rows.push_back({{s, a.event, ""}, reach.at(s), a.inject, want});
    }
  }
  // LocalFailure through the failures of the driver's own actions, not only a poll.
  rows.push_back({{S::CheckingHello, E::LocalFailure, "WorkingPostFails"},
                  [](Rig& r) {
                    r.version = proto::kVersion2;
                    r.keepalive_ms = 200;
                    r.checking_hello();
                    r.h.transport.fail_one_send_after = 0;
                  },
                  [](Rig& r) { r.h.connection->tick(Clock::now()); },
                  {S::Closing, {error(ErrorCode::Internal)}, File::None, End::Disconnects}});
  rows.push_back({{S::Receiving, E::LocalFailure, "CreditRegistrationFails"},
                  [](Rig& r) {
                    r.receiving();
                    r.h.transport.fail_registration_after = 0;
                    ASSERT_TRUE(r.chunk(0));
                  },
                  [](Rig& r) { r.settle_idle(); },
                  {S::Closing, {error(ErrorCode::Internal)}, File::None, End::Disconnects}});
  rows.push_back({{S::AwaitId, E::LocalFailure, "VerdictPostFails"},
                  [](Rig& r) {
                    r.verifying();
                    r.h.transport.fail_one_send_after = 0;
                  },
                  [](Rig& r) {
                    r.gate.open_all();
                    r.settle_out_of(S::Verifying);
                  },
                  {S::Closing, {error(ErrorCode::Internal)}, File::Final, End::Disconnects}});
  rows.push_back({{S::InSession, E::LocalFailure, "TakePostFails"},
                  [](Rig& r) {
                    r.entry_offered();
                    r.h.transport.fail_one_send_after = 0;
                  },
                  [](Rig& r) { r.settle_out_of(S::InSession); },
                  {S::Closing, {error(ErrorCode::Internal)}, File::None, End::Disconnects}});
  // The session's rules, checked before anything is done (PROTOCOL.md 7.5).
  const Want violation{
      S::Closing, {error(ErrorCode::ProtocolViolation)}, File::None, End::Disconnects};
  rows.push_back({{S::InSession, E::ProtocolViolation, "OfferOutOfOrder"},
                  [](Rig& r) { r.in_session(); },
                  [](Rig& r) { r.peer(r.offer(1)); },
                  violation});
  rows.push_back({{S::InSession, E::ProtocolViolation, "ChunkAtWrongOffset"},
                  [](Rig& r) { r.entry_taken(); },
                  [](Rig& r) { r.file_chunk(0, kSlot, kSlot, 0); },
                  violation});
  rows.push_back({{S::InSession, E::ProtocolViolation, "IdBeforeEveryEntryIsSettled"},
                  [](Rig& r) { r.session_resting(); },
                  [](Rig& r) { r.peer(proto::Id{"alice"}); },
                  violation});
  rows.push_back({{S::InSession, E::ProtocolViolation, "ByeBeforeEveryEntryIsSettled"},
                  [](Rig& r) { r.session_resting(); },
                  [](Rig& r) { r.peer(proto::Bye{}); },
                  violation});
  rows.push_back({{S::Receiving, E::TransportFailed, "CmEvent"},
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
      {{S::Closing, E::GotHello, ""}, closing, [](Rig& r) { r.peer(r.hello()); }, stays},
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
      // shut_down() and Closed take no event at all: the log shows no step.
      {{S::Closing, E::ShuttingDown, ""},
       closing,
       [](Rig& r) { r.h.connection->shut_down(); },
       stays},
      {{S::Closed, E::GotId, ""}, closed, [](Rig& r) { r.peer(proto::Id{"alice"}); }, ends},
      {{S::Closed, E::Timeout, ""}, closed, [](Rig& r) { r.tick_late(); }, ends},
      {{S::Closed, E::ShuttingDown, ""}, closed, [](Rig& r) { r.h.connection->shut_down(); }, ends},
      {{S::Closed, E::Disconnected, ""}, closed, [](Rig& r) { r.disconnected(); }, ends},
  };
}

std::vector<Row> all_rows() {
  std::vector<Row> rows = protocol_rows();
  for (auto& part : {session_rows(), abort_rows(), closing_rows()})
    rows.insert(rows.end(), part.begin(), part.end());
  return rows;
}

class ReceiverDriverRows : public ::testing::TestWithParam<Row> {
 protected:
  Rig r;
};

TEST_P(ReceiverDriverRows, DriverCarriesOutTheRow) {
  const Row& row = GetParam();
  row.reach(r);
  ASSERT_FALSE(HasFatalFailure()) << "could not reach " << proto::to_string(row.at.state);
  const std::size_t sent = r.h.transport.sent.size();
  const std::size_t logged = r.log.size();
  row.inject(r);
  // Closing and Closed take some inputs without a step (shut_down(), or anything once
  // Closed): for those the state staying put is the whole row.
  const bool steps =
      row.at.state != S::Closed && !(row.at.state == S::Closing && row.at.event == E::ShuttingDown);
  if (steps) {
    EXPECT_TRUE(r.log.took(logged, row.at.state, row.at.event)) << r.log.since(logged);
  }
  r.check(row.want, sent);
  if (row.also != nullptr) row.also(r);
}

INSTANTIATE_TEST_SUITE_P(Table, ReceiverDriverRows, ::testing::ValuesIn(all_rows()), row_name);

// ---- A peer message out of place, in every state it can arrive in ----

struct Misplaced {
  S state;
  std::string name;
  E event;
  proto::Message message;
  bool session = false;  // AwaitId after a session (Id denied once)
};

std::ostream& operator<<(std::ostream& out, const Misplaced& m) {
  return out << m.name << " in " << proto::to_string(m.state) << (m.session ? " (session)" : "");
}

std::vector<Misplaced> misplaced_messages() {
  using W = proto::WorkPhase;
  const std::vector<std::tuple<std::string, E, proto::Message>> messages{
      {"Hello", E::GotHello, proto::Hello{10, {}, 0, "other.bin"}},
      {"Chunk", E::GotChunk, proto::Chunk{0, kSlot, 0}},
      {"Done", E::GotDone, proto::Done{2 * kSlot}},
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
      // A session's messages before an Open began one.
      {"Offer", E::GotUnexpected, proto::Offer{0, proto::EntryKind::File, 0644, 1, 0, 0, {}, "x"}},
      {"FileChunk", E::GotUnexpected, proto::FileChunk{0, 0, 0, kSlot}},
      {"FileDone", E::GotUnexpected, proto::FileDone{0, 1}},
      {"Take", E::GotUnexpected, proto::Take{0}},
      {"Refuse", E::GotUnexpected, proto::Refuse{0, proto::RejectReason::Exists, ""}},
      {"FileVerdict", E::GotUnexpected, proto::FileVerdict{}},
  };
  // In a session Offer, FileChunk and FileDone are its own, and Id and Bye legal once every
  // entry is settled (a ProtocolViolation before: see the rows).
  const std::set<std::string> session_messages{"Offer", "FileChunk", "FileDone", "Id", "Bye"};
  const std::set<std::pair<S, E>> legal{{S::AwaitHello, E::GotHello}, {S::Receiving, E::GotChunk},
                                        {S::Receiving, E::GotDone},   {S::AwaitId, E::GotId},
                                        {S::AwaitId, E::GotBye},      {S::AwaitHello, E::GotOpen}};
  std::vector<Misplaced> out;
  for (S s : kRestingStates)
    for (const auto& [name, event, message] : messages) {
      if (s == S::InSession && session_messages.contains(name)) continue;
      // A version-1 Chunk carries no entry: in a session it is not GotChunk.
      const E e = s == S::InSession && name == "Chunk" ? E::GotUnexpected : event;
      if (!legal.contains({s, e})) out.push_back({s, name, e, message});
    }
  // Once a session has begun its messages raise their own events, illegal after it.
  out.push_back({S::AwaitId, "Offer", E::GotOffer,
                 proto::Offer{2, proto::EntryKind::File, 0644, 0, 0, 0, {}, "c.bin"}, true});
  out.push_back({S::AwaitId, "FileDone", E::GotFileDone, proto::FileDone{0, 1}, true});
  return out;
}

class ReceiverDriverIllegal : public ::testing::TestWithParam<Misplaced> {
 protected:
  Rig r;
};

// The named IllegalEvent abort: Error(ProtocolViolation) naming the event and the state,
// the temporary removed before the verdict, then the disconnect.
TEST_P(ReceiverDriverIllegal, IsAProtocolViolation) {
  const Misplaced& m = GetParam();
  r.version = proto::kVersion2;  // Working exists only in version 2
  if (m.session)
    r.session_await_id();
  else
    r.reach(m.state);
  ASSERT_FALSE(HasFatalFailure());
  const std::size_t sent = r.h.transport.sent.size();
  const std::size_t logged = r.log.size();
  r.peer(m.message);
  EXPECT_TRUE(r.log.took(logged, m.state, m.event)) << r.log.since(logged);
  ASSERT_GT(r.h.transport.sent.size(), sent);
  EXPECT_EQ(
      std::get<proto::Error>(r.h.transport.sent[sent].message).text,
      std::string(proto::to_string(m.event)) + " not allowed in " + proto::to_string(m.state));
  r.check({S::Closing,
           {error(ErrorCode::ProtocolViolation)},
           m.session                 ? File::Any
           : before_verdict(m.state) ? File::None
                                     : File::Final,
           End::Disconnects},
          sent);
  if (m.session) {  // the committed entries stay
    r.expect_entry_final(0);
    r.expect_entry_final(1);
  }
}

std::string misplaced_name(const ::testing::TestParamInfo<Misplaced>& p) {
  return p.param.name + "_in_" + proto::to_string(p.param.state) +
         (p.param.session ? "_AfterASession" : "");
}

INSTANTIATE_TEST_SUITE_P(Messages, ReceiverDriverIllegal, ::testing::ValuesIn(misplaced_messages()),
                         misplaced_name);

// ---- What no real input can raise, and why ----

struct Unreachable {
  S state;
  E event;
  const char* why;
};

std::vector<Unreachable> unreachable_rows() {
  std::vector<Unreachable> out;
  auto add = [&](std::initializer_list<S> states, std::initializer_list<E> events,
                 const char* why) {
    for (S s : states)
      for (E e : events) out.push_back({s, e, why});
  };
  add({S::Verifying}, {E::ShuttingDown},
      "shut_down() during the commit is held until the commit reports, so the verdict goes "
      "out first (PROTOCOL.md 5.5): the event reaches AwaitId, not Verifying "
      "(ReceiverDriverRows.ShutdownDuringTheCommitWaitsForTheVerdict)");
  constexpr const auto& kAllEvents = kAllReceiverEvents;
  for (E e : kAllEvents)
    if (e != E::IdKnown && e != E::IdUnknown && e != E::IdAttemptsExhausted)
      add({S::CheckingId}, {e},
          "LookupId is synchronous: its answer is dispatched within GotId's dispatch, so no "
          "input ever finds the connection in CheckingId");
  for (E e : kAllEvents)
    if (e != E::OpenAccepted && e != E::OpenRejected)
      add({S::CheckingOpen}, {e},
          "CheckOpen is synchronous: its answer is dispatched within GotOpen's dispatch, so no "
          "input ever finds the connection in CheckingOpen");
  add({S::CheckingHello, S::Draining, S::Verifying}, {E::Timeout},
      "the wait is on the receiver's own disk work: expect_own_work() clears the deadline "
      "(PROTOCOL.md 4.4); see NoDeadlineWhileTheDiskWorks");
  add({S::AwaitHello, S::Receiving, S::Draining, S::Verifying, S::AwaitId, S::InSession},
      {E::HelloAccepted, E::HelloRejected, E::HelloHave},
      "only check_hello() (run by GotHello) and its create callback raise them, and the "
      "callback returns unless the state is CheckingHello");
  add({S::AwaitHello, S::CheckingHello, S::Verifying, S::AwaitId}, {E::ChunkStored},
      "on_stored() returns unless the state is Receiving or Draining, on_session_stored() "
      "unless InSession");
  add({S::AwaitHello, S::CheckingHello, S::Receiving, S::Verifying, S::AwaitId, S::InSession},
      {E::Drained},
      "only await_drain() raises it, and AwaitDrain belongs to transitions into Draining");
  add({S::AwaitHello, S::CheckingHello, S::Receiving, S::Draining, S::AwaitId, S::InSession},
      {E::VerifiedGood}, "only the commit callback raises it, and it returns unless Verifying");
  add({S::AwaitHello, S::CheckingHello, S::AwaitId, S::InSession}, {E::VerifiedBad},
      "raised by on_stored() (Receiving, Draining) and by verify() and the commit callback "
      "(Verifying) only; a session's entries fail with EntrySettled");
  add({S::AwaitHello, S::CheckingHello, S::Receiving, S::Draining, S::Verifying, S::AwaitId,
       S::InSession},
      {E::IdKnown, E::IdUnknown, E::IdAttemptsExhausted},
      "only lookup_id() raises them, run by LookupId on entering CheckingId");
  add({S::AwaitHello, S::CheckingHello, S::Receiving, S::Draining, S::Verifying},
      {E::GotOffer, E::GotFileDone},
      "on_session_message() raises them only once an Open began a session (GotUnexpected "
      "before), and a session never enters these states");
  add({S::AwaitHello, S::CheckingHello, S::Receiving, S::Draining, S::Verifying, S::AwaitId,
       S::InSession},
      {E::OpenAccepted, E::OpenRejected},
      "only check_open() raises them, run by CheckOpen on entering CheckingOpen");
  add({S::AwaitHello, S::CheckingHello, S::Receiving, S::Draining, S::Verifying, S::AwaitId},
      {E::EntryTaken, E::EntryRefused, E::EntrySettled, E::EntryResumed, E::EntryHave},
      "only check_offer() (run by CheckOffer in InSession), verify_entry() and the callbacks "
      "of their disk work raise them, and the callbacks return unless InSession");
  return out;
}

// Every (open state, event) pair is a row driven above, a misplaced message driven above,
// or listed as unreachable with its reason; never two of these.
TEST(ReceiverDriverRows, ShutdownDuringTheCommitWaitsForTheVerdict) {
  Rig r;
  r.reach(S::Verifying);  // the commit job is held at the gate
  r.h.connection->shut_down();
  EXPECT_EQ(r.h.state(), S::Verifying);
  r.gate.open_all();
  ASSERT_TRUE(r.settle_out_of(S::Verifying));
  ASSERT_TRUE(r.settle_idle());
  EXPECT_EQ(r.h.state(), S::Closing);
  ASSERT_EQ(r.h.transport.sent_of<proto::Verdict>().size(), 1u);
  EXPECT_EQ(r.h.transport.sent_of<proto::Verdict>()[0].code, proto::VerdictCode::Good);
  EXPECT_EQ(r.h.transport.sent_of<proto::Error>().at(0).code, ErrorCode::ShuttingDown);
  r.expect_file(File::Final);
}

TEST(ReceiverDriverCoverage, EveryPairOfAnOpenStateIsDrivenOrExplained) {
  std::map<std::pair<S, E>, std::string> seen;
  std::size_t table_rows = 0;
  for (const Row& row : all_rows()) {
    if (row.at.state == S::Closing || row.at.state == S::Closed) continue;
    if (seen.emplace(std::pair{row.at.state, row.at.event}, "row").second) ++table_rows;
  }
  for (const Misplaced& m : misplaced_messages()) {
    auto [it, added] = seen.emplace(std::pair{m.state, m.event}, "illegal");
    EXPECT_TRUE(added || it->second == "illegal") << m;
  }
  for (const Unreachable& u : unreachable_rows())
    EXPECT_TRUE(seen.emplace(std::pair{u.state, u.event}, u.why).second)
        << proto::to_string(u.state) << " + " << proto::to_string(u.event) << " twice";
  // 9 open states (7 of version 1, CheckingOpen, InSession), 33 events.
  EXPECT_EQ(seen.size(), 9u * 33u);
  // 18 protocol rows (HelloHave among them); 7 aborts from each of the 7 resting states
  // (InSession among them, not CheckingId or CheckingOpen) less 3 Timeouts and one held
  // shutdown; and the sessions': AwaitHello + GotOpen, CheckingOpen's 2 and InSession's 11.
  EXPECT_EQ(table_rows, 18u + 7u * 7u - 3u - 1u + (1u + 2u + 11u));
  // Held shutdown 1, CheckingId 30, CheckingOpen 31, Timeout 3, Hello results 18,
  // ChunkStored 4, Drained 6, VerifiedGood 6, VerifiedBad 4, Id results 21, GotOffer and
  // GotFileDone 10, Open results 14, entry results 30.
  EXPECT_EQ(unreachable_rows().size(),
            1u + 30u + 31u + 3u + 18u + 4u + 6u + 6u + 4u + 21u + 10u + 14u + 30u);
}

TEST(ReceiverDriverCoverage, NoDeadlineWhileTheDiskWorks) {
  for (S s : {S::CheckingHello, S::Draining, S::Verifying}) {
    SCOPED_TRACE(proto::to_string(s));
    Rig r;
    r.reach(s);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    const std::size_t sent = r.h.transport.sent.size();
    r.tick_late();
    EXPECT_EQ(r.h.state(), s);
    EXPECT_EQ(r.h.transport.sent.size(), sent);
  }
}

}  // namespace
}  // namespace rdmax::test::receiver_rig
