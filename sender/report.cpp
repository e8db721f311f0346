#include "sender/report.hpp"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

namespace rdmax::sender {

void say_interrupted(int signal) {
  spdlog::warn(
      "interrupted by signal {}: stopping. Run the same command again to continue: files "
      "already on the receiver are skipped, and one cut short resumes where it stopped",
      signal);
}

namespace {
const char* verdict_of(proto::SenderOutcome o) {
  switch (o) {
    case proto::SenderOutcome::Success:
    case proto::SenderOutcome::Denied:
      return "good";
    case proto::SenderOutcome::HashMismatch:
      return "bad";
    default:
      return "none";
  }
}
}  // namespace

std::string to_json(const Report& r) {
  using Json = nlohmann::ordered_json;  // keys in the order written, for people reading it
  const double rate = r.data_seconds > 0 ? static_cast<double>(r.bytes) / r.data_seconds : 0;
  Json out;
  out["file"] = r.file;
  out["name"] = r.name;
  out["bytes"] = r.bytes;
  out["digest"] = {{"algorithm", proto::to_string(r.digest.algorithm)},
                   {"value", to_hex(r.digest.value)},
                   {"from_cache", r.digest_from_cache}};
  out["seconds"] = {{"hash", r.hash_seconds},
                    {"connect", r.connect_seconds},
                    {"data", r.data_seconds},
                    {"verify", r.verify_seconds},
                    {"total", r.total_seconds}};
  out["data_bytes_per_second"] = rate;
  out["zero_copy"] = r.zero_copy;
  out["bytes_sent"] = r.bytes_sent;
  out["resumed_from"] = r.resumed_from;
  out["status"] = r.skipped ? "skipped" : r.exit_code == 0 ? "sent" : "failed";
  out["verdict"] = verdict_of(r.outcome);
  out["outcome"] = proto::to_string(r.outcome);
  out["exit_code"] = r.exit_code;
  if (!r.secret.empty()) out["secret"] = r.secret;
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace rdmax::sender
