#pragma once
// rdma-recv --from --json and --json-lines: what a fetch reports on stdout, in the shape of
// rdma-send's (rdma-recv(1)). --json: one object at the end, its "entries" (one per file and
// directory that ended here, as it ended) and the totals. --json-lines: {"entry":{...}} as
// each ends (flushed), then {"summary":{...}}: the same object without "entries". Names that
// are not UTF-8 get U+FFFD, so the output stays valid JSON whatever the server sent.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "receiver/entry_report.hpp"

namespace rdmax::receiver {

class FetchReport {
 public:
  enum class Mode : std::uint8_t { Json, JsonLines };
  FetchReport(std::ostream& out, Mode mode) : out_(out), mode_(mode) {}

  // An entry ended (the loop's thread).
  void add(EntryReport report);

  struct Summary {
    int exit_code = 0;
    std::size_t connections = 1;
    double seconds = 0;
    std::string error;  // why the fetch failed before or beside its entries; empty: none
  };
  // The totals (and with --json the entries): once, at the end.
  void finish(const Summary& summary);

 private:
  std::ostream& out_;
  Mode mode_;
  std::vector<EntryReport> entries_;
};

}  // namespace rdmax::receiver
