#pragma once
// rdma-recv --metrics: serves ReceiverMetrics::render() at http://ADDRESS:PORT/metrics
// (cpp-httplib). Its threads are its own, never the event loop's: a scrape reads atomics and
// the directory's free space, so it cannot slow a transfer, and it takes no lock the loop
// takes.
//
// Lifecycle: the constructor binds the port (so that a port in use or an address not of this
// host is a usage error before any device work); start() serves from a thread of its own
// with every signal blocked (the loop's signalfd takes SIGINT and SIGTERM); the destructor
// stops it, bounded by the keep-alive timeout.

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>

#include "receiver/metrics.hpp"

namespace httplib {
class Server;
}

namespace rdmax::receiver {

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
  MetricsServer(const MetricsAddress& address, const ReceiverMetrics& metrics);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  void start();
  void stop();
  // The port bound: the one asked for, or with port 0 (no option takes it) any free one.
  std::uint16_t port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::uint16_t port_;
  std::thread thread_;
  std::atomic<bool> finished_{false};  // the serving thread returned (a failure, or stop())
};

}  // namespace rdmax::receiver
