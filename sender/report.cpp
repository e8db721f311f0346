#include "sender/report.hpp"

#include <cstdio>

namespace rdmax::sender {

namespace {
// JSON string escaping for names and secrets, which may hold any bytes but NUL.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

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
  const double rate = r.data_seconds > 0 ? static_cast<double>(r.bytes) / r.data_seconds : 0;
  std::string out = "{";
  out += "\"file\":" + quoted(r.file) + ",";
  out += "\"name\":" + quoted(r.name) + ",";
  out += "\"bytes\":" + std::to_string(r.bytes) + ",";
  out += "\"seconds\":{\"hash\":" + number(r.hash_seconds) +
         ",\"connect\":" + number(r.connect_seconds) + ",\"data\":" + number(r.data_seconds) +
         ",\"verify\":" + number(r.verify_seconds) + ",\"total\":" + number(r.total_seconds) + "},";
  out += "\"data_bytes_per_second\":" + number(rate) + ",";
  out += std::string("\"zero_copy\":") + (r.zero_copy ? "true" : "false") + ",";
  out += "\"verdict\":\"" + std::string(verdict_of(r.outcome)) + "\",";
  out += "\"outcome\":" + quoted(proto::to_string(r.outcome)) + ",";
  out += "\"exit_code\":" + std::to_string(r.exit_code);
  if (!r.secret.empty()) out += ",\"secret\":" + quoted(r.secret);
  return out + "}";
}

}  // namespace rdmax::sender
