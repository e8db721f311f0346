#include "receiver/metrics.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/statvfs.h>

#include <cctype>
#include <charconv>

#include "protocol/enum_names.hpp"
#include "version.hpp"

namespace rdmax::receiver {
namespace {

// One family: its HELP and TYPE lines, then its samples (`sample` appends them).
template <typename Samples>
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            Samples&& samples) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  samples();
}

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

template <typename E, typename Counters>
void by_enum(std::string& out, std::string_view name, std::string_view key,
             const Counters& counters) {
  for (E e : proto::enum_values<E>())
    sample(out, name, label(key, snake_case(proto::to_string(e))),
           counters[static_cast<std::size_t>(e)].load(std::memory_order_relaxed));
}

std::string build_labels() {
  std::string digests;
  for (auto algorithm : proto::enum_values<proto::DigestAlgorithm>())
    digests += (digests.empty() ? "" : ",") + std::string(proto::to_string(algorithm));
  return label("version", kVersion) + "," + label("digests", digests) + "," +
         label("protocols",
               std::to_string(proto::kVersion1) + "," + std::to_string(proto::kVersion2));
}

}  // namespace

ReceiverMetrics::ReceiverMetrics(int dir_fd)
    : dir_(dir_fd >= 0 ? ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0) : -1) {}

// Refusals are counted by the reason's value.
static_assert(static_cast<std::size_t>(proto::enum_values<proto::RejectReason>().back()) < 16);

void ReceiverMetrics::count_verification(std::chrono::steady_clock::duration took) {
  add(verifications_);
  add(verification_ns_, static_cast<std::uint64_t>(
                            std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()));
}

std::string ReceiverMetrics::render() const {
  std::string out;
  out.reserve(4096);
  auto counter = [&](std::string_view name, std::string_view help, const Counter& c) {
    family(out, name, "counter", help, [&] { sample(out, name, {}, load(c)); });
  };
  auto gauge = [&](std::string_view name, std::string_view help, std::uint64_t v) {
    family(out, name, "gauge", help, [&] { sample(out, name, {}, v); });
  };
  family(out, "rdmax_build_info", "gauge",
         "The program's version, the digests it verifies and the protocol versions it speaks.",
         [&] { sample(out, "rdmax_build_info", build_labels(), 1); });
  counter("rdmax_received_bytes_total", "Chunk bytes that arrived from senders, good or bad.",
          received_bytes);
  counter("rdmax_written_bytes_total", "Chunk bytes hashed and written into files.", written_bytes);
  family(out, "rdmax_files_total", "counter", "Files that ended here, by how they ended.",
         [&] { by_enum<FileOutcome>(out, "rdmax_files_total", "outcome", files_); });
  family(out, "rdmax_files_refused_total", "counter", "Files refused when offered, by reason.",
         [&] {
           by_enum<proto::RejectReason>(out, "rdmax_files_refused_total", "reason", files_refused_);
         });
  counter("rdmax_files_resumed_total", "Files taken from what an earlier transfer kept.",
          files_resumed);
  counter("rdmax_connections_accepted_total", "Connections accepted.", connections_accepted);
  gauge("rdmax_connections", "Connections open now.", load(connections_open));
  family(out, "rdmax_senders_refused_total", "counter",
         "Senders turned away before any file, by reason.", [&] {
           by_enum<SenderRefusal>(out, "rdmax_senders_refused_total", "reason", senders_refused_);
         });
  counter("rdmax_verifications_total", "Files whose digest was checked (and committed if good).",
          verifications_);
  family(out, "rdmax_verification_seconds_total", "counter",
         "Time from a file's last chunk stored to its verdict: folding its digest, fsync, rename.",
         [&] {
           out.append("rdmax_verification_seconds_total ")
               .append(std::to_string(static_cast<double>(load(verification_ns_)) / 1e9))
               .append("\n");
         });
  gauge("rdmax_pool_queued_jobs",
        "Disk and hashing jobs waiting for a worker of the pool (--workers), all connections'.",
        load(pool_queued));
  struct statvfs fs {};
  if (dir_ && ::fstatvfs(dir_.get(), &fs) == 0)
    gauge("rdmax_dir_free_bytes", "Free space of --dir, as an unprivileged user may use it.",
          std::uint64_t{fs.f_bavail} * fs.f_frsize);
  return out;
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

std::optional<MetricsAddress> parse_metrics_address(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc{} || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535)
    return std::nullopt;
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  const std::string literal(host);
  unsigned char bytes[16];
  const bool literal_ok = bracketed ? ::inet_pton(AF_INET6, literal.c_str(), bytes) == 1
                                    : ::inet_pton(AF_INET, literal.c_str(), bytes) == 1;
  if (!literal_ok) return std::nullopt;
  return MetricsAddress{literal, static_cast<std::uint16_t>(port)};
}

std::string to_string(const MetricsAddress& address) {
  const bool v6 = address.host.find(':') != std::string::npos;
  return (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(address.port);
}

}  // namespace rdmax::receiver
