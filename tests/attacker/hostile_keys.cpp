// The command "keys" (issue 23, docs/PROTOCOL.md 7.8): a sender that tries to get past
// rdma-recv --senders without proving a listed key, each attempt on its own connection:
//
//   no-key          a version-2 Open that claims no key              -> Reject(AuthRequired)
//   version-1       a version-1 Hello                                -> Reject(UnsupportedVersion)
//                                                                       whose text names a key
//   wrong-key       the listed id, a Proof made with another key     -> Reject(AuthFailed)
//   unknown-id      an id the senders file lacks, with some key      -> Reject(AuthFailed)
//   replayed-proof  the Open and the Proof of a good exchange, sent
//                   again on a new connection                        -> Reject(AuthFailed)
//   other-nonce     the right key, over another Challenge's nonce    -> Reject(AuthFailed)
//   silent          a claim, then no Proof                           -> Error(Timeout) after
//                                                                       the receiver's --timeout
//   sealed-*, slot-overwritten: the key held, sealing asked for, the seal broken
//                   (hostile_sealed.cpp)
//   subdir-escape   authenticated as an id with a SUBDIR: Offers of "../escape.bin",
//                   "a/../../escape.bin" and "/abs.bin" get Refuse(BadName) each (the path
//                   rule, before SUBDIR is put in front), then "inside.bin" (the --size bytes
//                   of --save) is taken and verified Good: it lands in DIR/SUBDIR/inside.bin.
//
// Every Reject and Error must come with a prompt disconnect. A failed authentication makes
// the receiver refuse our address in the CM event for a while (common/crypto/auth_penalties.hpp):
// every connection here is retried while it says so, and after each failure a good exchange
// (then leaving) has the receiver forget our failures, so the penalties never add up.
//
// With --pause, the attacker stops where the caller (tests/e2e/security.sh) looks at the
// receiver: it prints "keys pause NAME [DETAILS]" and goes on at a line (or EOF) on stdin,
// or after --timeout:
//   idle            connected, nothing sent: what an idle connection costs the receiver
//   challenged      silent: the claim made and the Challenge in, the receiver waiting
//   window          subdir-escape: inside.bin taken and credited (its slots registered);
//                   DETAILS "slots=N slot_size=BYTES"
//   after-ATTEMPT   the attempt's connection is gone
// A pause in a connection the receiver ends before the caller answered is judged WRONG: the
// caller's look would not have been at what it meant to see.

#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto/auth_proof.hpp"
#include "hostile.hpp"
#include "judge.hpp"
#include "protocol/auth.hpp"
#include "protocol/sender_keys.hpp"

namespace rdmax::attacker {
namespace {

constexpr const char* kPenaltyWords = "too many failed authentications";
constexpr auto kRetryEvery = std::chrono::milliseconds(200);
constexpr auto kLongestPenalty = std::chrono::seconds(64);  // common/crypto/auth_penalties.hpp

proto::SenderKey load_key(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SetupError("cannot read the key file " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto parsed = proto::parse_key_file(text);
  if (const auto* e = std::get_if<proto::SecretsParseError>(&parsed))
    throw SetupError(path + ":" + std::to_string(e->line) + ": " + e->what);
  return std::move(std::get<proto::SenderKey>(parsed));
}

struct Context {
  const Options& o;
  const Payload& payload;
  proto::SenderKey key;                    // the legitimate sender's (--key-file)
  std::optional<proto::SenderKey> subdir;  // an id with a SUBDIR (--subdir-key-file)
  unsigned refusals = 0;                   // CM-level refusals while penalized
  double penalized_seconds = 0;            // time spent waiting them out
};

// A connection, retried while the receiver refuses our address for failed authentications.
std::unique_ptr<Peer> connect_admitted(Context& c, const std::string& label,
                                       std::size_t local_bytes = 0) {
  const auto start = Clock::now();
  const auto deadline = start + kLongestPenalty + std::chrono::seconds(c.o.timeout_s);
  bool refused = false;
  for (;;) {
    auto peer = std::make_unique<Peer>(c.o, label);
    try {
      peer->connect(local_bytes);
      if (refused) {
        const double waited = seconds_between(start, Clock::now());
        c.penalized_seconds += waited;
        note(label + ": admitted after " + format_seconds(waited) + " of refusals");
      }
      return peer;
    } catch (const ConnectRefused& e) {
      if (e.words.find(kPenaltyWords) == std::string::npos || Clock::now() > deadline) throw;
      if (!refused) note(label + ": " + e.what());
      refused = true;
      ++c.refusals;
    }
    std::this_thread::sleep_for(kRetryEvery);
  }
}

// Waits for the caller (see the top of this file) while keeping `peer`'s events handled.
void pause(const Context& c, const std::string& name, Peer* peer = nullptr) {
  if (!c.o.pause) return;
  std::printf("keys pause %s\n", name.c_str());
  std::fflush(stdout);
  const auto deadline = Clock::now() + std::chrono::seconds(c.o.timeout_s);
  for (;;) {
    pollfd in{STDIN_FILENO, POLLIN, 0};
    if (::poll(&in, 1, peer != nullptr ? 0 : 50) > 0) {
      char ch = 0;
      while (::read(STDIN_FILENO, &ch, 1) == 1 && ch != '\n') {
      }
      return;
    }
    if (Clock::now() > deadline) {
      note("pause " + name + ": no word from the caller within --timeout; going on");
      return;
    }
    if (peer != nullptr) peer->poll_for(std::chrono::milliseconds(50), [] { return false; });
  }
}

// An Open of `entries` entries (WholeFileSha256) that claims a key for `id`.
proto::Open claiming_open(const std::string& id, std::uint32_t entries = 1,
                          std::uint64_t total_bytes = 0) {
  proto::Open open;
  open.digest_algorithm = proto::DigestAlgorithm::WholeFileSha256;
  open.entry_count = entries;
  open.total_bytes = total_bytes;
  open.extensions.push_back(proto::sender_key_extension(fresh_nonce(), id));
  return open;
}

proto::Proof sender_proof(const std::string& key, const proto::Open& open,
                          const proto::Challenge& challenge) {
  return {auth_proof(proto::ProofRole::Sender, key, open, challenge)};
}

// A good exchange as `key`: Open, Challenge, Proof; the receiver's Proof (checked), Accept.
struct Admission {
  std::unique_ptr<Peer> peer;
  proto::Challenge challenge;
  proto::Proof proof;  // ours
  proto::Accept accept;
  bool receiver_proved = false;
};

Admission authenticate(Context& c, const proto::SenderKey& key, const proto::Open& open,
                       const std::string& label, std::size_t local_bytes = 0) {
  Admission a;
  a.peer = connect_admitted(c, label, local_bytes);
  a.peer->send_raw(proto::encode(open, proto::kVersion2));
  a.challenge = a.peer->expect_message<proto::Challenge>("Challenge");
  a.proof = sender_proof(key.key, open, a.challenge);
  a.peer->send(a.proof, proto::kVersion2);
  const auto theirs = a.peer->expect_message<proto::Proof>("the receiver's Proof");
  a.receiver_proved =
      same_proof(auth_proof(proto::ProofRole::Receiver, key.key, open, a.challenge), theirs.mac);
  a.accept = a.peer->expect_message<proto::Accept>("Accept");
  return a;
}

// A good exchange, then leaving: the receiver forgets our address's failures.
void forget_failures(Context& c) {
  Admission a = authenticate(c, c.key, claiming_open(c.key.id), "keys/forget-failures");
  a.peer->close();
}

bool line(const std::string& attempt, const std::string& wrong, const std::string& text) {
  std::printf("keys %s: %s: %s%s\n", attempt.c_str(), wrong.empty() ? "ok" : "WRONG", text.c_str(),
              wrong.empty() ? "" : ("; " + wrong).c_str());
  return wrong.empty();
}

bool report(const Context& c, const std::string& attempt, const Reaction& r, Expect expect,
            std::string more_wrong = {}) {
  std::string wrong = judge(c.o, r, expect);
  if (wrong.empty()) wrong = std::move(more_wrong);
  return line(attempt, wrong, describe(r));
}

// One attempt: `act` sends what it sends on a fresh connection and returns the moment the
// reaction is timed from; then the verdict, the pause after it and, when the receiver
// counted a failure against us, a good exchange that makes it forget.
using Act = std::function<Clock::time_point(Peer&)>;

bool attempt(Context& c, const std::string& name, Expect expect, const Act& act,
             bool counts_as_failure, const std::function<std::string(const Reaction&)>& more = {}) {
  bool ok = false;
  {
    auto peer = connect_admitted(c, "keys/" + name);
    const auto since = act(*peer);
    const Reaction r = observe(*peer, since, c.o);
    ok = report(c, name, r, expect, more ? more(r) : "");
  }
  pause(c, "after-" + name);
  if (counts_as_failure) forget_failures(c);
  return ok;
}

// Claims `id`, takes the Challenge and answers it with `proof_of(open, challenge)`.
Act claim_and_prove(
    const std::string& id,
    std::function<proto::Proof(const proto::Open&, const proto::Challenge&)> proof_of) {
  return [id, proof_of = std::move(proof_of)](Peer& p) {
    const proto::Open open = claiming_open(id);
    p.send(open, proto::kVersion2);
    const auto challenge = p.expect_message<proto::Challenge>("Challenge");
    p.send(proof_of(open, challenge), proto::kVersion2);
    return Clock::now();
  };
}

bool no_key(Context& c) {
  return attempt(
      c, "no-key", Expect::AuthRequired,
      [](Peer& p) {
        proto::Open open;
        open.digest_algorithm = proto::DigestAlgorithm::WholeFileSha256;
        open.entry_count = 1;
        p.send(open, proto::kVersion2);
        return Clock::now();
      },
      false);
}

bool version_1(Context& c) {
  return attempt(
      c, "version-1", Expect::VersionAnswer,
      [&](Peer& p) {
        p.send(proto::Hello{c.payload.bytes.size(), c.payload.digest, 0, "keys-version-1.bin"},
               proto::kVersion1);
        return Clock::now();
      },
      false,
      [](const Reaction& r) -> std::string {
        for (const auto& m : r.messages)
          if (const auto* j = std::get_if<proto::Reject>(&m);
              j != nullptr && j->reason == proto::RejectReason::UnsupportedVersion)
            return j->text.find("key") != std::string::npos ? "" : "the text does not name a key";
        return "no Reject(UnsupportedVersion)";
      });
}

bool wrong_key(Context& c) {
  const proto::Nonce other = fresh_nonce();  // 32 random bytes: another 256-bit key
  const std::string key(other.begin(), other.end());
  return attempt(c, "wrong-key", Expect::AuthFailed,
                 claim_and_prove(c.key.id,
                                 [key](const proto::Open& open, const proto::Challenge& ch) {
                                   return sender_proof(key, open, ch);
                                 }),
                 true);
}

bool unknown_id(Context& c) {
  return attempt(c, "unknown-id", Expect::AuthFailed,
                 claim_and_prove(c.o.unknown_id,
                                 [&](const proto::Open& open, const proto::Challenge& ch) {
                                   return sender_proof(c.key.key, open, ch);
                                 }),
                 true);
}

bool other_nonce(Context& c) {
  return attempt(c, "other-nonce", Expect::AuthFailed,
                 claim_and_prove(c.key.id,
                                 [&](const proto::Open& open, const proto::Challenge&) {
                                   return sender_proof(c.key.key, open,
                                                       proto::Challenge{fresh_nonce()});
                                 }),
                 true);
}

// A good exchange is recorded (its Open's bytes and our Proof); on a new connection the same
// bytes and the same Proof must not get in: the new Challenge's nonce is in the transcript.
bool replayed_proof(Context& c) {
  const proto::Open open = claiming_open(c.key.id);
  Admission first = authenticate(c, c.key, open, "keys/replayed-proof-original");
  const std::vector<std::uint8_t> recorded_open = proto::encode(open, proto::kVersion2);
  const proto::Proof recorded = first.proof;
  const proto::Challenge first_challenge = first.challenge;
  std::string wrong;
  if (!first.receiver_proved) wrong = "the receiver's Proof in the good exchange was wrong";
  first.peer->close();
  first.peer.reset();
  proto::Challenge second{};
  const bool ok = attempt(
      c, "replayed-proof", Expect::AuthFailed,
      [&](Peer& p) {
        p.send_raw(recorded_open);  // the bytes authenticate() sent: the encoding is canonical
        second = p.expect_message<proto::Challenge>("Challenge");
        p.send(recorded, proto::kVersion2);
        return Clock::now();
      },
      true,
      [&](const Reaction&) -> std::string {
        if (!wrong.empty()) return wrong;
        return second == first_challenge ? "the receiver sent the same Challenge nonce twice" : "";
      });
  return ok;
}

// The receiver must hold no more for a sender that claimed a key and went silent than for
// one that connected and said nothing: the caller compares the two (pauses idle and
// challenged) while the receiver waits.
bool silent(Context& c) {
  bool ok = true;
  {
    auto idle = connect_admitted(c, "keys/idle");
    pause(c, "idle", idle.get());
    ok &=
        line("idle", idle->disconnected() ? "the receiver dropped us before the caller looked" : "",
             "connected, sent nothing, and the caller looked");
    idle->close();
  }
  bool dropped_while_paused = false;
  const auto claim_then_silence = [&](Peer& p) {
    p.send(claiming_open(c.key.id), proto::kVersion2);
    (void)p.expect_message<proto::Challenge>("Challenge");
    const auto since = p.last_message_at();
    pause(c, "challenged", &p);
    dropped_while_paused = p.disconnected();
    return since;
  };
  ok &= attempt(
      c, "silent", Expect::Timeout, claim_then_silence, true, [&](const Reaction&) -> std::string {
        return dropped_while_paused ? "the receiver dropped us before the caller looked" : "";
      });
  return ok;
}

// The next answer to an Offer (Credits and Working are not answers; Credits are kept).
std::optional<proto::Message> next_answer(Peer& peer, std::vector<proto::Credit>* credits) {
  for (auto m = peer.next_message(); m; m = peer.next_message()) {
    if (const auto* credit = std::get_if<proto::Credit>(&*m)) {
      if (credits != nullptr) credits->push_back(*credit);
      continue;
    }
    if (std::holds_alternative<proto::Working>(*m)) continue;
    return m;
  }
  return std::nullopt;
}

std::string answer_text(const std::optional<proto::Message>& m, const Peer& peer) {
  return m ? Peer::describe(*m) : "nothing (" + peer.ended_how() + ")";
}

bool subdir_escape(Context& c) {
  const proto::SenderKey& key = *c.subdir;
  const std::vector<std::string> paths = {"../escape.bin", "a/../../escape.bin", "/abs.bin"};
  const auto size = c.payload.bytes.size();
  const auto entries = static_cast<std::uint32_t>(paths.size() + 1);
  Admission a =
      authenticate(c, key, claiming_open(key.id, entries, size), "keys/subdir-escape", size);
  Peer& peer = *a.peer;
  if (size == 0 || size > a.accept.slot_size)
    throw SetupError("--size must be 1.." + std::to_string(a.accept.slot_size) + " (one slot)");
  std::copy(c.payload.bytes.begin(), c.payload.bytes.end(), peer.local());
  bool ok =
      line("subdir-escape/authenticated", a.receiver_proved ? "" : "the receiver's Proof is wrong",
           "as '" + key.id + "', Accept of " + std::to_string(a.accept.slot_count) + " x " +
               std::to_string(a.accept.slot_size) + " bytes");
  Sha256 hash;
  const Digest empty_digest = hash.finish();
  std::uint32_t entry = 0;
  for (const auto& path : paths) {
    proto::Offer offer;
    offer.entry = entry;
    offer.size = 0;
    offer.mtime_sec = 946684800;
    offer.digest = empty_digest;
    offer.path = path;
    peer.send(offer, proto::kVersion2);
    const auto answer = next_answer(peer, nullptr);
    const auto* refuse = answer ? std::get_if<proto::Refuse>(&*answer) : nullptr;
    const bool right = refuse != nullptr && refuse->entry == entry &&
                       refuse->reason == proto::RejectReason::BadName;
    ok &= line("subdir-escape/" + path, right ? "" : "expected Refuse(BadName)",
               "'" + path + "' -> " + answer_text(answer, peer));
    if (!answer) return false;
    ++entry;
  }

  // An innocent file: taken, written into its slot, verified.
  proto::Offer inside;
  inside.entry = entry;
  inside.size = size;
  inside.mtime_sec = 946684800;
  inside.digest = c.payload.digest;
  inside.path = "inside.bin";
  peer.send(inside, proto::kVersion2);
  std::vector<proto::Credit> credits;
  auto answer = next_answer(peer, &credits);
  const auto* take = answer ? std::get_if<proto::Take>(&*answer) : nullptr;
  if (take == nullptr || take->entry != entry) {
    line("subdir-escape/inside.bin", "expected Take", answer_text(answer, peer));
    return false;
  }
  auto credit_of_slot_0 = [&] {
    for (const auto& credit : credits)
      if (credit.slot == 0) return true;
    for (const auto& m : peer.take_messages())
      if (const auto* credit = std::get_if<proto::Credit>(&m)) credits.push_back(*credit);
    return false;
  };
  peer.poll_for(std::chrono::seconds(c.o.timeout_s), credit_of_slot_0);
  if (!credit_of_slot_0()) throw SetupError("no Credit for slot 0 after the Take");
  pause(c,
        "window slots=" + std::to_string(a.accept.slot_count) +
            " slot_size=" + std::to_string(a.accept.slot_size),
        &peer);
  std::uint32_t rkey = 0;
  for (const auto& credit : credits)
    if (credit.slot == 0) rkey = credit.rkey;
  const auto written = peer.write(0, size, slot_addr(a.accept, 0), rkey);
  if (!written.ok()) throw SetupError("the write into slot 0 failed: " + written.describe());
  peer.send(proto::FileChunk{entry, 0, 0, static_cast<std::uint32_t>(size)}, proto::kVersion2);
  peer.send(proto::FileDone{entry, size}, proto::kVersion2);
  answer = next_answer(peer, nullptr);
  const auto* verdict = answer ? std::get_if<proto::FileVerdict>(&*answer) : nullptr;
  ok &= line(
      "subdir-escape/inside.bin",
      verdict != nullptr && verdict->code == proto::VerdictCode::Good
          ? ""
          : "expected FileVerdict(Good)",
      "'inside.bin' (" + std::to_string(size) + " bytes) -> Take, " + answer_text(answer, peer));
  peer.send(proto::Bye{}, proto::kVersion2);
  const bool gone = peer.wait_disconnected(std::chrono::seconds(c.o.timeout_s));
  ok &= line("subdir-escape/bye", gone ? "" : "the receiver did not disconnect",
             gone ? "disconnected" : "NOT disconnected");
  a.peer.reset();
  pause(c, "after-subdir-escape");
  return ok;
}

}  // namespace

int run_keys(const Options& o, const Payload& payload) {
  if (o.key_file.empty()) throw SetupError("keys needs --key-file");
  Context c{o, payload, load_key(o.key_file), std::nullopt};
  if (!o.subdir_key_file.empty()) c.subdir = load_key(o.subdir_key_file);
  if (o.unknown_id == c.key.id) throw SetupError("--unknown-id is the id of --key-file");
  bool ok = no_key(c);
  ok &= version_1(c);
  ok &= wrong_key(c);
  ok &= unknown_id(c);
  ok &= replayed_proof(c);
  ok &= other_nonce(c);
  ok &= silent(c);
  if (c.subdir) ok &= subdir_escape(c);
  ok &= run_sealed(o, payload, c.key);
  std::printf("keys: %s (%u refusals while penalized, %s waiting them out)\n", ok ? "ok" : "WRONG",
              c.refusals, format_seconds(c.penalized_seconds).c_str());
  return ok ? 0 : 1;
}

}  // namespace rdmax::attacker
