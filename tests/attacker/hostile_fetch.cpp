// The hostile command "fetch": a fetcher that is not ours, against rdma-send --serve
// (docs/PROTOCOL.md 7.13). Each attempt on its own connection, judged as the other hostile
// commands judge a receiver:
//
//   a Want naming what is not a file or directory within the export  -> Reject(BadName),
//                                                                        then a disconnect
//   a message that does not decode, or is not allowed now             -> Error(ProtocolViolation),
//                                                                        then a disconnect
//
// and a fetcher that leaves mid-file. The caller (tests/e2e/fetch.sh) exports the tree it
// makes there ("data/a link" a symbolic link, "data/a fifo" a fifo, "data/nested" a
// directory, "data/many/f001" a file), then checks that the server still serves, and that
// nothing outside the export was read or written.

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "attempt.hpp"
#include "hostile.hpp"
#include "judge.hpp"

namespace rdmax::attacker {
// Named, not anonymous: the unity build (scripts/test.sh) compiles this file in one batch with
// hostile.cpp, whose anonymous namespace has names of its own.
namespace fetch_attempts {

constexpr std::size_t kHeaderVersion = 4, kHeaderSize = 16;

std::vector<std::uint8_t> encoded_v2(const proto::Message& m) {
  auto bytes = proto::encode(m, proto::kVersion2);
  if (bytes.empty()) throw std::logic_error("a well-formed message did not encode");
  return bytes;
}

proto::Fetch plain_fetch() {
  return proto::Fetch{0, 0, 1, {}};
}

// One attempt: connect, send `messages` (raw bytes each), then judge what the server did.
// `session_began`: the server may have begun the session (its Open, Offers) before it found
// the fault; only its Errors and Rejects are judged.
bool attempt(const Options& o, const std::string& name, Expect expect,
             std::vector<std::vector<std::uint8_t>> messages, bool session_began = false) {
  const AttemptAct send_them = [messages = std::move(messages)](Peer& peer) {
    for (const auto& bytes : messages) peer.send_raw(bytes);
    return Clock::now();
  };
  return attempt_on_fresh_connection(o, name, expect, send_them, 8,
                                     session_began ? Judged::RefusalsOnly : Judged::Everything);
}

// A Fetch and its Wants, the last marked.
std::vector<std::vector<std::uint8_t>> request(const std::vector<proto::Want>& wants) {
  std::vector<std::vector<std::uint8_t>> messages{encoded_v2(plain_fetch())};
  for (std::size_t i = 0; i < wants.size(); ++i) {
    proto::Want w = wants[i];
    w.last = i + 1 == wants.size();
    messages.push_back(encoded_v2(w));
  }
  return messages;
}

proto::Want want(std::string path, bool recursive = false, bool keep_path = false) {
  return proto::Want{false, recursive, std::move(path), keep_path};
}

// What no server may serve: each refused with words before anything is offered.
bool refused_names(const Options& o) {
  const std::pair<const char*, std::vector<proto::Want>> names[] = {
      {"parent", {want("../outside")}},
      {"absolute", {want("/etc/passwd")}},
      {"up-through-a-directory", {want("data/../../outside", true)}},
      {"dot-component", {want("./data", true)}},
      {"empty-component", {want("data//nested", true)}},
      {"a-link", {want("data/a link")}},
      {"through-a-link", {want("data/a link/x")}},
      {"a-fifo", {want("data/a fifo")}},
      {"directory-without-recursive", {want("data/nested")}},
      {"missing", {want("no/such/thing")}},
      {"dot-beside-another", {want(".", true), want("data", true)}},
      {"two-for-one-name", {want("data/many/f001"), want("data/many/f001")}},
      {"listed-and-recursive", {want("data/nested", true, true)}},
      {"listed-beside-its-top", {want("data/many/f001", false, true), want("data", true)}},
  };
  bool ok = true;
  for (const auto& entry : names)
    ok &= attempt(o, entry.first, Expect::BadName, request(entry.second));
  return ok;
}

// Messages a fetcher may not send, or not now.
bool out_of_place(const Options& o) {
  bool ok = true;
  proto::Want first = want("data/many/f001");
  first.last = true;
  ok &= attempt(o, "want-before-fetch", Expect::Violation, {encoded_v2(first)});
  ok &= attempt(o, "fetch-twice", Expect::Violation,
                {encoded_v2(plain_fetch()), encoded_v2(plain_fetch())});
  ok &= attempt(o, "credit-for-a-want", Expect::Violation,
                {encoded_v2(plain_fetch()), encoded_v2(proto::Credit{0, 1})});
  // A Fetch in version 1, which has no such message (BadType).
  auto v1 = encoded_v2(plain_fetch());
  v1.at(kHeaderVersion) = 1;
  ok &= attempt(o, "fetch-in-version-1", Expect::Violation, {v1});
  // A Want with a reserved flag (bit 3) set.
  auto flagged = request({want("data/many/f001")});
  flagged.back().at(kHeaderSize) |= 0x08;
  ok &= attempt(o, "want-reserved-flag", Expect::Violation, flagged);
  // A Want after the last one: the server has offered by then, and a Want is out of place.
  auto after = request({want("data/many/f001")});
  after.push_back(after.back());
  ok &= attempt(o, "want-after-the-last", Expect::Violation, after, true);
  return ok;
}

// A fetcher that asks for the whole tree and leaves as the first offers come: the server
// frees its session (the caller then fetches from it).
bool leaves_mid_file(const Options& o) {
  Peer peer(o, "fetch/leaves-mid-file");
  peer.connect(0);
  for (const auto& bytes : request({want("data", true)})) peer.send_raw(bytes);
  const auto first = peer.next_message();
  peer.close();
  const bool ok = first && std::holds_alternative<proto::Open>(*first);
  std::printf("hostile fetch/leaves-mid-file: %s: %s, then left\n", ok ? "ok" : "WRONG",
              first ? Peer::describe(*first).c_str() : "no answer");
  return ok;
}

}  // namespace fetch_attempts

bool hostile_fetch(const Options& o, const Payload&) {
  bool ok = fetch_attempts::refused_names(o);
  ok &= fetch_attempts::out_of_place(o);
  ok &= fetch_attempts::leaves_mid_file(o);
  return ok;
}

}  // namespace rdmax::attacker
