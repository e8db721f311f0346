#pragma once
// A daemon under systemd (Type=notify: rdma-recv, and rdma-send --serve): tells the service manager
// when it listens (READY=1), what it is doing (a one-line STATUS=), that it is alive (WATCHDOG=1,
// when the unit sets WatchdogSec=) and that it is stopping (STOPPING=1). Through libsystemd's
// sd_notify, which does nothing when NOTIFY_SOCKET is unset: outside systemd (or in a build
// without libsystemd) every call here is a no-op.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace rdmax {

// What the status line reports: counters the daemon keeps, and what it does with bytes and
// files (a receiver: "received", "stored"; a fetch server: "sent", "sent").
struct ServiceStatus {
  std::size_t connections = 0;
  std::uint64_t bytes = 0;
  std::uint64_t files = 0;
  const char* bytes_done = "received";
  const char* files_done = "stored";
};

// "2 connections, 1.5 GiB received, 3 files stored": the text after STATUS=.
std::string format_service_status(const ServiceStatus& status);

class ServiceNotifier {
 public:
  using Clock = std::chrono::steady_clock;
  // At most this often a changed status line goes out (systemctl status shows the last).
  static constexpr auto kStatusInterval = std::chrono::seconds(1);

  // Reads the environment: whether systemd listens, and the watchdog interval.
  ServiceNotifier();

  bool under_service_manager() const { return enabled_; }
  // The watchdog interval systemd asked for (WatchdogSec=), zero when there is none.
  std::chrono::microseconds watchdog_interval() const { return watchdog_; }

  void ready(const ServiceStatus& status, Clock::time_point now);
  // Call often (the daemon's tick): sends STATUS= when it changed and kStatusInterval has
  // passed, and WATCHDOG=1 every half watchdog interval.
  void tick(const ServiceStatus& status, Clock::time_point now);
  void stopping();

 private:
  void send(const std::string& state);

  bool enabled_ = false;
  std::chrono::microseconds watchdog_{0};
  std::string last_status_;
  Clock::time_point status_sent_{};
  Clock::time_point watchdog_sent_{};
  bool stopping_sent_ = false;
};

}  // namespace rdmax
