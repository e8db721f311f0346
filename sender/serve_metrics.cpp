#include "sender/serve_metrics.hpp"

#include "common/metrics/prometheus_text.hpp"

namespace rdmax::sender {

using namespace prometheus_text;

// The labels of a FetcherRefusal (not a protocol enum: named here).
static const char* name_of(FetcherRefusal why) {
  switch (why) {
    case FetcherRefusal::Address:
      return "address";
    case FetcherRefusal::SlowedDown:
      return "slowed_down";
    case FetcherRefusal::Full:
      return "full";
  }
  return "unknown";
}

std::string ServeMetrics::render() const {
  std::string out;
  out.reserve(2048);
  auto load = [](const Counter& c) { return c.load(std::memory_order_relaxed); };
  auto one = [&](std::string_view name, std::string_view type, std::string_view help,
                 const Counter& c) {
    family(out, name, type, help, [&] { sample(out, name, {}, load(c)); });
  };
  family(out, "rdmax_build_info", "gauge", "The build: version, digests, protocol versions.",
         [&] { sample(out, "rdmax_build_info", build_labels(), 1); });
  one("rdmax_serve_connections_accepted_total", "counter", "Fetcher connections accepted.",
      connections_accepted);
  one("rdmax_serve_connections", "gauge", "Fetcher connections open now.", connections_open);
  one("rdmax_serve_sent_bytes_total", "counter",
      "Chunk bytes written into fetchers' memory (counted each second).", sent_bytes);
  one("rdmax_serve_files_sent_total", "counter",
      "Files sent and verified by their fetcher (counted each second).", files_sent);
  family(out, "rdmax_serve_requests_refused_total", "counter",
         "Fetch requests refused before any file was sent, by reason.", [&] {
           by_enum<proto::RejectReason>(out, "rdmax_serve_requests_refused_total", "reason",
                                        requests_refused_);
         });
  family(out, "rdmax_serve_fetchers_refused_total", "counter",
         "Connect requests refused before any resource was given, by why.", [&] {
           for (FetcherRefusal why :
                {FetcherRefusal::Address, FetcherRefusal::SlowedDown, FetcherRefusal::Full})
             sample(out, "rdmax_serve_fetchers_refused_total", label("reason", name_of(why)),
                    load(fetchers_refused_[static_cast<std::size_t>(why)]));
         });
  one("rdmax_serve_pool_queued_jobs", "gauge",
      "Disk and hashing jobs waiting for a worker (walks, reads, digests).", pool_queued);
  return out;
}

}  // namespace rdmax::sender
