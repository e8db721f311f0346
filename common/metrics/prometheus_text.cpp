#include "common/metrics/prometheus_text.hpp"

#include <cctype>

#include "protocol/wire.hpp"
#include "version.hpp"

namespace rdmax::prometheus_text {

void sample(std::string& out, std::string_view name, std::string_view labels, std::uint64_t v) {
  out.append(name);
  if (!labels.empty()) out.append("{").append(labels).append("}");
  out.append(" ").append(std::to_string(v)).append("\n");
}

std::string label(std::string_view key, std::string_view value) {
  // The text format escapes a label value's backslashes, quotes and newlines (ours are
  // enumerators and version strings: this keeps a future one from breaking the scrape).
  std::string out = std::string(key) + "=\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "\"";
}

std::string snake_case(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (std::isupper(c) && i > 0) out += '_';
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

std::string build_labels() {
  std::string digests;
  for (auto algorithm : proto::enum_values<proto::DigestAlgorithm>())
    digests += (digests.empty() ? "" : ",") + std::string(proto::to_string(algorithm));
  return label("version", kVersion) + "," + label("digests", digests) + "," +
         label("protocols",
               std::to_string(proto::kVersion1) + "," + std::to_string(proto::kVersion2));
}

}  // namespace rdmax::prometheus_text
