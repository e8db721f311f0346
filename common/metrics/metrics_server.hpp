#pragma once
// --metrics (both daemons): serves a Prometheus text page at http://ADDRESS:PORT/metrics, as
// the render function makes it (rdma-recv: ReceiverMetrics::render(), rdma-send --serve:
// ServeMetrics::render()). Its thread is its own, never the event loop's: a render reads
// atomics (and the receiver's free space), so it cannot slow a transfer, and it takes no lock
// the loop takes.
//
// One thread polls every client, so that no client can hold the server by being slow: a
// thread per connection (what an HTTP library does) is starved by as many clients as threads
// that send their request a byte at a time. The resources a client can take are bounded:
// kMaxClients connections at once (one more evicts the oldest, so a fresh scrape is always
// taken at once), kMaxRequestBytes of request, and kRequestDeadline from accept to the last
// byte of the answer, after which the connection is closed whatever it was doing. Each answer
// closes its connection (no keep-alive: a scrape is one request).
//
// Lifecycle: the constructor binds the port (so that a port in use or an address not of this
// host is a usage error before any device work); start() serves from a thread of its own
// with every signal blocked (the loop's signalfd takes SIGINT and SIGTERM); stop() (and the
// destructor) wakes it, waits for it and closes every connection.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/metrics/metrics_address.hpp"
#include "common/os/event_fd.hpp"
#include "common/os/fd.hpp"

namespace rdmax {

// The port could not be bound; what() says why and what to do.
class MetricsBindError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why binding `address` fails now (a port in use, an address not of this host, a port below
// 1024 without the capability), or empty: it binds. What --check says, and what the server
// says when its own bind fails.
std::string metrics_port_problem(const MetricsAddress& address);

class MetricsServer {
 public:
  static constexpr std::size_t kMaxClients = 16;
  static constexpr std::size_t kMaxRequestBytes = 8192;
  static constexpr std::chrono::milliseconds kRequestDeadline{2000};

  // Called on the server's thread for every scrape: it must read only what is safe to read
  // from there (atomics).
  using Render = std::function<std::string()>;
  MetricsServer(const MetricsAddress& address, Render render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  void start();
  void stop();
  // The port bound: the one asked for, or with port 0 (no option takes it) any free one.
  std::uint16_t port() const { return port_; }

 private:
  struct Client;
  void serve();

  Render render_;
  Fd listener_;
  std::uint16_t port_;
  EventFd wake_;  // stop()
  std::thread thread_;
};

// A daemon's --metrics, bound before any device work (a port in use is a usage error and
// nothing was started): made in `into` when `address` is given; false, and said, when it
// cannot bind.
[[nodiscard]] bool bind_metrics(std::optional<MetricsServer>& into,
                                const std::optional<MetricsAddress>& address,
                                MetricsServer::Render render);
// Starts it, if there is one, once the loop blocks SIGINT and SIGTERM in this thread (its
// own thread blocks every signal), and says where it serves.
void start_metrics(std::optional<MetricsServer>& server,
                   const std::optional<MetricsAddress>& address);

}  // namespace rdmax
