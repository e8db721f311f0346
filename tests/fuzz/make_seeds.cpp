// Writes the seed corpora of the fuzz targets: real encoded messages and a real conversation
// each, so the fuzzers start from inputs that get past the header checks instead of having to
// discover the magic first. Usage: fuzz_make_seeds CORPUS_DIR (tests/fuzz/corpus).

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/auth.hpp"
#include "protocol/receiver_machine.hpp"
#include "protocol/sender_machine.hpp"
#include "protocol/stripes.hpp"
#include "protocol/wire.hpp"
#include "tests/fuzz/machine_local_inputs.hpp"
#include "tests/fuzz/session_ledger_ops.hpp"

namespace {

using namespace rdmax::proto;
using namespace rdmax::fuzz;
using Bytes = std::vector<std::uint8_t>;
namespace fs = std::filesystem;

Digest sample_sha() {
  Digest sha{};
  for (std::size_t i = 0; i < sha.size(); ++i) sha[i] = static_cast<std::uint8_t>(0xa0 + i);
  return sha;
}

void write(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

void write(const fs::path& path, std::string_view text) {
  write(path, Bytes(text.begin(), text.end()));
}

// fuzz_machines records (see run_messages there): one event byte, or 0x80 + u16 length + bytes.
struct Conversation {
  Bytes bytes;
  Conversation& event(std::uint8_t e) {
    bytes.push_back(e);
    return *this;
  }
  Conversation& message(const Message& m) {
    const Bytes encoded = encode(m, kVersion1);
    bytes.push_back(0x80);
    bytes.push_back(static_cast<std::uint8_t>(encoded.size()));
    bytes.push_back(static_cast<std::uint8_t>(encoded.size() >> 8));
    bytes.insert(bytes.end(), encoded.begin(), encoded.end());
    return *this;
  }
};

template <typename Event>
std::uint8_t as_byte(Event e) {
  return static_cast<std::uint8_t>(e);
}

// One round of both drivers by the protocol; `decide` picks take (< 0x80) or refuse.
void honest_round(Bytes& ops, std::uint8_t decide) {
  const Bytes round = {SendOffer,
                       DeliverToReceiver,
                       Decide,
                       decide,
                       GrantAll,
                       DeliverToSender,
                       DeliverToSender,
                       DeliverToSender,
                       SendChunk,
                       SendChunk,
                       DeliverToReceiver,
                       DeliverToReceiver,
                       CompleteChunk,
                       0,
                       CompleteChunk,
                       1,
                       Store,
                       0,
                       Store,
                       0,
                       SendFileDone,
                       DeliverToReceiver,
                       Verify,
                       0,
                       DeliverToSender,
                       DeliverToSender};
  ops.insert(ops.end(), round.begin(), round.end());
}

void write_session_seeds(const fs::path& dir) {
  // 4 entries: 40 bytes, 256 bytes, empty, a directory; 8-byte slots, 3 of them, 2 active.
  const Bytes small_tree = {3, 0x00, 40, 0x01, 0x00, 0x01, 0x02, 0x80, 7, 2, 1, 0, 0, 0, 2, 2};
  Bytes ops = small_tree;
  for (int i = 0; i < 150; ++i) honest_round(ops, 0);
  write(dir / "honest-small-tree", ops);

  // 20 files of 16 bytes (more than kMaxEntriesInFlight), one 16-byte slot.
  Bytes many = {19};
  for (int i = 0; i < 20; ++i) {
    many.push_back(0x00);
    many.push_back(16);
  }
  many.insert(many.end(), {15, 0, 0, 0, 0, 0, 1, 2});
  for (int i = 0; i < 40; ++i) many.push_back(SendOffer);
  for (int i = 0; i < 80; ++i) honest_round(many, static_cast<std::uint8_t>(i % 3 == 0 ? 0x80 : 0));
  write(dir / "honest-many-files-refusals", many);

  // Files failed mid-way (their chunks still in flight) and hostile messages after.
  Bytes failing = small_tree;
  for (int i = 0; i < 30; ++i) {
    failing.insert(failing.end(),
                   {SendOffer, DeliverToReceiver, Decide, 0, GrantAll, DeliverToSender,
                    DeliverToSender, SendChunk, FailFile, 0, DeliverToSender, DeliverToReceiver,
                    CompleteChunk, 0, SendFileDone, DeliverToReceiver});
  }
  const Bytes chunk = encode(FileChunk{1, 0, 8, 8}, kVersion2);
  failing.insert(failing.end(), {RawMessage, 5, static_cast<std::uint8_t>(chunk.size() - 16)});
  failing.insert(failing.end(), chunk.begin() + 16, chunk.end());
  failing.insert(failing.end(), {AnyReceiverCall, 1, 0, 8, AnySenderCall, 2, 0, Close});
  write(dir / "failures-then-hostile", failing);

  // Lies: an Open whose total_bytes is 5, and one with 2 entries for 4 offered.
  Bytes lying = {3, 0x00, 40, 0x01, 0x00, 0x01, 0x02, 0x80, 7, 2, 1, 0,
                 0, 0,    2,  0,    5,    0,    0,    0,    0, 0, 0, 0};
  for (int i = 0; i < 20; ++i) honest_round(lying, 0);
  write(dir / "open-lies-about-bytes", lying);
  Bytes fewer = {3, 0x00, 40, 0x01, 0x00, 0x01, 0x02, 0x80, 7, 2, 1, 0, 0, 0, 2, 1, 1};
  for (int i = 0; i < 20; ++i) honest_round(fewer, 0);
  write(dir / "open-lies-about-entries", fewer);
}

// One round of the striped file's two connections by the protocol (session_stripes.hpp):
// each op is its tag, a side byte (0 lead, 1 member) and its arguments.
void stripes_round(Bytes& ops) {
  const Bytes round = {GrantSlot,  0,          0,
                       GrantSlot,  1,          0,
                       GrantSlot,  0,          1,
                       GrantSlot,  1,          1,
                       SendAChunk, 0,          SendAChunk,
                       1,          SendAChunk, 0,
                       SendAChunk, 1,          CompleteASend,
                       0,          0,          CompleteASend,
                       1,          0,          CompleteASend,
                       0,          0,          CompleteASend,
                       1,          0,          StoreAChunk,
                       0,          0,          StoreAChunk,
                       1,          0,          StoreAChunk,
                       0,          1,          StoreAChunk,
                       1,          1,          MemberDone,
                       1,          LeadDone,   0};
  ops.insert(ops.end(), round.begin(), round.end());
}

void write_stripes_seeds(const fs::path& dir) {
  // kStripesWorld; a file of 1 + 0x0100 bytes (u16); 8-byte slots; RESUME; REFUSED; 3 slots
  // on the lead, 2 on the member.
  const auto setup = [](std::uint8_t resume, std::uint8_t refused) {
    return Bytes{kStripesWorld, 1, 0x00,        0x01, 7, resume, refused, 2, 1,
                 LeadOffers,    0, MemberJoins, 0};
  };
  Bytes honest = setup(0, 1);
  for (int i = 0; i < 12; ++i) stripes_round(honest);
  write(dir / "stripes-honest", honest);
  Bytes resumed = setup(0x0B, 1);  // odd: resumed at chunk 5 (byte 40)
  for (int i = 0; i < 10; ++i) stripes_round(resumed);
  write(dir / "stripes-resumed", resumed);
  Bytes refused = setup(0, 0);  // the member's Open carried total_bytes 0
  for (int i = 0; i < 40; ++i) stripes_round(refused);
  write(dir / "stripes-member-refused", refused);
  Bytes hostile = setup(0, 1);
  for (int i = 0; i < 4; ++i) stripes_round(hostile);
  hostile.insert(hostile.end(), {ChunkAnywhere, 1, 1, 0,       3,  0, 0, 0,  // chunk 3 again
                                 ChunkAnywhere, 0, 1, 0,       30, 0, 0, 0,  // the next unclaimed
                                 EarlyLeadDone, 0, 1, AnyJoin, 1,  0, 0});
  for (int i = 0; i < 3; ++i) stripes_round(hostile);
  hostile.insert(hostile.end(), {MemberLost, 0});
  for (int i = 0; i < 4; ++i) stripes_round(hostile);
  write(dir / "stripes-hostile", hostile);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* dir :
       {"fuzz_decode", "fuzz_machines", "fuzz_names_secrets", "fuzz_session_ledgers"}) {
    fs::create_directories(root / dir);
  }

  const std::vector<std::pair<const char*, Message>> messages = {
      {"hello", Hello{1 << 20, sample_sha(), 0, "a.bin"}},
      {"accept", Accept{0x7f0012340000, 0xdeadbeef, 1 << 20, 8}},
      {"chunk", Chunk{65536, 65536, 1}},
      {"credit", Credit{1, 0x1234}},
      {"done", Done{1 << 20}},
      {"verdict", Verdict{VerdictCode::Good, sample_sha()}},
      {"id", Id{"alice"}},
      {"secret", Secret{"correct-horse"}},
      {"denied", Denied{2}},
      {"reject", Reject{RejectReason::Exists, "exists"}},
      {"bye", Bye{}},
      {"error", Error{ErrorCode::Timeout, "timeout"}},
  };
  for (const auto& [name, message] : messages)
    write(root / "fuzz_decode" / name, encode(message, kVersion1));
  Bytes version2 = encode(Hello{1, sample_sha(), 0, "v2"}, kVersion1);
  version2[4] = 2;  // the version field: what peek_version must still read
  write(root / "fuzz_decode" / "hello-version-2", version2);

  // Version 2 only: Working and the session messages (docs/PROTOCOL.md 7.5).
  Offer directory;
  directory.entry = 3;
  directory.kind = EntryKind::Directory;
  directory.mode = 0755;
  directory.mtime_sec = 1'700'000'000;
  directory.path = "dir/sub";
  const std::vector<std::pair<const char*, Message>> version2_messages = {
      {"hello-v2",
       Hello{1 << 20, sample_sha(), 0, "a.bin", DigestAlgorithm::FsVeritySha256, 1000, {{7, "x"}}}},
      {"working", Working{WorkPhase::Storing, 65536}},
      {"open", Open{DigestAlgorithm::FsVeritySha256, 1000, 0, 3, 3 << 20}},
      {"open-resume",
       Open{DigestAlgorithm::FsVeritySha256, 1000, 0, 3, 3 << 20, {{kExtensionResume, {}}}}},
      {"resume", Resume{0, 3 << 20}},
      {"have", Have{1, sample_sha()}},
      {"offer-file",
       Offer{0, EntryKind::File, 0644, 1 << 20, 1'700'000'000, 5, sample_sha(), "dir/a.bin"}},
      {"offer-directory", directory},
      {"take", Take{0}},
      {"refuse", Refuse{1, RejectReason::Exists, "exists"}},
      {"file-chunk", FileChunk{0, 2, 131072, 65536}},
      {"file-done", FileDone{0, 1 << 20}},
      {"file-verdict", FileVerdict{0, VerdictCode::Good, sample_sha()}},
      // Sender keys (docs/PROTOCOL.md 7.8).
      {"open-key", Open{DigestAlgorithm::FsVeritySha256,
                        1000,
                        0,
                        1,
                        4096,
                        {{kExtensionResume, {}}, sender_key_extension(sample_sha(), "alice")}}},
      {"challenge", Challenge{sample_sha()}},
      {"proof", Proof{sample_sha()}},
      {"reject-auth", Reject{RejectReason::AuthFailed, "authentication failed"}},
      // The digest at the end (docs/PROTOCOL.md 7.9).
      {"open-digest-at-end",
       Open{DigestAlgorithm::FsVeritySha256,
            1000,
            0,
            2,
            2 << 20,
            {{kExtensionResume, {}}, {kExtensionDigestAtEnd, {}}, {kExtensionProveHeld, {}}}}},
      // BLAKE3 (docs/PROTOCOL.md 7.10): the Open's extension 0x8004 after the others.
      {"open-blake3", Open{DigestAlgorithm::Blake3,
                           1000,
                           0,
                           2,
                           2 << 20,
                           {{kExtensionResume, {}}, {kExtensionDigestAtEnd, {}}}}},
      {"offer-flagged",
       Offer{0, EntryKind::File, 0644, 1 << 20, 1'700'000'000, 5, Digest{}, "dir/a.bin", true}},
      // 7.9: how much is held, then the sender's proof; and the older forms.
      {"holds", Holds{0, 3 << 16, std::nullopt}},
      {"holds-with-digest", Holds{0, 3 << 16, sample_sha()}},
      {"continue", Continue{0, 3 << 16}},
      {"continue-with-digest", Continue{0, 3 << 16, sample_sha()}},
      {"file-abort", FileAbort{0, AbortReason::Changed}},
      {"file-done-digest", FileDone{0, 1 << 20, sample_sha()}},
      {"file-verdict-abandoned", FileVerdict{0, VerdictCode::Abandoned, Digest{}}},
      // Sealing (7.11): a box (any bytes, at least a header and a tag) and a sealed chunk.
      {"sealed", Sealed{std::string(kSealedMinBox + 40, '\x5a')}},
      {"file-chunk-sealed", FileChunk{0, 2, 131072, 65536, ChunkSeal{7, SealTag{}}}},
      // One file over several connections (7.12): a member's Open, Stripes, a striped Offer,
      // a Join, the verdict Interrupted.
      {"open-stripe-member", Open{DigestAlgorithm::FsVeritySha256,
                                  1000,
                                  0,
                                  0,
                                  0,
                                  {{kExtensionResume, {}},
                                   {kExtensionDigestAtEnd, {}},
                                   stripe_group_extension({StripeToken{0x11, 0x22, 0x33}, 1, 2})}}},
      {"stripes", Stripes{kMaxStripeMembers}},
      {"offer-striped",
       Offer{0, EntryKind::File, 0644, 1 << 30, 1'700'000'000, 5, Digest{}, "big.bin", true, true}},
      {"join", Join{0, 0}},
      {"file-verdict-interrupted", FileVerdict{0, VerdictCode::Interrupted, Digest{}}},
      // Fetching (7.13): a keyed Fetch asking to seal, of one shard; a Want of a tree.
      {"fetch", Fetch{1000,
                      3,
                      8,
                      {{kExtensionSenderKey, std::string(kNonceBytes, '\x4e') + "alice"},
                       {kExtensionSeal, std::string(1, '\x01')}}}},
      {"want", Want{true, true, "data/set1"}},
  };
  for (const auto& [name, message] : version2_messages)
    write(root / "fuzz_decode" / name, encode(message, kVersion2));

  using RE = ReceiverEvent;
  using SE = SenderEvent;
  write(root / "fuzz_machines" / "receiver-with-id",
        Conversation{}
            .message(Hello{1 << 20, sample_sha(), 0, "a.bin"})
            .event(result_byte(WorkResult::EntryTaken))
            .message(Chunk{0, 1 << 20, 0})
            .event(result_byte(WorkResult::ChunkStored))
            .message(Done{1 << 20})
            .event(result_byte(WorkResult::EntrySettled))
            .message(Id{"alice"})  // unknown: denied
            .event(event_byte(RE::GotId, IdLookup::Known))
            .event(as_byte(RE::Disconnected))
            .bytes);
  write(root / "fuzz_machines" / "sender-with-id",
        Conversation{}
            .event(as_byte(SetupEvent::AddressResolved))
            .event(as_byte(SetupEvent::RouteResolved))
            .event(as_byte(SE::Established))
            .message(Accept{0x7f0012340000, 0xdeadbeef, 1 << 20, 8})
            .message(Take{0})
            .message(Credit{0, 0x1234})
            .message(FileVerdict{0, VerdictCode::Good, sample_sha()})
            .event(rdmax::fuzz::kSettledAllGood)
            .message(Secret{"correct-horse"})
            .event(as_byte(SE::Disconnected))
            .bytes);
  write(root / "fuzz_machines" / "keyed-sender",
        Conversation{}
            .event(as_byte(SetupEvent::AddressResolved))
            .event(as_byte(SetupEvent::RouteResolved))
            .event(as_byte(SE::Established))
            .message(Challenge{sample_sha()})
            .message(Proof{sample_sha()})
            .message(Accept{0x7f0012340000, 0xdeadbeef, 1 << 20, 8})
            .bytes);
  Bytes every_event;
  for (std::uint8_t e = 0; e < 30; ++e) every_event.push_back(e);
  write(root / "fuzz_machines" / "every-event", every_event);

  write_session_seeds(root / "fuzz_session_ledgers");
  write_stripes_seeds(root / "fuzz_session_ledgers");

  write(root / "fuzz_names_secrets" / "name", "report.pdf");
  write(root / "fuzz_names_secrets" / "name-utf8", "données-日本語.txt");
  write(root / "fuzz_names_secrets" / "secrets",
        "# id secret\nalice   correct-horse-battery\r\nbob\ts3cret\n\n");
  write(root / "fuzz_names_secrets" / "size", "16MiB");
  write(
      root / "fuzz_names_secrets" / "senders",
      "# id key subdir\nalice 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\r\n"
      "bob 00112233445566778899aabbccddeeff rig/raw\n");
  return 0;
}
