#include "sender/report.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/cli/error_hints.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "sender/exit_codes.hpp"

namespace rdmax::sender {

namespace {
using Json = nlohmann::ordered_json;  // keys in the order written, for people reading it

struct Counts {
  std::size_t files = 0, directories = 0;
  std::size_t good = 0, failed = 0, not_sent = 0;  // failed: refused or verdict not good
  std::size_t identical = 0, resumed = 0;          // of the good ones (PROTOCOL.md 7.6)
  std::uint64_t size = 0;                          // of every file
  std::uint64_t not_resent = 0;                    // bytes the receiver had already
  bool zero_copy = false;
};

// The entries' counts; with `receiver`, of those its connections carried only.
Counts count(const TransferPlan& plan, const std::string* receiver = nullptr) {
  Counts c;
  for (std::size_t i = 0; i < plan.entries.size(); ++i) {
    const EntryResult& r = plan.results[i];
    if (receiver != nullptr && r.receiver != *receiver) continue;
    (plan.entries[i].kind == proto::EntryKind::File ? c.files : c.directories) += 1;
    c.size += plan.entries[i].size;
    switch (r.status) {
      case EntryResult::Status::Good:
        ++c.good;
        break;
      case EntryResult::Status::NotSent:
        ++c.not_sent;
        break;
      case EntryResult::Status::Refused:
      case EntryResult::Status::Failed:
        ++c.failed;
        break;
    }
    if (r.identical) {
      ++c.identical;
      c.not_resent += plan.entries[i].size;
    } else if (r.resumed_from > 0) {
      ++c.resumed;
      c.not_resent += r.resumed_from;
    }
    c.zero_copy = c.zero_copy || r.zero_copy;
  }
  return c;
}

// -H HOST1,HOST2: the receivers the entries went to, in the order first met.
std::vector<std::string> receivers_of(const TransferPlan& plan) {
  std::vector<std::string> receivers;
  for (const EntryResult& r : plan.results) {
    if (!r.receiver.empty() &&
        std::find(receivers.begin(), receivers.end(), r.receiver) == receivers.end())
      receivers.push_back(r.receiver);
  }
  return receivers;
}

double rate_of(const RunSummary& s) {
  return s.data_seconds > 0 ? static_cast<double>(s.bytes) / s.data_seconds : 0;
}

bool single_file(const TransferPlan& plan) {
  return plan.entries.size() == 1 && plan.entries.front().kind == proto::EntryKind::File;
}

// The receiver's word on an entry: good (verified, or identical to what it holds), bad
// (its digest differs), or none (refused, not stored, or never settled).
const char* verdict_of(const EntryResult& r) {
  if (r.status == EntryResult::Status::Good) return "good";
  if (r.status == EntryResult::Status::Failed && r.outcome == proto::SenderOutcome::HashMismatch)
    return "bad";
  return "none";
}

// Stable identifiers, as the outcomes are (rdma-send(1) lists them).
const char* status_of(const EntryResult& r) {
  if (r.identical) return "identical";
  switch (r.status) {
    case EntryResult::Status::NotSent:
      return "not_sent";
    case EntryResult::Status::Good:
      return "good";
    case EntryResult::Status::Refused:
      return "refused";
    case EntryResult::Status::Failed:
      return "failed";
  }
  return "?";
}

// The command's outcome: the first entry's that is not good, else the lead connection's.
proto::SenderOutcome outcome_of(const TransferPlan& plan, const RunSummary& summary) {
  for (const auto& r : plan.results)
    if (r.status != EntryResult::Status::Good) return r.outcome;
  return summary.lead == proto::SenderOutcome::Denied ? summary.lead
                                                      : proto::SenderOutcome::Success;
}

std::string digest_text(const TransferPlan& plan, const PlannedEntry& e) {
  return std::string(proto::to_string(plan.algorithm)) + " " + to_hex(e.digest);
}

void summarize_file(const TransferPlan& plan, const RunSummary& summary, int exit_code) {
  const PlannedEntry& e = plan.entries.front();
  const EntryResult& r = plan.results.front();
  const std::string what =
      proto::escape_for_log(e.local_path) + " as '" + proto::escape_for_log(e.remote_path) + "'";
  if (r.status != EntryResult::Status::Good) {
    spdlog::error("{} not sent: {}", what, outcome_message(r.outcome));
  } else if (r.identical) {
    spdlog::info("{}: identical on the receiver, nothing sent ({})", what, digest_text(plan, e));
  } else {
    const std::string resumed = r.resumed_from > 0
                                    ? " (resumed at " + proto::format_size(r.resumed_from) + ")"
                                    : std::string();
    spdlog::info("sent {}: {}{} in {:.2f}s ({}/s), verified ({})", what,
                 proto::format_size(summary.bytes), resumed, summary.data_seconds,
                 proto::format_size(static_cast<std::uint64_t>(rate_of(summary))),
                 digest_text(plan, e));
  }
  if (r.status == EntryResult::Status::Good && exit_code != kExitSuccess)
    spdlog::error("the receiver denied the id: no secret");
}
}  // namespace

int exit_status(const TransferPlan& plan, const RunSummary& summary) {
  const bool all_good =
      std::all_of(plan.results.begin(), plan.results.end(),
                  [](const EntryResult& r) { return r.status == EntryResult::Status::Good; });
  const int rc = exit_code_for(outcome_of(plan, summary));
  // An entry that is not good fails the command, whatever its connection said.
  return rc == kExitSuccess && !all_good ? kExitOther : rc;
}

void summarize(const TransferPlan& plan, const RunSummary& summary, int exit_code) {
  if (single_file(plan)) return summarize_file(plan, summary, exit_code);
  const Counts c = count(plan);
  std::string line = fmt::format(
      "{} files and {} directories: {} good, {} failed, {} not sent; {} sent in {:.2f}s ({}/s)",
      c.files, c.directories, c.good, c.failed, c.not_sent, proto::format_size(summary.bytes),
      summary.data_seconds, proto::format_size(static_cast<std::uint64_t>(rate_of(summary))));
  // What an earlier, interrupted run saved this one, and what was never offered: said only
  // when there is something.
  if (c.identical + c.resumed > 0) {
    line += fmt::format("; {} identical and {} resumed: {} not sent again", c.identical, c.resumed,
                        proto::format_size(c.not_resent));
  }
  if (summary.left_out > 0)
    line += fmt::format("; {} left out (not regular files or directories)", summary.left_out);
  if (exit_code == kExitSuccess)
    spdlog::info("{}", line);
  else
    spdlog::error("{}", line);
  // Several receivers: what each of them got, so that a failed one is named.
  if (const auto receivers = receivers_of(plan); receivers.size() > 1) {
    for (const std::string& receiver : receivers) {
      const Counts r = count(plan, &receiver);
      const std::string each =
          fmt::format("{}: {} files and {} directories: {} good, {} failed, {} not sent", receiver,
                      r.files, r.directories, r.good, r.failed, r.not_sent);
      if (r.failed + r.not_sent == 0)
        spdlog::info("{}", each);
      else
        spdlog::error("{}", each);
    }
  }
  if (c.failed + c.not_sent == 0 && exit_code != kExitSuccess)
    spdlog::error("the receiver denied the id: no secret");
}

namespace {
// The digest as hexadecimal; null for a file offered without it (7.9) that was abandoned
// before its end, whose digest was never computed.
Json digest_value(const PlannedEntry& e) {
  if (!e.digest_known && e.digest == Digest{}) return nullptr;
  return to_hex(e.digest);
}

// One entry of to_json's "entries", and one line of --json-lines.
Json entry_object(const TransferPlan& plan, std::size_t i) {
  const PlannedEntry& e = plan.entries[i];
  const EntryResult& r = plan.results[i];
  const bool file = e.kind == proto::EntryKind::File;
  Json entry;
  entry["path"] = e.local_path;
  entry["name"] = e.remote_path;
  entry["kind"] = proto::to_string(e.kind);
  entry["bytes"] = e.size;
  if (file) {
    entry["digest"] = {{"algorithm", proto::to_string(plan.algorithm)},
                       {"value", digest_value(e)},
                       {"from_cache", e.digest_from_cache}};
  }
  entry["status"] = status_of(r);
  entry["verdict"] = verdict_of(r);
  entry["outcome"] = proto::to_string(
      r.status == EntryResult::Status::Good ? proto::SenderOutcome::Success : r.outcome);
  if (!r.detail.empty()) entry["detail"] = r.detail;
  if (file) {
    entry["bytes_sent"] = r.bytes;
    entry["resumed_from"] = r.resumed_from;
    entry["zero_copy"] = r.zero_copy;
  }
  if (!r.receiver.empty()) entry["receiver"] = r.receiver;
  return entry;
}

// to_json's object: the entries (unless `with_entries` is false), then the totals.
Json report_object(const TransferPlan& plan, const RunSummary& summary, int exit_code,
                   const std::string& secret, bool with_entries) {
  const Counts c = count(plan);
  const proto::SenderOutcome outcome = outcome_of(plan, summary);
  Json out;
  if (with_entries) {
    Json entries = Json::array();
    for (std::size_t i = 0; i < plan.entries.size(); ++i) entries.push_back(entry_object(plan, i));
    out["entries"] = std::move(entries);
  }
  out["files"] = c.files;
  out["directories"] = c.directories;
  out["good"] = c.good;
  out["failed"] = c.failed;
  out["not_sent"] = c.not_sent;
  out["identical"] = c.identical;
  out["resumed"] = c.resumed;
  out["left_out"] = summary.left_out;
  // Which receiver got what (-H HOST1,HOST2): each entry also names its own.
  Json receivers = Json::array();
  for (const std::string& receiver : receivers_of(plan)) {
    const Counts r = count(plan, &receiver);
    receivers.push_back({{"receiver", receiver},
                         {"files", r.files},
                         {"directories", r.directories},
                         {"good", r.good},
                         {"failed", r.failed},
                         {"not_sent", r.not_sent},
                         {"bytes", r.size}});
  }
  out["receivers"] = std::move(receivers);
  out["bytes"] = c.size;
  out["bytes_sent"] = summary.bytes;
  Json connections = Json::array();
  for (const ConnectionShare& share : summary.connections)
    connections.push_back(
        {{"receiver", share.receiver}, {"device", share.device}, {"bytes_sent", share.bytes_sent}});
  out["connections"] = std::move(connections);
  out["bytes_not_resent"] = c.not_resent;
  out["seconds"] = {{"hash", summary.hash_seconds},
                    {"connect", summary.connect_seconds},
                    {"data", summary.data_seconds},
                    {"total", summary.total_seconds}};
  out["data_bytes_per_second"] = rate_of(summary);
  out["zero_copy"] = c.zero_copy;
  out["verdict"] = c.good == plan.entries.size()                   ? "good"
                   : outcome == proto::SenderOutcome::HashMismatch ? "bad"
                                                                   : "none";
  out["outcome"] = proto::to_string(outcome);
  out["exit_code"] = exit_code;
  if (!secret.empty() && exit_code == kExitSuccess) out["secret"] = secret;
  return out;
}

Json failure_object(int exit_code, const std::string& error, bool with_entries) {
  Json out;
  if (with_entries) out["entries"] = Json::array();
  out["exit_code"] = exit_code;
  out["error"] = error;
  return out;
}

std::string dumped(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}
}  // namespace

std::string to_json(const TransferPlan& plan, const RunSummary& summary, int exit_code,
                    const std::string& secret) {
  return dumped(report_object(plan, summary, exit_code, secret, true));
}

std::string to_json_failure(int exit_code, const std::string& error) {
  return dumped(failure_object(exit_code, error, true));
}

std::string to_json_failure_line(int exit_code, const std::string& error) {
  return dumped(Json{{"summary", failure_object(exit_code, error, false)}});
}

void JsonLines::write(const std::string& line) {
  out_ << line << '\n';
  out_.flush();
}

void JsonLines::settled(const TransferPlan& plan, std::size_t index) {
  if (written_.size() < plan.entries.size()) written_.resize(plan.entries.size(), false);
  if (index >= written_.size() || written_[index]) return;
  written_[index] = true;
  write(dumped(Json{{"entry", entry_object(plan, index)}}));
}

void JsonLines::finish(const TransferPlan& plan, const RunSummary& summary, int exit_code,
                       const std::string& secret) {
  for (std::size_t i = 0; i < plan.entries.size(); ++i) settled(plan, i);
  write(dumped(Json{{"summary", report_object(plan, summary, exit_code, secret, false)}}));
}

void say_interrupted(int signal) {
  spdlog::warn(
      "interrupted by signal {}: stopping. Run the same command again to continue: files "
      "already on the receiver are skipped, and one cut short resumes where it stopped",
      signal);
}

}  // namespace rdmax::sender
