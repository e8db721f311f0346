#include "sender/fetch_request.hpp"

#include "protocol/fetch_part.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "common/error.hpp"
#include "common/os/beneath.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"
#include "sender/tree_walker.hpp"

namespace rdmax::sender {
namespace {

proto::Reject rejected(proto::RejectReason reason, std::string text) {
  return proto::Reject{reason, text.substr(0, proto::kMaxTextBytes)};
}

// Whether `path` (trailing slashes gone) names `subdir` or something beneath it. A string
// test is enough: the walk then refuses "..", and follows no link, at any component.
bool beneath(const std::string& path, const std::string& subdir) {
  return path == subdir || path.starts_with(subdir + "/");
}

}  // namespace

std::optional<proto::Reject> check_fetch(const proto::Fetch& fetch) {
  for (const proto::HelloExtension& e : fetch.extensions)
    if ((e.type & proto::kExtensionMustUnderstand) != 0 && e.type != proto::kExtensionFetchPart) {
      char type[8];
      std::snprintf(type, sizeof type, "0x%04x", e.type);  // as the receiver names one
      return rejected(proto::RejectReason::UnsupportedVersion,
                      std::string("this server does not apply Fetch extension ") + type);
    }
  return std::nullopt;
}

FetchRequest::FetchRequest(const proto::Fetch& fetch, std::string subdir)
    : share_{fetch.shard_index, fetch.shard_count},
      part_{proto::fetch_part_of(fetch).index, proto::fetch_part_of(fetch).count},
      subdir_(std::move(subdir)) {}

std::optional<proto::Reject> FetchRequest::add(const proto::Want& want) {
  if (want.last) whole_ = true;
  if (wanted_.size() >= proto::kMaxWants || wanted_bytes_ + want.path.size() > proto::kMaxWantBytes)
    return rejected(proto::RejectReason::TooLarge, "more than " + std::to_string(proto::kMaxWants) +
                                                       " paths, or " +
                                                       std::to_string(proto::kMaxWantBytes >> 20) +
                                                       " MiB of them, in one request");
  wanted_bytes_ += want.path.size();
  const std::string path = without_trailing_slashes(want.path);
  if (path != ".")
    if (const auto problem = proto::check_relative_path(path))
      return rejected(proto::RejectReason::BadName,
                      proto::quoted_for_log(want.path) +
                          ": not a name within the export: " + proto::describe(*problem));
  // Where a key has a subdirectory, the fetcher names nothing outside it; the answer does not
  // say whether what it named exists (PROTOCOL.md 7.13).
  if (!subdir_.empty() && path != "." && !beneath(path, subdir_))
    return rejected(proto::RejectReason::AuthFailed,
                    proto::quoted_for_log(want.path) + " is outside what this key may fetch");
  wanted_.push_back({path, want.recursive, want.keep_path});
  return std::nullopt;
}

std::variant<ServedTree, proto::Reject> FetchRequest::resolve(int export_fd) const {
  try {
    ServedTree served;
    // "." is the key's subdirectory where it has one: its entries arrive as their own names.
    const bool whole_subdir = !subdir_.empty() && wanted_.size() == 1 && wanted_[0].path == ".";
    served.root = whole_subdir ? open_directory_beneath(export_fd, subdir_, false)
                               : Fd(::fcntl(export_fd, F_DUPFD_CLOEXEC, 0));
    if (!served.root) throw_sys("fcntl(F_DUPFD_CLOEXEC)");
    // The share, then this connection's part of it (7.13): the same rule both times.
    served.tree =
        select_shard(select_shard(walk_export(served.root.get(), wanted_, subdir_), share_), part_);
    return served;
  } catch (const SourceError& e) {
    return rejected(proto::RejectReason::BadName, e.what());
  } catch (const SysError& e) {
    // The key's subdirectory itself is missing or not a directory (the server's doing), or
    // the server ran out of descriptors.
    if (e.error() == ENOENT || e.error() == ENOTDIR || e.error() == ELOOP)
      return rejected(proto::RejectReason::BadName,
                      "\".\": this key's directory is not in the export");
    return rejected(proto::RejectReason::Internal, e.what());
  }
}

}  // namespace rdmax::sender
