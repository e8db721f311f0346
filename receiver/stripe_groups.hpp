#pragma once
// The daemon's stripe groups (docs/PROTOCOL.md 7.12): which connections of one sender's
// command belong together, so that a member connection's Join finds the striped entry its
// lead offered, and the end of one connection interrupts the file on the others. A group is
// named by the token every Open of the command carries and by the key id its connections
// proved (7.8; empty without keys): a token sniffed from an Open is useless without the key.
//
// Every connection's entries run on the daemon's one event loop, so a connection reaches
// another's entries directly; each registers itself when its Open is accepted with the
// extension and leaves when it is destroyed, so every pointer held here is alive.

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "protocol/stripes.hpp"

namespace rdmax::receiver {

class IncomingEntries;

class StripeGroups {
 public:
  struct Key {
    proto::StripeToken token{};
    std::string key_id;
    auto operator<=>(const Key&) const = default;
  };

  void enter(const Key& key, std::uint16_t member, IncomingEntries* entries) {
    groups_[key].emplace_back(member, entries);
  }
  void leave(const Key& key, const IncomingEntries* entries) {
    auto it = groups_.find(key);
    if (it == groups_.end()) return;
    std::erase_if(it->second, [&](const auto& m) { return m.second == entries; });
    if (it->second.empty()) groups_.erase(it);
  }
  // The group's lead (member 0), if it is connected.
  IncomingEntries* lead(const Key& key) const {
    auto it = groups_.find(key);
    if (it == groups_.end()) return nullptr;
    for (const auto& [member, entries] : it->second)
      if (member == 0) return entries;
    return nullptr;
  }
  // Every connection of the group but `except`.
  std::vector<IncomingEntries*> others(const Key& key, const IncomingEntries* except) const {
    std::vector<IncomingEntries*> out;
    if (auto it = groups_.find(key); it != groups_.end())
      for (const auto& [member, entries] : it->second)
        if (entries != except) out.push_back(entries);
    return out;
  }

 private:
  std::map<Key, std::vector<std::pair<std::uint16_t, IncomingEntries*>>> groups_;
};

}  // namespace rdmax::receiver
