#include "receiver/metrics.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>

#include "common/metrics/prometheus_text.hpp"
#include "protocol/enum_names.hpp"

namespace rdmax::receiver {
using namespace prometheus_text;

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

}  // namespace rdmax::receiver
