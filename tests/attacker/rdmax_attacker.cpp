// rdmax-attacker: a hostile rdmax sender for the security tests (docs/SECURITY.md) and
// the hostile-protocol tests (tests/e2e/hostile.sh).
//
// It connects to rdma-recv with real verbs through rdma_cm, speaks the protocol well
// enough to be accepted (Hello with the correct SHA-256 of a file it generates), and then
// tries one RDMA WRITE the receiver must refuse, or guesses ids. It is deliberately
// sequential: every wait polls with a bound, no event loop.
//
// Output: one line on stdout per run, "attack NAME: refused (STATUS)" (exit 0) or
// "attack NAME: SUCCEEDED ..." (exit 1); details of each step go to stderr. Exit 2 is a
// usage error, 3 means the attack could not be set up (no connection, the receiver
// rejected the offer, a control write that should have worked failed, a timeout).
//
// Every attack write is preceded by a control write on the same queue pair with a key
// that is valid (or by a whole good transfer), so "refused" means refused because of
// the key or the address, not because this peer is broken.
//
// The hostile-protocol commands (garbage, wrong-version, ...) are in hostile.cpp; they
// print "hostile NAME/ATTEMPT: ok|WRONG: ..." per attempt and "hostile NAME: ok|WRONG"
// last, with the same exit statuses (0: the receiver reacted as it must). The command
// "keys" (hostile_keys.cpp) does the same for rdma-recv --senders: "keys ATTEMPT: ok|WRONG:
// ..." per attempt, "keys: ok|WRONG (...)" last.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hostile.hpp"
#include "peer.hpp"

namespace rdmax::attacker {
namespace {

constexpr int kExitRefused = 0;
constexpr int kExitSucceeded = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSetup = 3;
constexpr std::size_t kProbeBytes = 64;  // size of an attack write

// A whole good transfer, one chunk at a time; returns after Verdict(Good).
void complete_transfer(Session& s, const Payload& payload) {
  const std::uint64_t size = payload.bytes.size();
  const std::uint64_t chunks = (size + s.accept.slot_size - 1) / s.accept.slot_size;
  for (std::uint64_t i = 0; i < chunks; ++i) {
    const auto slot = static_cast<std::uint32_t>(i % s.accept.slot_count);
    write_chunk(s, i, slot, size);
    // The receiver returns no slot after the last chunk (docs/PROTOCOL.md 5.4).
    if (i + 1 < chunks) (void)take_credit(s, slot);
  }
  s.peer->send(proto::Done{size});
  auto m = s.peer->next_message();
  // Trailing Credits (an older receiver credits the last chunk too) are not the answer.
  while (m && std::holds_alternative<proto::Credit>(*m)) m = s.peer->next_message();
  if (!m || !std::holds_alternative<proto::Verdict>(*m)) throw SetupError("no Verdict after Done");
  const auto& v = std::get<proto::Verdict>(*m);
  if (v.code != proto::VerdictCode::Good)
    throw SetupError(std::string("verdict ") + proto::to_string(v.code));
  note("verdict Good");
}

// Control: an in-bounds write with the key the receiver gave must succeed.
void control_write(Session& s, std::uint32_t slot) {
  auto r = s.peer->write(0, kProbeBytes, slot_addr(s.accept, slot), s.slot_rkey[slot]);
  if (!r.ok()) throw SetupError("control write with a valid key failed: " + r.describe());
  note("control write to slot " + std::to_string(slot) + " with its key: success");
}

// Reports one attack write: refused (exit 0) or succeeded (exit 1).
struct Verdicts {
  std::vector<std::string> refused;
  std::vector<std::string> succeeded;
  void add(const std::string& what, const WriteResult& r) {
    note(what + ": " + r.describe());
    (r.ok() ? succeeded : refused).push_back(what + ": " + r.describe());
  }
};

std::string file_name(const Options& o, const std::string& suffix) {
  return o.tag + "-" + o.command + suffix + ".bin";
}

// ---------------------------------------------------------------------------------
// Attacks
// ---------------------------------------------------------------------------------
void attack_write_after_verdict(const Options& o, const Payload& p, Verdicts& v) {
  Session s = open_session(o, p, file_name(o, ""));
  complete_transfer(s, p);
  // Prefer a slot whose credit this peer still holds: a key it was given and never used,
  // which only the end of the data phase can have revoked. Otherwise the last slot used.
  std::uint32_t slot = 0;
  bool held = false;
  for (std::uint32_t i = 0; i < s.accept.slot_count && !held; ++i) {
    if (s.held[i]) {
      slot = i;
      held = true;
    }
  }
  if (!held) {
    const std::uint64_t chunks = (p.bytes.size() + s.accept.slot_size - 1) / s.accept.slot_size;
    slot = static_cast<std::uint32_t>((chunks - 1) % s.accept.slot_count);
  }
  v.add("write to slot " + std::to_string(slot) + " after Verdict with " +
            (held ? "its unused credited key" : "the key of the last chunk"),
        s.peer->write(0, kProbeBytes, slot_addr(s.accept, slot), s.slot_rkey[slot]));
}

void attack_write_past_window(const Options& o, const Payload& p, Verdicts& v) {
  {
    Session s = open_session(o, p, file_name(o, "-1"));
    const std::uint32_t last = s.accept.slot_count - 1;
    control_write(s, last);
    const std::uint64_t end = slot_addr(s.accept, s.accept.slot_count);
    v.add("write at the window's end", s.peer->write(0, kProbeBytes, end, s.slot_rkey[last]));
  }
  // The refused write killed that queue pair: the straddling write needs a new one.
  Session s = open_session(o, p, file_name(o, "-2"));
  const std::uint32_t last = s.accept.slot_count - 1;
  control_write(s, last);
  const std::uint64_t end = slot_addr(s.accept, s.accept.slot_count);
  v.add("write straddling the window's end",
        s.peer->write(0, 2 * kProbeBytes, end - kProbeBytes, s.slot_rkey[last]));
}

void attack_stale_slot_key(const Options& o, const Payload& p, Verdicts& v) {
  if (p.bytes.size() == 0) throw SetupError("--size must be > 0 for this attack");
  Session s = open_session(o, p, file_name(o, ""));
  write_chunk(s, 0, 0, p.bytes.size());
  // The Credit proves the receiver consumed slot 0; the key it replaced must be dead.
  const std::uint32_t old = take_credit(s, 0);
  if (old == s.slot_rkey[0]) note("the Credit repeats the old rkey: it was never revoked");
  v.add("write to slot 0 with its old rkey after its Credit",
        s.peer->write(0, kProbeBytes, slot_addr(s.accept, 0), old));
}

void attack_cross_connection_key(const Options& o, const Payload& p, Verdicts& v) {
  Session a = open_session(o, p, file_name(o, "-a"));
  Session b = open_session(o, p, file_name(o, "-b"));
  control_write(a, 0);
  v.add("B's rkey and address on A's queue pair",
        a.peer->write(0, kProbeBytes, slot_addr(b.accept, 0), b.slot_rkey[0]));
}

void attack_key_after_reconnect(const Options& o, const Payload& p, Verdicts& v) {
  proto::Accept first;
  std::uint32_t first_rkey = 0;
  {
    Session s = open_session(o, p, file_name(o, "-1"));
    first = s.accept;
    first_rkey = s.slot_rkey[0];
    s.peer->close();
  }
  Session s = open_session(o, p, file_name(o, "-2"));
  control_write(s, 0);
  v.add("the first connection's slot 0 rkey and address on the second",
        s.peer->write(0, kProbeBytes, first.region_addr, first_rkey));
}

// After a good verdict, unknown ids until the receiver gives up. Returns the exit status.
int attack_id_guess(const Options& o, const Payload& p) {
  Session s = open_session(o, p, file_name(o, ""));
  complete_transfer(s, p);
  std::vector<unsigned> left;
  bool secret = false;
  for (int attempt = 1; attempt <= 5; ++attempt) {
    s.peer->send(proto::Id{"guess-" + std::to_string(attempt)});
    auto m = s.peer->next_message();
    if (!m) break;
    if (auto* d = std::get_if<proto::Denied>(&*m)) {
      left.push_back(d->attempts_left);
      note("Id guess-" + std::to_string(attempt) + ": Denied, attempts_left " +
           std::to_string(d->attempts_left));
      if (d->attempts_left == 0) break;
    } else if (std::get_if<proto::Secret>(&*m)) {
      secret = true;
      break;
    } else {
      note(std::string("Id answered with ") + proto::to_string(proto::type_of(*m)));
      break;
    }
  }
  const bool disconnected = s.peer->wait_disconnected(std::chrono::seconds(o.timeout_s));
  std::string counts;
  for (unsigned n : left) counts += (counts.empty() ? "" : " ") + std::to_string(n);
  const std::string summary = std::to_string(left.size()) + " attempts, attempts_left " +
                              (counts.empty() ? "none" : counts) +
                              (disconnected ? ", then disconnected" : ", NOT disconnected");
  if (secret) {
    std::printf("attack id-guess: SUCCEEDED (a guessed id got a secret; %s)\n", summary.c_str());
    return kExitSucceeded;
  }
  const bool refused = left == std::vector<unsigned>{2, 1, 0} && disconnected;
  std::printf("attack id-guess: %s (%s)\n", refused ? "refused" : "SUCCEEDED", summary.c_str());
  return refused ? kExitRefused : kExitSucceeded;
}

int run(const Options& o) {
  const Payload payload = make_payload(o);
  if (is_hostile_command(o.command)) return run_hostile(o, payload);
  if (o.command == "keys") return run_keys(o, payload);
  if (o.command == "id-guess") return attack_id_guess(o, payload);
  Verdicts v;
  if (o.command == "write-after-verdict") attack_write_after_verdict(o, payload, v);
  if (o.command == "write-past-window") attack_write_past_window(o, payload, v);
  if (o.command == "stale-slot-key") attack_stale_slot_key(o, payload, v);
  if (o.command == "cross-connection-key") attack_cross_connection_key(o, payload, v);
  if (o.command == "key-after-reconnect") attack_key_after_reconnect(o, payload, v);
  auto join = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& part : parts) s += (s.empty() ? "" : "; ") + part;
    return s;
  };
  if (!v.succeeded.empty()) {
    std::printf("attack %s: SUCCEEDED (%s)\n", o.command.c_str(), join(v.succeeded).c_str());
    return kExitSucceeded;
  }
  std::printf("attack %s: refused (%s)\n", o.command.c_str(), join(v.refused).c_str());
  return kExitRefused;
}

}  // namespace
}  // namespace rdmax::attacker

int main(int argc, char** argv) {
  using namespace rdmax::attacker;
  Options o;
  CLI::App app{"rdmax-attacker: a hostile rdmax sender for the security and hostile tests"};
  std::vector<std::string> commands = {"write-after-verdict",
                                       "write-past-window",
                                       "stale-slot-key",
                                       "cross-connection-key",
                                       "key-after-reconnect",
                                       "id-guess",
                                       "keys"};
  for (const auto& c : hostile_commands()) commands.push_back(c);
  app.add_option("command", o.command, "the attack")->required()->check(CLI::IsMember(commands));
  app.add_option("-H,--host", o.host, "receiver address")->required();
  app.add_option("-p,--port", o.port, "receiver port");
  app.add_option("--timeout", o.timeout_s, "bound on every wait, seconds")
      ->check(CLI::Range(1, 600));
  app.add_option("--size", o.size, "size of the generated file offered in Hello")
      ->check(CLI::Range(1, 64 << 20));
  app.add_option("--tag", o.tag, "prefix of the file names offered (TAG-COMMAND[-n].bin)");
  app.add_option("--save", o.save, "also write the generated file here");
  app.add_option("--receiver-timeout", o.receiver_timeout_s,
                 "the receiver's --timeout, seconds (hostile commands)")
      ->check(CLI::Range(1, 600));
  app.add_option("--slack", o.slack_s,
                 "how many seconds after its timeout the receiver may still react")
      ->check(CLI::Range(0, 600));
  app.add_option("--count", o.count, "idle: connections at once; flood: messages sent")
      ->check(CLI::Range(1, 4096));
  app.add_option("--dir", o.dir,
                 "the receiver's --dir: check that no file or temporary of ours is left there");
  app.add_option("--key-file", o.key_file,
                 "keys: the legitimate sender's key file (one 'ID KEY' line)");
  app.add_option("--subdir-key-file", o.subdir_key_file,
                 "keys: the key file of an id whose senders-file line has a SUBDIR");
  app.add_option("--unknown-id", o.unknown_id, "keys: an id the receiver does not know")
      ->capture_default_str();
  app.add_flag("--pause", o.pause,
               "keys: print 'keys pause NAME' where the caller may look at the receiver, and "
               "wait for a line on stdin");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // "hostile NAME: ...", "attack NAME: ...", "keys: ..." (the command is its own prefix).
  const std::string prefix = is_hostile_command(o.command) ? "hostile " + o.command
                             : o.command == "keys"         ? o.command
                                                           : "attack " + o.command;
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::printf("%s: not carried out (%s)\n", prefix.c_str(), e.what());
    return kExitSetup;
  }
}
