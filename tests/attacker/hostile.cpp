// Hostile-protocol commands: each makes one or more attempts, every attempt on its own
// connection, and judges the receiver's reaction against docs/PROTOCOL.md:
//
//   a message that does not decode, or is not allowed now  -> Error(ProtocolViolation),
//                                                             then a disconnect (2, 4.5)
//   a foreign version in place of the Hello                -> Reject(UnsupportedVersion) (2);
//                                                             Error(ProtocolViolation) is
//                                                             reported but accepted
//   a Chunk that breaks the data rules                     -> the same, and no file (5.4)
//   silence                                                -> Error(Timeout) after the
//                                                             receiver's --timeout (4.4)
//
// and, with --dir, that nothing named after this command (file or temporary) is left in
// the receiver's directory.

#include "hostile.hpp"
#include "attempt.hpp"
#include "judge.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>

namespace rdmax::attacker {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitWrong = 1;

// ---------------------------------------------------------------------------------
// Building malformed messages
// ---------------------------------------------------------------------------------
std::vector<std::uint8_t> random_bytes(std::size_t n) {
  static std::mt19937_64 random(std::random_device{}());
  std::vector<std::uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(random());
  // Never the rdmax magic by accident.
  if (n >= 1) bytes[0] = static_cast<std::uint8_t>(bytes[0] == 0x52 ? 0x53 : bytes[0]);
  return bytes;
}

void put_le(std::vector<std::uint8_t>& bytes, std::size_t offset, std::uint64_t value,
            std::size_t width) {
  for (std::size_t i = 0; i < width; ++i)
    bytes.at(offset + i) = static_cast<std::uint8_t>(value >> (8 * i));
}

std::vector<std::uint8_t> encoded(const proto::Message& m) {
  auto bytes = proto::encode(m, proto::kVersion1);
  if (bytes.empty()) throw std::logic_error("a well-formed message did not encode");
  return bytes;
}

std::string attempt_name(const Options& o, const std::string& attempt) {
  return o.tag + "-" + o.command + "-" + attempt + ".bin";
}

proto::Hello hello_for(const Payload& p, const std::string& name) {
  return proto::Hello{p.bytes.size(), p.digest, 0, name};
}

constexpr std::size_t kHeaderVersion = 4, kHeaderLength = 8, kHelloNameLen = 16 + 44;

AttemptAct send_raw_now(std::vector<std::uint8_t> bytes) {
  return [bytes = std::move(bytes)](Peer& p) {
    p.send_raw(bytes);
    return Clock::now();
  };
}

// ---------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------
bool hostile_garbage(const Options& o, const Payload&) {
  bool ok = true;
  for (std::size_t n : {std::size_t{100}, std::size_t{4096}})
    ok &= attempt_on_fresh_connection(o, "random-" + std::to_string(n), Expect::Violation,
                                      send_raw_now(random_bytes(n)));
  ok &= attempt_on_fresh_connection(o, "short-5", Expect::Violation, send_raw_now(random_bytes(5)));
  auto framed = random_bytes(64);
  put_le(framed, 0, proto::kMagic, 4);
  put_le(framed, kHeaderVersion, proto::kVersion1, 2);
  ok &= attempt_on_fresh_connection(o, "magic-v1-then-random", Expect::Violation,
                                    send_raw_now(framed));
  // Longer than every RECV buffer (4096): the receive fails at the receiver, which can
  // only drop the connection.
  ok &= attempt_on_fresh_connection(o, "oversized-6000", Expect::Disconnect,
                                    send_raw_now(random_bytes(6000)));
  // A SEND of no bytes is a message of 0 bytes: too short for a header (PROTOCOL.md 2).
  ok &= attempt_on_fresh_connection(o, "empty-send", Expect::Violation, send_raw_now({}));
  return ok;
}

bool hostile_wrong_version(const Options& o, const Payload& p) {
  // Versions 1 and 2 are spoken; 3 is not (yet).
  auto bytes = encoded(hello_for(p, attempt_name(o, "hello-v3")));
  put_le(bytes, kHeaderVersion, 3, 2);
  bool ok = attempt_on_fresh_connection(o, "hello-v3", Expect::VersionAnswer, send_raw_now(bytes));
  // A version-1 Hello labelled version 2 does not have the version-2 layout.
  auto mislabelled = encoded(hello_for(p, attempt_name(o, "hello-v1-as-v2")));
  put_le(mislabelled, kHeaderVersion, 2, 2);
  ok &= attempt_on_fresh_connection(o, "hello-v1-as-v2", Expect::Violation,
                                    send_raw_now(mislabelled));
  return ok;
}

bool hostile_lying_length(const Options& o, const Payload& p) {
  struct Lie {
    const char* attempt;
    std::size_t offset;
    std::int64_t delta;   // added to the field, or...
    std::uint64_t value;  // ...this value when delta is 0
    std::size_t width;
  };
  const Lie lies[] = {
      {"payload-length+16", kHeaderLength, 16, 0, 4},
      {"payload-length-4", kHeaderLength, -4, 0, 4},
      {"payload-length-huge", kHeaderLength, 0, 0xFFFFFFF0u, 4},
      {"name-len+10", kHelloNameLen, 10, 0, 2},
      {"name-len-2", kHelloNameLen, -2, 0, 2},
  };
  // name_len 0 and 256 with the bytes to match: the length is a static rule of the
  // decoder, so this is a violation, not Reject(BadName) (PROTOCOL.md 3.1).
  bool ok_names = true;
  for (std::size_t length : {std::size_t{0}, std::size_t{256}}) {
    auto bytes = encoded(hello_for(p, "x"));
    bytes.resize(bytes.size() - 1);
    bytes.insert(bytes.end(), length, 'n');
    put_le(bytes, kHelloNameLen, length, 2);
    put_le(bytes, kHeaderLength, bytes.size() - 16, 4);
    ok_names &= attempt_on_fresh_connection(o, "name-len-" + std::to_string(length),
                                            Expect::Violation, send_raw_now(bytes));
  }
  bool ok = true;
  for (const Lie& lie : lies) {
    auto bytes = encoded(hello_for(p, attempt_name(o, lie.attempt)));
    std::uint64_t field = 0;
    for (std::size_t i = 0; i < lie.width; ++i)
      field |= static_cast<std::uint64_t>(bytes[lie.offset + i]) << (8 * i);
    put_le(bytes, lie.offset,
           lie.delta != 0 ? static_cast<std::uint64_t>(static_cast<std::int64_t>(field) + lie.delta)
                          : lie.value,
           lie.width);
    ok &= attempt_on_fresh_connection(o, lie.attempt, Expect::Violation, send_raw_now(bytes));
  }
  return ok && ok_names;
}

// Hello names a file may not have (docs/SECURITY.md, PROTOCOL.md 3.1): each is refused
// with Reject(BadName), before anything is created. rdma-send refuses them itself (its
// --name is checked locally), so only a hostile sender can bring them to the receiver.
bool hostile_names(const Options& o, const Payload& p) {
  const std::pair<const char*, std::string> names[] = {{"dot", "."},
                                                       {"dotdot", ".."},
                                                       {"parent", "../x"},
                                                       {"absolute", "/etc/passwd"},
                                                       {"through-parent", "a/../b"},
                                                       {"slash", "a/b"},
                                                       {"control", "ctl\x01x"},
                                                       {"newline", "new\nline"},
                                                       {"delete", "del\x7f"},
                                                       {"escape", "esc\x1b[2J"},
                                                       {"reserved", ".rdmax-partial"}};
  bool ok = true;
  for (const auto& entry : names) {
    // Not a structured binding: a lambda may not capture one before C++20's P1091 fix,
    // which clang 14 (the sanitizer builds' compiler) lacks.
    const std::string& name = entry.second;
    ok &= attempt_on_fresh_connection(o, entry.first, Expect::BadName, [&](Peer& peer) {
      peer.send(hello_for(p, name));
      return Clock::now();
    });
  }
  return ok;
}

// An attempt after a good Hello, its Accept and first Credits: `act` does the rest.
using SessionAct = std::function<void(Session&)>;

bool attempt_in_session(const Options& o, const Payload& p, const std::string& attempt,
                        const SessionAct& act) {
  Session s = open_session(o, p, attempt_name(o, attempt));
  act(s);
  const auto since = Clock::now();
  return report(o, attempt, observe(*s.peer, since, o), Expect::Violation);
}

bool hostile_out_of_order(const Options& o, const Payload& p) {
  auto send_now = [](proto::Message m) {
    return [m = std::move(m)](Peer& peer) {
      peer.send(m);
      return Clock::now();
    };
  };
  bool ok = true;
  ok &= attempt_on_fresh_connection(o, "chunk-before-hello", Expect::Violation,
                                    send_now(proto::Chunk{0, 4096, 0}));
  ok &= attempt_on_fresh_connection(o, "done-before-hello", Expect::Violation,
                                    send_now(proto::Done{0}));
  ok &= attempt_on_fresh_connection(o, "id-before-hello", Expect::Violation,
                                    send_now(proto::Id{"alice"}));
  ok &= attempt_on_fresh_connection(o, "accept-from-sender", Expect::Violation,
                                    send_now(proto::Accept{0x10000, 0, 4096, 1}));
  ok &= attempt_in_session(o, p, "id-before-done",
                           [](Session& s) { s.peer->send(proto::Id{"alice"}); });
  ok &= attempt_in_session(o, p, "second-hello", [&](Session& s) {
    s.peer->send(hello_for(p, attempt_name(o, "second-hello")));
  });
  ok &= attempt_in_session(o, p, "bye-before-done", [](Session& s) { s.peer->send(proto::Bye{}); });
  return ok;
}

bool hostile_bad_chunk(const Options& o, const Payload& p) {
  bool ok = true;
  // Each writes chunk 0's bytes into slot 0 (a legitimate write) and then lies about it.
  auto lie_about_chunk0 = [&](const std::string& attempt,
                              std::function<proto::Chunk(const Session&)> chunk) {
    ok &= attempt_in_session(o, p, attempt, [&](Session& s) {
      const std::uint32_t len0 =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(s.accept.slot_size, p.bytes.size()));
      auto r = s.peer->write(0, len0, slot_addr(s.accept, 0), s.slot_rkey[0]);
      if (!r.ok()) throw SetupError("a legitimate chunk write failed: " + r.describe());
      s.peer->send(chunk(s));
    });
  };
  auto first_length = [&](const Session& s) {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(s.accept.slot_size, p.bytes.size()));
  };
  lie_about_chunk0("wrong-offset", [&](const Session& s) {
    if (p.bytes.size() <= s.accept.slot_size) throw SetupError("--size must exceed one slot");
    const std::uint64_t offset = s.accept.slot_size;  // as if chunk 0 had been skipped
    return proto::Chunk{offset,
                        static_cast<std::uint32_t>(
                            std::min<std::uint64_t>(s.accept.slot_size, p.bytes.size() - offset)),
                        0};
  });
  lie_about_chunk0("slot-out-of-range", [&](const Session& s) {
    return proto::Chunk{0, first_length(s), s.accept.slot_count};
  });
  lie_about_chunk0("slot-0xffffffff", [&](const Session& s) {
    return proto::Chunk{0, first_length(s), 0xFFFFFFFFu};
  });
  lie_about_chunk0("length-zero", [&](const Session&) { return proto::Chunk{0, 0, 0}; });
  lie_about_chunk0("length-past-slot", [&](const Session& s) {
    return proto::Chunk{0, s.accept.slot_size + 4096, 0};
  });
  // Every chunk but the last as it should be; the last claims a whole slot, past the end.
  ok &= attempt_in_session(o, p, "length-past-end", [&](Session& s) {
    const std::uint64_t size = p.bytes.size(), slot = s.accept.slot_size;
    if (size % slot == 0) throw SetupError("--size must not be a multiple of the slot size");
    const std::uint64_t chunks = (size + slot - 1) / slot;
    for (std::uint64_t i = 0; i + 1 < chunks; ++i) {
      const auto k = static_cast<std::uint32_t>(i % s.accept.slot_count);
      write_chunk(s, i, k, size);
      (void)take_credit(s, k);
    }
    const auto k = static_cast<std::uint32_t>((chunks - 1) % s.accept.slot_count);
    const std::uint64_t offset = (chunks - 1) * slot;
    auto r = s.peer->write(offset, size - offset, slot_addr(s.accept, k), s.slot_rkey[k]);
    if (!r.ok()) throw SetupError("a legitimate chunk write failed: " + r.describe());
    s.peer->send(proto::Chunk{offset, static_cast<std::uint32_t>(slot), k});
  });
  // An empty file: Accept announces a slot, but no Credit ever comes for it.
  Payload empty;
  Sha256 hash;
  empty.digest = hash.finish();
  ok &= attempt_in_session(o, empty, "empty-file-uncredited-slot", [](Session& s) {
    s.peer->send(proto::Chunk{0, 1, 0});
  });
  return ok;
}

bool hostile_hello_then_silence(const Options& o, const Payload& p) {
  const std::string attempt = "silence-after-accept";
  Session s = open_session(o, p, attempt_name(o, attempt));
  const auto since = Clock::now();  // Accept and the first Credits are in
  return report(o, attempt, observe(*s.peer, since, o), Expect::Timeout);
}

bool hostile_idle(const Options& o, const Payload&) {
  const int count = o.count.value_or(1);
  if (count == 1)
    return attempt_on_fresh_connection(o, "no-hello", Expect::Timeout,
                                       [](Peer& p) { return p.established_at(); });
  std::vector<std::unique_ptr<Peer>> peers;
  std::vector<Peer*> all;
  for (int i = 0; i < count; ++i) {
    peers.push_back(std::make_unique<Peer>(o, "idle-" + std::to_string(i + 1)));
    peers.back()->connect(0);
    all.push_back(peers.back().get());
  }
  const auto connected = Clock::now();
  note(std::to_string(count) + " idle connections open");
  Peer::wait_all_disconnected(
      all, connected + std::chrono::seconds(o.receiver_timeout_s + o.slack_s + 1));
  std::vector<std::string> wrong;
  double fastest = 1e9, slowest = 0;
  for (Peer* peer : all) {
    Reaction r;
    r.messages = peer->take_messages();
    r.disconnected = peer->disconnected();
    r.seconds = seconds_between(peer->established_at(),
                                r.disconnected ? peer->disconnected_at() : Clock::now());
    if (peer->qp_failed()) r.our_qp = peer->first_error();
    if (auto why = judge(o, r, Expect::Timeout); !why.empty())
      wrong.push_back(peer->label() + ": " + describe(r) + "; " + why);
    fastest = std::min(fastest, r.seconds);
    slowest = std::max(slowest, r.seconds);
  }
  const std::string dir = dir_check(o);
  if (!dir.empty()) wrong.push_back(dir);
  for (const auto& w : wrong) std::printf("hostile idle/%s\n", w.c_str());
  std::printf(
      "hostile idle/%d-connections: %s: %d of %d got Error(Timeout) and were disconnected "
      "%s-%s after connecting%s\n",
      count, wrong.empty() ? "ok" : "WRONG", count - static_cast<int>(wrong.size()), count,
      format_seconds(fastest).c_str(), format_seconds(slowest).c_str(),
      o.dir.empty() ? "; --dir not checked" : "");
  return wrong.empty();
}

// `count` messages back to back, far more than the receiver keeps RECVs posted (slots + a
// few): once straight after connecting, once after a good Hello (a window and a temporary
// exist then). The receiver must answer the first with Error(ProtocolViolation), drop the
// rest, disconnect, and survive; our sends beyond that fail (flushed, RNR): fine.
bool flood_once(const Options& o, const Payload& p, bool hello_first) {
  const int count = o.count.value_or(200);
  const auto bye = encoded(proto::Bye{});
  const std::string attempt =
      (hello_first ? "hello-then-" : "") + std::to_string(count) + "-byes-and-garbage";
  Peer peer(o, o.command + "/" + attempt, static_cast<std::uint32_t>(count));
  peer.connect(0);
  if (hello_first) peer.send(hello_for(p, attempt_name(o, attempt)));
  int posted = 0;
  try {
    for (; posted < count; ++posted)
      peer.send_raw(posted % 2 == 0 ? std::span<const std::uint8_t>(bye)
                                    : std::span<const std::uint8_t>(random_bytes(64)));
  } catch (const std::exception& e) {
    // The receiver may drop us in the middle: what was posted is the flood.
    note("flood stopped after " + std::to_string(posted) + " messages: " + e.what());
  }
  const auto since = Clock::now();
  Reaction r = observe(peer, since, o);
  if (hello_first) {
    // The answer to the Hello (sent before the flood reached the receiver) is no reaction.
    std::erase_if(r.messages, [](const proto::Message& m) {
      return std::holds_alternative<proto::Accept>(m) || std::holds_alternative<proto::Credit>(m);
    });
  }
  const bool ok = report(o, attempt, r, Expect::Violation);
  // Our disconnect flushes what the receiver never took, so the counts below are final.
  peer.close();
  peer.poll_for(std::chrono::seconds(2), [&] {
    return peer.raw_sends_ok() + peer.raw_sends_failed() >= static_cast<unsigned>(posted);
  });
  note("flood: " + std::to_string(posted) + " posted, " + std::to_string(peer.raw_sends_ok()) +
       " taken by the receiver, " + std::to_string(peer.raw_sends_failed()) + " failed" +
       (peer.qp_failed() ? " (first: " + peer.first_error() + ")" : ""));
  return ok;
}

bool hostile_flood(const Options& o, const Payload& p) {
  bool ok = flood_once(o, p, false);
  ok &= flood_once(o, p, true);
  return ok;
}

struct Command {
  const char* name;
  bool (*run)(const Options&, const Payload&);
};
const Command kCommands[] = {
    {"garbage", hostile_garbage},
    {"wrong-version", hostile_wrong_version},
    {"lying-length", hostile_lying_length},
    {"out-of-order", hostile_out_of_order},
    {"bad-chunk", hostile_bad_chunk},
    {"hello-then-silence", hostile_hello_then_silence},
    {"idle", hostile_idle},
    {"flood", hostile_flood},
    {"paths", hostile_paths},
    {"names", hostile_names},
    {"fetch", hostile_fetch},
};

}  // namespace

const std::vector<std::string>& hostile_commands() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& c : kCommands) n.push_back(c.name);
    return n;
  }();
  return names;
}

bool is_hostile_command(const std::string& command) {
  const auto& names = hostile_commands();
  return std::find(names.begin(), names.end(), command) != names.end();
}

int run_hostile(const Options& o, const Payload& payload) {
  for (const auto& c : kCommands) {
    if (o.command != c.name) continue;
    const bool ok = c.run(o, payload);
    std::printf("hostile %s: %s\n", c.name, ok ? "ok" : "WRONG");
    return ok ? kExitOk : kExitWrong;
  }
  throw SetupError("unknown hostile command " + o.command);
}

}  // namespace rdmax::attacker
