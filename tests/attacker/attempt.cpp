#include "attempt.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

namespace rdmax::attacker {
namespace {

// Entries of --dir named after this command: its files and their temporaries.
std::vector<std::string> leftovers(const Options& o) {
  std::vector<std::string> found;
  const std::string mark = o.tag + "-" + o.command;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(o.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find(mark) != std::string::npos) found.push_back(name);
  }
  if (ec) throw SetupError("cannot list --dir " + o.dir + ": " + ec.message());
  return found;
}

}  // namespace

std::string dir_check(const Options& o) {
  if (o.dir.empty()) return "";
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  auto found = leftovers(o);
  while (!found.empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    found = leftovers(o);
  }
  std::string text;
  for (const auto& name : found) text += (text.empty() ? "" : " ") + name;
  return text.empty() ? "" : "left in --dir: " + text;
}

bool report(const Options& o, const std::string& attempt, const Reaction& r, Expect expect) {
  std::string wrong = judge(o, r, expect);
  const std::string dir = dir_check(o);
  if (wrong.empty()) wrong = dir;
  const std::string where = o.dir.empty() ? "; --dir not checked" : "; nothing left in --dir";
  std::printf("hostile %s/%s: %s: %s%s\n", o.command.c_str(), attempt.c_str(),
              wrong.empty() ? "ok" : "WRONG", describe(r).c_str(),
              wrong.empty() ? where.c_str() : ("; " + wrong).c_str());
  return wrong.empty();
}

bool attempt_on_fresh_connection(const Options& o, const std::string& attempt, Expect expect,
                                 const AttemptAct& act, std::uint32_t raw_slots, Judged judged) {
  Peer peer(o, o.command + "/" + attempt, raw_slots);
  peer.connect(0);
  const auto since = act(peer);
  Reaction r = observe(peer, since, o);
  if (judged == Judged::RefusalsOnly)
    std::erase_if(r.messages, [](const proto::Message& m) {
      return !std::holds_alternative<proto::Error>(m) && !std::holds_alternative<proto::Reject>(m);
    });
  return report(o, attempt, r, expect);
}

}  // namespace rdmax::attacker
