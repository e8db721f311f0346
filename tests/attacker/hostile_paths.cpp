// The hostile command "paths": a version-2 session (docs/PROTOCOL.md 7.5) whose Offers name
// paths that try to leave the receiver's --dir. Each must get Refuse (BadName where the
// path rule or the walk beneath --dir decides), the session must go on, and a legitimate
// entry offered last must still arrive; a path longer than the protocol allows breaks a
// static rule and gets Error(ProtocolViolation). The caller (tests/e2e/hostile.sh) plants
// in --dir a symbolic link "planted-link" to a directory outside it and a regular file
// "plain-file", and afterwards checks that nothing outside --dir was created or changed.

#include <cstdio>
#include <string>
#include <vector>

#include "hostile.hpp"

namespace rdmax::attacker {
namespace {

constexpr auto kAnyRefusal = static_cast<proto::RejectReason>(0);

struct HostilePath {
  const char* what;
  proto::EntryKind kind;
  std::string path;
  proto::RejectReason expected;  // kAnyRefusal: any reason, as long as it is refused
};

std::vector<HostilePath> hostile_paths(const std::string& tag) {
  using K = proto::EntryKind;
  using R = proto::RejectReason;
  std::string components;
  for (int i = 0; i < 257; ++i) components += (i == 0 ? "" : "/") + std::string("c");
  return {
      {"dot-dot", K::File, "../" + tag + "-escape", R::BadName},
      {"absolute", K::File, "/tmp/" + tag + "-absolute", R::BadName},
      {"up-through-a-directory", K::File, "a/../../" + tag + "-b", R::BadName},
      {"dot-dot-alone", K::Directory, "..", R::BadName},
      {"dot", K::File, "./" + tag + "-dot", R::BadName},
      {"empty-component", K::File, "a//" + tag + "-b", R::BadName},
      {"trailing-slash", K::Directory, tag + "-dir/", R::BadName},
      {"slash-alone", K::Directory, "/", R::BadName},
      {"backslash", K::File, "a\\..\\" + tag + "-b", R::BadName},
      {"component-of-256-bytes", K::File, std::string(256, 'n'), R::BadName},
      {"257-components", K::File, components, R::BadName},
      {"through-a-file", K::File, "plain-file/" + tag + "-x", R::BadName},
      {"through-a-planted-link", K::File, "planted-link/" + tag + "-x", R::BadName},
      {"directory-through-a-planted-link", K::Directory, "planted-link/" + tag + "-dir",
       R::BadName},
      // The link itself as the entry: neither replaced as a file nor, as a directory, given
      // a mode and time that would land on its target outside --dir.
      {"file-onto-a-planted-link", K::File, "planted-link", kAnyRefusal},
      {"directory-onto-a-planted-link", K::Directory, "planted-link", kAnyRefusal},
  };
}

// The next answer to an Offer: Take, Refuse, FileVerdict or Error; Credits and Working are
// not answers.
std::optional<proto::Message> next_answer(Peer& peer) {
  for (auto m = peer.next_message(); m; m = peer.next_message()) {
    if (std::holds_alternative<proto::Credit>(*m) || std::holds_alternative<proto::Working>(*m))
      continue;
    return m;
  }
  return std::nullopt;
}

proto::Offer offer_of(std::uint32_t entry, proto::EntryKind kind, std::string path,
                      const proto::Digest& empty_digest) {
  proto::Offer offer;
  offer.entry = entry;
  offer.kind = kind;
  offer.mode = kind == proto::EntryKind::Directory ? 0755 : 0644;
  offer.size = 0;
  offer.mtime_sec = 946684800;  // 2000-01-01: a time the planted link's target does not have
  offer.digest = kind == proto::EntryKind::Directory ? proto::Digest{} : empty_digest;
  offer.path = std::move(path);
  return offer;
}

void print_line(bool ok, const std::string& attempt, const std::string& text) {
  std::printf("hostile paths/%s: %s: %s\n", attempt.c_str(), ok ? "ok" : "WRONG", text.c_str());
}

// One session: every hostile Offer, then a legitimate empty file, then Bye.
bool session_of_hostile_offers(const Options& o) {
  const auto paths = hostile_paths(o.tag);
  Sha256 hash;
  const auto empty_digest = hash.finish();
  Peer peer(o, "paths/session");
  peer.connect(0);
  proto::Open open;
  open.digest_algorithm = proto::DigestAlgorithm::WholeFileSha256;
  open.entry_count = static_cast<std::uint32_t>(paths.size() + 1);
  open.total_bytes = 0;
  peer.send(open, proto::kVersion2);
  (void)peer.expect_message<proto::Accept>("Accept");

  bool ok = true;
  std::uint32_t entry = 0;
  for (const auto& hostile : paths) {
    peer.send(offer_of(entry, hostile.kind, hostile.path, empty_digest), proto::kVersion2);
    const auto answer = next_answer(peer);
    const auto* refuse = answer ? std::get_if<proto::Refuse>(&*answer) : nullptr;
    const bool right = refuse != nullptr && refuse->entry == entry &&
                       (hostile.expected == kAnyRefusal || refuse->reason == hostile.expected);
    const std::string got = answer ? Peer::describe(*answer) : "nothing (" + peer.ended_how() + ")";
    print_line(right, hostile.what,
               std::string(proto::to_string(hostile.kind)) + " '" + hostile.path.substr(0, 60) +
                   (hostile.path.size() > 60 ? "...'" : "'") + " -> " + got);
    ok &= right;
    if (!answer) return false;
    ++entry;
  }

  // The session goes on: a legitimate (empty) file is taken and verified.
  const std::string good = o.tag + "-paths-good/" + o.tag + "-paths-good.bin";
  peer.send(offer_of(entry, proto::EntryKind::File, good, empty_digest), proto::kVersion2);
  auto answer = next_answer(peer);
  bool good_ok = answer && std::holds_alternative<proto::Take>(*answer);
  if (good_ok) {
    peer.send(proto::FileDone{entry, 0}, proto::kVersion2);
    answer = next_answer(peer);
    const auto* verdict = answer ? std::get_if<proto::FileVerdict>(&*answer) : nullptr;
    good_ok = verdict != nullptr && verdict->code == proto::VerdictCode::Good;
  }
  print_line(good_ok, "legitimate-entry-after-refusals",
             "'" + good + "' -> " + (answer ? Peer::describe(*answer) : "nothing"));
  ok &= good_ok;

  peer.send(proto::Bye{}, proto::kVersion2);
  const bool disconnected = peer.wait_disconnected(std::chrono::seconds(o.timeout_s));
  std::string after;
  for (const auto& m : peer.take_messages())
    if (!std::holds_alternative<proto::Credit>(m) && !std::holds_alternative<proto::Working>(m))
      after += (after.empty() ? "" : ", ") + Peer::describe(m);
  const bool bye_ok = disconnected && after.empty();
  print_line(bye_ok, "bye",
             (after.empty() ? std::string("no message") : after) +
                 (disconnected ? ", disconnected" : ", NOT disconnected"));
  return ok && bye_ok;
}

// An Offer whose path_len is 2049 (one past kMaxPathBytes) with the bytes to match: a
// static rule of the decoder, so Error(ProtocolViolation) and a disconnect.
bool overlong_path(const Options& o) {
  Sha256 hash;
  Peer peer(o, "paths/overlong");
  peer.connect(0);
  proto::Open open;
  open.digest_algorithm = proto::DigestAlgorithm::WholeFileSha256;
  open.entry_count = 1;
  peer.send(open, proto::kVersion2);
  (void)peer.expect_message<proto::Accept>("Accept");
  auto bytes =
      proto::encode(offer_of(0, proto::EntryKind::File, "x", hash.finish()), proto::kVersion2);
  if (bytes.empty()) throw SetupError("a well-formed Offer did not encode");
  constexpr std::size_t kLength = proto::kMaxPathBytes + 1;
  bytes.pop_back();
  bytes.insert(bytes.end(), kLength, 'p');
  constexpr std::size_t kPathLenAt = 16 + 60, kPayloadLengthAt = 8;
  for (std::size_t i = 0; i < 2; ++i)
    bytes[kPathLenAt + i] = static_cast<std::uint8_t>(kLength >> (8 * i));
  const std::size_t payload = bytes.size() - 16;
  for (std::size_t i = 0; i < 4; ++i)
    bytes[kPayloadLengthAt + i] = static_cast<std::uint8_t>(payload >> (8 * i));
  peer.send_raw(bytes);
  const bool disconnected = peer.wait_disconnected(std::chrono::seconds(o.timeout_s));
  bool violation = false;
  std::string seen;
  for (const auto& m : peer.take_messages()) {
    if (std::holds_alternative<proto::Credit>(m)) continue;
    seen += (seen.empty() ? "" : ", ") + Peer::describe(m);
    if (const auto* e = std::get_if<proto::Error>(&m))
      violation = e->code == proto::ErrorCode::ProtocolViolation;
  }
  const bool ok = violation && disconnected;
  print_line(ok, "path-of-2049-bytes",
             (seen.empty() ? std::string("no message") : seen) +
                 (disconnected ? ", disconnected" : ", NOT disconnected"));
  return ok;
}

}  // namespace

bool hostile_paths(const Options& o, const Payload&) {
  bool ok = session_of_hostile_offers(o);
  ok &= overlong_path(o);
  return ok;
}

}  // namespace rdmax::attacker
