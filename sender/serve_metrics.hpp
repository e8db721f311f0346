#pragma once
// rdma-send --serve --metrics: what the server's event loop counts, and the metrics server's
// thread reads (render(), common/metrics/metrics_server.hpp). Every figure is an atomic
// written by the loop alone; the bytes and files sent are the loop's 1-second count of every
// session, reaped or live.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "protocol/wire.hpp"

namespace rdmax::sender {

// Why a connect request was refused before any queue pair (--allow/--deny, penalties, full).
enum class FetcherRefusal : std::uint8_t {
  Address,     // --allow / --deny
  SlowedDown,  // failed to authenticate recently (common/crypto/auth_penalties.hpp)
  Full,        // --max-connections, or stopping
};

class ServeMetrics {
 public:
  using Counter = std::atomic<std::uint64_t>;

  Counter connections_accepted{0};
  Counter connections_open{0};  // a gauge, set on each count
  Counter sent_bytes{0};        // chunk bytes written into fetchers' memory
  Counter files_sent{0};        // files a fetcher verified
  Counter pool_queued{0};       // a gauge: jobs waiting for a worker

  void count(FetcherRefusal why) { add(fetchers_refused_[static_cast<std::size_t>(why)]); }
  // A request answered with Reject (refused before the session), by its reason.
  void count(proto::RejectReason reason) {
    add(requests_refused_[static_cast<std::size_t>(reason) & 15]);
  }
  std::uint64_t requests_refused(proto::RejectReason reason) const {
    return requests_refused_[static_cast<std::size_t>(reason) & 15].load(std::memory_order_relaxed);
  }
  std::string render() const;

 private:
  static void add(Counter& c) { c.fetch_add(1, std::memory_order_relaxed); }
  std::array<Counter, 3> fetchers_refused_{};
  std::array<Counter, 16> requests_refused_{};  // by RejectReason's value
};

}  // namespace rdmax::sender
