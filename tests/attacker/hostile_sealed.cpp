// The sealed attempts of the command "keys" (issue 39, docs/PROTOCOL.md 7.11): a sender that
// holds the key, asks to seal, proves it, and then breaks the seal, each attempt on its own
// connection, which the receiver must end with a sealed Error and a prompt disconnect:
//
//   sealed-altered     an Offer sealed, one byte of its box flipped  -> Error(ProtocolViolation)
//   sealed-replayed    an Offer sealed and sent, then the same bytes  -> Error(ProtocolViolation)
//   sealed-reordered   two Offers sealed, the second sent first       -> Error(ProtocolViolation)
//   sealed-in-clear    an Offer in clear after the proofs             -> Error(ProtocolViolation),
//                      in clear: nothing sealed came from us, so we may not seal at all
//   slot-overwritten   a file taken, its chunk sealed and written into slot 0, then written
//                      over with the slot's key before its FileChunk  -> Error(SealBroken), and
//                      nothing of it (nor the file) in --dir
//
// The receiver's answers are sealed: the attacker opens them with the keys it derived.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/crypto/auth_proof.hpp"
#include "common/crypto/seal.hpp"
#include "hostile.hpp"
#include "judge.hpp"
#include "protocol/auth.hpp"
#include "protocol/seal.hpp"

namespace rdmax::attacker {
namespace {

// A connection that proved `key`, asked to seal, and opened the Accept.
struct Sealed {
  std::unique_ptr<Peer> peer;
  SealKeys keys;
  std::optional<MessageSeal> seal;
  proto::Accept accept;
};

Sealed admit_sealed(const Options& o, const proto::SenderKey& key, const std::string& label,
                    std::uint32_t entries, std::uint64_t total, std::size_t local_bytes) {
  Sealed s;
  s.peer = std::make_unique<Peer>(o, label);
  s.peer->connect(local_bytes);
  proto::Open open;
  open.digest_algorithm = proto::DigestAlgorithm::WholeFileSha256;
  open.entry_count = entries;
  open.total_bytes = total;
  open.extensions.push_back(proto::sender_key_extension(fresh_nonce(), key.id));
  open.extensions.push_back(proto::seal_extension());
  s.peer->send(open, proto::kVersion2);
  const auto challenge = s.peer->expect_message<proto::Challenge>("Challenge");
  s.peer->send(proto::Proof{auth_proof(proto::ProofRole::Sender, key.key, open, challenge)},
               proto::kVersion2);
  (void)s.peer->expect_message<proto::Proof>("the receiver's Proof");
  s.keys = derive_seal_keys(key.key, transcript_hash(open, challenge));
  s.seal.emplace(s.keys.messages_to_receiver, s.keys.messages_to_sender);
  const auto sealed = s.peer->expect_message<proto::Sealed>("a sealed Accept");
  auto opened = s.seal->open(sealed);
  const auto* accept = std::get_if<proto::Message>(&opened);
  if (accept == nullptr || !std::holds_alternative<proto::Accept>(*accept))
    throw SetupError(label + ": the receiver's first sealed message is not an Accept");
  s.accept = std::get<proto::Accept>(*accept);
  return s;
}

proto::Offer offer_of(std::uint32_t entry, const std::string& path, std::uint64_t size,
                      const Digest& digest) {
  proto::Offer offer;
  offer.entry = entry;
  offer.size = size;
  offer.mtime_sec = 946684800;
  offer.digest = digest;
  offer.path = path;
  return offer;
}

// The receiver's messages from `r`, opened (what does not open is named so); an Error in
// clear taken as it is where `clear_error` (PROTOCOL.md 7.11: the answer to a peer that sent
// in clear before it sealed anything).
std::vector<proto::Message> opened(Sealed& s, const Reaction& r, std::string& unopened,
                                   bool clear_error) {
  std::vector<proto::Message> out;
  for (const auto& m : r.messages) {
    const auto* sealed = std::get_if<proto::Sealed>(&m);
    if (sealed == nullptr && clear_error && std::holds_alternative<proto::Error>(m)) {
      out.push_back(m);
      continue;
    }
    if (sealed == nullptr) {
      unopened += " a " + Peer::describe(m) + " in clear;";
      continue;
    }
    auto inner = s.seal->open(*sealed);
    if (auto* message = std::get_if<proto::Message>(&inner))
      out.push_back(std::move(*message));
    else
      unopened += " a Sealed that does not open;";
  }
  return out;
}

// One attempt's verdict: an Error of `code` among the receiver's opened answers (or, where
// `clear_error`, in clear), then a prompt disconnect.
bool verdict(const Options& o, const std::string& name, Sealed& s, Clock::time_point since,
             proto::ErrorCode code, bool clear_error = false) {
  const Reaction r = observe(*s.peer, since, o);
  std::string wrong;
  const auto messages = opened(s, r, wrong, clear_error);
  const proto::Error* error = nullptr;
  std::string seen;
  for (const auto& m : messages) {
    seen += (seen.empty() ? "" : ", ") + Peer::describe(m);
    if (const auto* e = std::get_if<proto::Error>(&m)) error = e;
  }
  if (error == nullptr || error->code != code)
    wrong += std::string(clear_error ? " expected an Error(" : " expected a sealed Error(") +
             proto::to_string(code) + ")" + (clear_error ? " in clear;" : ";");
  if (!r.disconnected) wrong += " the receiver did not disconnect;";
  std::printf("keys %s: %s: %s, %s%s\n", name.c_str(), wrong.empty() ? "ok" : "WRONG",
              seen.empty() ? "nothing opened" : seen.c_str(),
              r.disconnected ? ("disconnected after " + format_seconds(r.seconds)).c_str()
                             : "NOT disconnected",
              wrong.empty() ? "" : (";" + wrong).c_str());
  return wrong.empty();
}

const Digest kEmptySha256 = [] {
  Sha256 hash;
  return hash.finish();
}();

bool altered(const Options& o, const proto::SenderKey& key) {
  Sealed s = admit_sealed(o, key, "keys/sealed-altered", 1, 0, 0);
  proto::Sealed box = s.seal->seal(offer_of(0, "altered.bin", 0, kEmptySha256));
  box.box[box.box.size() / 2] ^= 1;
  s.peer->send(box, proto::kVersion2);
  return verdict(o, "sealed-altered", s, Clock::now(), proto::ErrorCode::ProtocolViolation);
}

bool replayed(const Options& o, const proto::SenderKey& key) {
  Sealed s = admit_sealed(o, key, "keys/sealed-replayed", 2, 0, 0);
  const proto::Sealed box = s.seal->seal(offer_of(0, "replayed.bin", 0, kEmptySha256));
  s.peer->send(box, proto::kVersion2);
  s.peer->send(box, proto::kVersion2);
  return verdict(o, "sealed-replayed", s, Clock::now(), proto::ErrorCode::ProtocolViolation);
}

bool reordered(const Options& o, const proto::SenderKey& key) {
  Sealed s = admit_sealed(o, key, "keys/sealed-reordered", 2, 0, 0);
  const proto::Sealed first = s.seal->seal(offer_of(0, "first.bin", 0, kEmptySha256));
  const proto::Sealed second = s.seal->seal(offer_of(1, "second.bin", 0, kEmptySha256));
  s.peer->send(second, proto::kVersion2);
  s.peer->send(first, proto::kVersion2);
  return verdict(o, "sealed-reordered", s, Clock::now(), proto::ErrorCode::ProtocolViolation);
}

bool in_clear(const Options& o, const proto::SenderKey& key) {
  Sealed s = admit_sealed(o, key, "keys/sealed-in-clear", 1, 0, 0);
  s.peer->send(offer_of(0, "in-clear.bin", 0, kEmptySha256), proto::kVersion2);
  return verdict(o, "sealed-in-clear", s, Clock::now(), proto::ErrorCode::ProtocolViolation, true);
}

// The next opened message that is not a Credit or a Working (Credits are kept).
std::optional<proto::Message> next_opened_answer(Sealed& s, std::vector<proto::Credit>& credits) {
  for (auto m = s.peer->next_message(); m; m = s.peer->next_message()) {
    const auto* sealed = std::get_if<proto::Sealed>(&*m);
    if (sealed == nullptr) return m;
    auto inner = s.seal->open(*sealed);
    auto* message = std::get_if<proto::Message>(&inner);
    if (message == nullptr) return std::nullopt;
    if (const auto* credit = std::get_if<proto::Credit>(message)) {
      credits.push_back(*credit);
      continue;
    }
    if (std::holds_alternative<proto::Working>(*message)) continue;
    return *message;
  }
  return std::nullopt;
}

bool slot_overwritten(const Options& o, const Payload& payload, const proto::SenderKey& key) {
  const auto size = payload.bytes.size();
  Sealed s = admit_sealed(o, key, "keys/slot-overwritten", 1, size, size);
  if (size == 0 || size > s.accept.slot_size)
    throw SetupError("--size must be 1.." + std::to_string(s.accept.slot_size) + " (one slot)");
  s.peer->send(s.seal->seal(offer_of(0, "overwritten.bin", size, payload.digest)),
               proto::kVersion2);
  std::vector<proto::Credit> credits;
  const auto answer = next_opened_answer(s, credits);
  if (!answer || !std::holds_alternative<proto::Take>(*answer))
    throw SetupError("keys/slot-overwritten: no Take for the offer");
  auto rkey_of_slot_0 = [&]() -> std::optional<std::uint32_t> {
    for (const auto& c : credits)
      if (c.slot == 0) return c.rkey;
    return std::nullopt;
  };
  // The window's keys come with the Take's Credits: wait for slot 0's.
  auto drain = [&] {
    for (const auto& m : s.peer->take_messages()) {
      const auto* sealed = std::get_if<proto::Sealed>(&m);
      if (sealed == nullptr) continue;
      auto inner = s.seal->open(*sealed);
      if (const auto* message = std::get_if<proto::Message>(&inner))
        if (const auto* credit = std::get_if<proto::Credit>(message)) credits.push_back(*credit);
    }
    return rkey_of_slot_0().has_value();
  };
  s.peer->poll_for(std::chrono::seconds(o.timeout_s), drain);
  if (!drain()) throw SetupError("keys/slot-overwritten: no Credit for slot 0 after the Take");
  // The chunk, sealed as a sender would, written into slot 0...
  std::uint8_t* local = s.peer->local();
  const auto length = static_cast<std::uint32_t>(size);  // one slot at most (above)
  const auto tag = seal_into(s.keys.chunks, 0, proto::chunk_aad(0, 0, length), payload.bytes,
                             std::span(local, size));
  const auto addr = slot_addr(s.accept, 0);
  if (const auto w = s.peer->write(0, size, addr, *rkey_of_slot_0()); !w.ok())
    throw SetupError("the write into slot 0 failed: " + w.describe());
  // ... then written over with the slot's key, before the FileChunk that names it.
  for (std::size_t i = 0; i < size; ++i) local[i] = 0x41;
  if (const auto w = s.peer->write(0, size, addr, *rkey_of_slot_0()); !w.ok())
    throw SetupError("the second write into slot 0 failed: " + w.describe());
  proto::FileChunk chunk{0, 0, 0, length, proto::ChunkSeal{0, tag}};
  s.peer->send(s.seal->seal(chunk), proto::kVersion2);
  s.peer->send(s.seal->seal(proto::FileDone{0, size}), proto::kVersion2);
  bool ok = verdict(o, "slot-overwritten", s, Clock::now(), proto::ErrorCode::SealBroken);
  if (!o.dir.empty() && std::filesystem::exists(std::filesystem::path(o.dir) / "overwritten.bin")) {
    std::printf("keys slot-overwritten/file: WRONG: overwritten.bin exists in --dir\n");
    ok = false;
  }
  return ok;
}

}  // namespace

bool run_sealed(const Options& o, const Payload& payload, const proto::SenderKey& key) {
  bool ok = altered(o, key);
  ok &= replayed(o, key);
  ok &= reordered(o, key);
  ok &= in_clear(o, key);
  ok &= slot_overwritten(o, payload, key);
  return ok;
}

}  // namespace rdmax::attacker
