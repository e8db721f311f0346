#include "common/cli/service_notify.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>

#include "protocol/sizes.hpp"

#ifdef RDMAX_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace rdmax {

std::string format_service_status(const ServiceStatus& status) {
  auto plural = [](std::uint64_t n, const char* noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
  };
  return plural(status.connections, "connection") + ", " + proto::format_size(status.bytes) + " " +
         status.bytes_done + ", " + plural(status.files, "file") + " " + status.files_done;
}

ServiceNotifier::ServiceNotifier() {
#ifdef RDMAX_HAVE_SYSTEMD
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
  std::uint64_t usec = 0;
  // > 0: WATCHDOG_USEC is set (and WATCHDOG_PID, if set, is this process).
  if (enabled_ && ::sd_watchdog_enabled(0, &usec) > 0)
    watchdog_ = std::chrono::microseconds(static_cast<std::int64_t>(usec));
#endif
}

void ServiceNotifier::send(const std::string& state) {
#ifdef RDMAX_HAVE_SYSTEMD
  if (!enabled_) return;
  if (const int rc = ::sd_notify(0, state.c_str()); rc < 0)
    spdlog::debug("sd_notify: {}", std::strerror(-rc));
#else
  (void)state;
#endif
}

void ServiceNotifier::ready(const ServiceStatus& status, Clock::time_point now) {
  if (!enabled_) return;
  last_status_ = format_service_status(status);
  status_sent_ = watchdog_sent_ = now;
  send("READY=1\nSTATUS=" + last_status_ + (watchdog_.count() > 0 ? "\nWATCHDOG=1" : ""));
  if (watchdog_.count() > 0)
    spdlog::debug("systemd watchdog: {} ms, pinged every half of it", watchdog_.count() / 1000);
}

void ServiceNotifier::tick(const ServiceStatus& status, Clock::time_point now) {
  if (!enabled_ || stopping_sent_) return;
  if (watchdog_.count() > 0 && now - watchdog_sent_ >= watchdog_ / 2) {
    watchdog_sent_ = now;
    send("WATCHDOG=1");
  }
  if (now - status_sent_ < kStatusInterval) return;
  std::string line = format_service_status(status);
  if (line == last_status_) return;
  last_status_ = std::move(line);
  status_sent_ = now;
  send("STATUS=" + last_status_);
}

void ServiceNotifier::stopping() {
  if (!enabled_ || stopping_sent_) return;
  stopping_sent_ = true;
  send("STOPPING=1\nSTATUS=shutting down");
}

}  // namespace rdmax
