#include "receiver/fetch_report.hpp"

#include <nlohmann/json.hpp>

#include "common/digest/sha256.hpp"
#include "protocol/enum_names.hpp"

namespace rdmax::receiver {

namespace {
using Json = nlohmann::ordered_json;

Json entry_object(const EntryReport& e) {
  Json entry;
  entry["name"] = e.path;
  entry["kind"] = proto::to_string(e.kind);
  entry["bytes"] = e.size;
  entry["status"] = to_string(e.status);
  if (!e.detail.empty()) entry["detail"] = e.detail;
  if (e.kind == proto::EntryKind::File) {
    entry["bytes_received"] = e.bytes_received;
    entry["resumed_from"] = e.resumed_from;
    if (e.digest)
      entry["digest"] = {{"algorithm", proto::to_string(e.algorithm)},
                         {"value", to_hex(*e.digest)}};
  }
  return entry;
}

std::string dumped(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}
}  // namespace

void FetchReport::add(EntryReport report) {
  if (mode_ == Mode::JsonLines) {
    out_ << dumped(Json{{"entry", entry_object(report)}}) << '\n';
    out_.flush();
  }
  entries_.push_back(std::move(report));
}

void FetchReport::finish(const Summary& summary) {
  Json out;
  if (mode_ == Mode::Json) {
    Json entries = Json::array();
    for (const EntryReport& e : entries_) entries.push_back(entry_object(e));
    out["entries"] = std::move(entries);
  }
  std::size_t files = 0, directories = 0, good = 0, identical = 0, failed = 0, refused = 0;
  std::uint64_t bytes = 0, received = 0;
  for (const EntryReport& e : entries_) {
    if (e.kind == proto::EntryKind::File) {
      ++files;
      bytes += e.size;
      received += e.bytes_received;
    } else {
      ++directories;
    }
    switch (e.status) {
      case EntryReport::Status::Good:
        ++good;
        break;
      case EntryReport::Status::Identical:
        ++identical;
        break;
      case EntryReport::Status::Failed:
        ++failed;
        break;
      case EntryReport::Status::Refused:
        ++refused;
        break;
    }
  }
  out["files"] = files;
  out["directories"] = directories;
  out["good"] = good;
  out["identical"] = identical;
  out["failed"] = failed;
  out["refused"] = refused;
  out["bytes"] = bytes;
  out["bytes_received"] = received;
  out["connections"] = summary.connections;
  out["seconds"] = summary.seconds;
  out["exit_code"] = summary.exit_code;
  if (!summary.error.empty()) out["error"] = summary.error;
  out_ << dumped(mode_ == Mode::Json ? out : Json{{"summary", out}}) << '\n';
  out_.flush();
}

}  // namespace rdmax::receiver
