#include "sender/session_report.hpp"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "protocol/sizes.hpp"
#include "sender/exit_codes.hpp"

namespace rdmax::sender {

namespace {
struct Counts {
  std::size_t files = 0, directories = 0, good = 0, failed = 0;
  std::size_t identical = 0, resumed = 0;  // of the good ones (PROTOCOL.md 7.6)
  std::uint64_t not_resent = 0;            // bytes the receiver had already
};

Counts count(const SessionPlan& plan) {
  Counts c;
  for (std::size_t i = 0; i < plan.entries.size(); ++i) {
    const EntryResult& r = plan.results[i];
    (plan.entries[i].kind == proto::EntryKind::File ? c.files : c.directories) += 1;
    (r.status == EntryResult::Status::Good ? c.good : c.failed) += 1;
    if (r.identical) {
      ++c.identical;
      c.not_resent += plan.entries[i].size;
    } else if (r.resumed_from > 0) {
      ++c.resumed;
      c.not_resent += r.resumed_from;
    }
  }
  return c;
}

double rate_of(const SessionSummary& s) {
  return s.data_seconds > 0 ? static_cast<double>(s.bytes) / s.data_seconds : 0;
}
}  // namespace

int summarize(const SessionPlan& plan, const SessionSummary& summary) {
  const Counts c = count(plan);
  int rc = kExitSuccess;
  for (const auto& r : plan.results) {
    if (r.status == EntryResult::Status::Good) continue;
    rc = exit_code_for(r.outcome);
    if (rc == kExitSuccess) rc = kExitOther;  // not good, whatever the connection said
    break;
  }
  const auto line = fmt::format(
      "{} files and {} directories: {} good, {} failed, {} skipped; {} sent in {:.2f}s ({}/s)",
      c.files, c.directories, c.good, c.failed, summary.skipped, proto::format_size(summary.bytes),
      summary.data_seconds, proto::format_size(static_cast<std::uint64_t>(rate_of(summary))));
  // What an earlier, interrupted run saved this one: said only when there is something.
  const std::string saved =
      c.identical + c.resumed == 0
          ? std::string()
          : fmt::format("; {} identical (skipped) and {} resumed: {} not sent again", c.identical,
                        c.resumed, proto::format_size(c.not_resent));
  if (rc == kExitSuccess)
    spdlog::info("{}{}", line, saved);
  else
    spdlog::error("{}{}", line, saved);
  return rc;
}

std::string to_json(const SessionPlan& plan, const SessionSummary& summary, int exit_code,
                    const std::string& secret) {
  using Json = nlohmann::ordered_json;
  const Counts c = count(plan);
  Json entries = Json::array();
  for (std::size_t i = 0; i < plan.entries.size(); ++i) {
    const PlannedEntry& e = plan.entries[i];
    const EntryResult& r = plan.results[i];
    Json entry;
    entry["path"] = e.local_path;
    entry["name"] = e.remote_path;
    entry["kind"] = proto::to_string(e.kind);
    entry["bytes"] = e.size;
    entry["status"] = r.identical ? "skipped" : to_string(r.status);
    if (e.kind == proto::EntryKind::File) {
      entry["bytes_sent"] = r.bytes;
      entry["resumed_from"] = r.resumed_from;
    }
    if (r.status != EntryResult::Status::Good) {
      entry["outcome"] = proto::to_string(r.outcome);
      if (!r.detail.empty()) entry["detail"] = r.detail;
    }
    if (e.kind == proto::EntryKind::File)
      entry["digest"] = {{"algorithm", proto::to_string(plan.algorithm)},
                         {"value", to_hex(e.digest)}};
    entries.push_back(std::move(entry));
  }
  Json out;
  out["entries"] = std::move(entries);
  out["files"] = c.files;
  out["directories"] = c.directories;
  out["good"] = c.good;
  out["failed"] = c.failed;
  out["skipped"] = summary.skipped;
  out["identical"] = c.identical;
  out["resumed"] = c.resumed;
  out["bytes_not_resent"] = c.not_resent;
  out["bytes"] = summary.bytes;
  out["seconds"] = {{"hash", summary.hash_seconds},
                    {"connect", summary.connect_seconds},
                    {"data", summary.data_seconds},
                    {"total", summary.total_seconds}};
  out["data_bytes_per_second"] = rate_of(summary);
  out["exit_code"] = exit_code;
  if (!secret.empty() && exit_code == kExitSuccess) out["secret"] = secret;
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace rdmax::sender
