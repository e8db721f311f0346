#pragma once
// What a fetcher asks a server for (docs/PROTOCOL.md 7.13), and the server's answer once the
// last Want came: the share of the export to send, or the Reject that refuses the request.
// The request's own rules; the connection that carries it and the worker that walks are the
// server's.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/os/fd.hpp"
#include "protocol/wire.hpp"
#include "sender/export_tree.hpp"
#include "sender/shard.hpp"
#include "sender/source_tree.hpp"

namespace rdmax::sender {

// What a request resolves to: the share to send, and the directory its entries' local paths
// are relative to (the export, or a key's subdirectory when "." named all of that).
struct ServedTree {
  Fd root;
  SourceTree tree;
};

// A Fetch the server cannot serve as asked: a must-understand extension it does not apply
// (Reject(UnsupportedVersion) naming it, as a receiver answers one in a Hello).
[[nodiscard]] std::optional<proto::Reject> check_fetch(const proto::Fetch& fetch);

class FetchRequest {
 public:
  // `subdir`: the directory within the export the fetcher's key may fetch from (checked like
  // an Offer's path); empty: all of the export.
  FetchRequest(const proto::Fetch& fetch, std::string subdir);

  // One Want, while !whole() (the server's machine takes no other): a Reject if the request
  // is refused already (a path that is no name within the export or lies outside the key's
  // subdirectory; more than kMaxWants paths or kMaxWantBytes of them).
  [[nodiscard]] std::optional<proto::Reject> add(const proto::Want& want);
  // The last Want came.
  bool whole() const { return whole_; }

  // The walk (disk work): the Fetch's share (and its part of that) of what the Wants name beneath
  // `export_fd`, or the Reject that tells the fetcher why not.
  [[nodiscard]] std::variant<ServedTree, proto::Reject> resolve(int export_fd) const;

 private:
  ShardSpec share_;
  ShardSpec part_;  // of the share, for one of a command's connections (0x8008)
  std::string subdir_;
  std::vector<WantedPath> wanted_;
  std::uint64_t wanted_bytes_ = 0;  // of their paths, against kMaxWantBytes
  bool whole_ = false;
};

}  // namespace rdmax::sender
