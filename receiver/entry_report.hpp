#pragma once
// What became of one entry offered to this receiver, told as it ends here: for rdma-recv
// --from --json and --json-lines (receiver/fetch_report.hpp), which list every file and
// directory of a fetch as rdma-send's --json lists what it sent.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "protocol/wire.hpp"

namespace rdmax::receiver {

struct EntryReport {
  enum class Status : std::uint8_t {
    Good,       // stored and verified (a directory: made, its mode and time given)
    Identical,  // here already, identical: nothing moved (Have)
    Failed,     // a verdict other than Good (detail: which), or abandoned by the sender
    Refused,    // refused when offered (detail: the reason and why)
  };
  std::string path;  // as offered, relative to the destination
  proto::EntryKind kind = proto::EntryKind::File;
  std::uint64_t size = 0;
  Status status = Status::Good;
  std::string detail;
  std::uint64_t bytes_received = 0;  // in this run (after a resume: from resumed_from on)
  std::uint64_t resumed_from = 0;
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::Blake3;
  std::optional<proto::Digest> digest;  // a file stored and verified: what it was checked by
};

// The report of `offer` with `status` (the rest zero).
inline EntryReport report_of(const proto::Offer& offer, EntryReport::Status status,
                             std::string detail = {}) {
  EntryReport report;
  report.path = offer.path;
  report.kind = offer.kind;
  report.size = offer.size;
  report.status = status;
  report.detail = std::move(detail);
  return report;
}

// Called on the event loop's thread, once per entry that ends on this connection.
using EntryReports = std::function<void(EntryReport)>;

inline const char* to_string(EntryReport::Status status) {
  switch (status) {
    case EntryReport::Status::Good:
      return "good";
    case EntryReport::Status::Identical:
      return "identical";
    case EntryReport::Status::Failed:
      return "failed";
    case EntryReport::Status::Refused:
      return "refused";
  }
  return "unknown";
}

}  // namespace rdmax::receiver
