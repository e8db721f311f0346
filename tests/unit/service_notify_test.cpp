// The daemons' systemd notifications (common/cli/service_notify.hpp) against a notify socket
// of the test's own: what systemd would receive, when, and nothing without NOTIFY_SOCKET.

#include "common/cli/service_notify.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <optional>
#include <string>

#include "common/os/fd.hpp"
#include "temp_dir.hpp"

namespace rdmax {
namespace {

using namespace std::chrono_literals;
using Clock = ServiceNotifier::Clock;

TEST(ServiceStatusLine, CountsConnectionsBytesAndFiles) {
  EXPECT_EQ(format_service_status({}), "0 connections, 0 B received, 0 files stored");
  EXPECT_EQ(format_service_status({1, 3 * 1024 * 1024 / 2, 1}),
            "1 connection, 1.5 MiB received, 1 file stored");
  EXPECT_EQ(format_service_status({2, 4096, 3, "sent", "sent"}),
            "2 connections, 4.0 KiB sent, 3 files sent");
}

// A unix datagram socket standing in for systemd's, named by NOTIFY_SOCKET while it lives.
class NotifySocket {
 public:
  NotifySocket() : dir_("rdmax-notify") {
    path_ = (dir_.path() / "notify").string();
    fd_ = Fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error("bind " + path_);
    ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~NotifySocket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
  }
  // The next datagram, if one is waiting.
  std::optional<std::string> receive() {
    char buffer[4096];
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n < 0) return std::nullopt;
    return std::string(buffer, static_cast<std::size_t>(n));
  }

 private:
  TempDir dir_;
  std::string path_;
  Fd fd_;
};

TEST(ServiceNotifier, DoesNothingWithoutNotifySocket) {
  ::unsetenv("NOTIFY_SOCKET");
  ServiceNotifier notifier;
  EXPECT_FALSE(notifier.under_service_manager());
  const auto now = Clock::now();
  notifier.ready({}, now);  // must not crash or block
  notifier.tick({1, 1, 1}, now + 5s);
  notifier.stopping();
}

TEST(ServiceNotifier, ReadyThenStatusAtMostOncePerSecondThenStopping) {
  NotifySocket socket;
  ServiceNotifier notifier;
  ASSERT_TRUE(notifier.under_service_manager());
  EXPECT_EQ(notifier.watchdog_interval(), 0us);
  const auto t0 = Clock::now();
  notifier.ready({}, t0);
  EXPECT_EQ(socket.receive(), "READY=1\nSTATUS=0 connections, 0 B received, 0 files stored");

  notifier.tick({1, 4096, 0}, t0 + 500ms);  // too soon
  EXPECT_EQ(socket.receive(), std::nullopt);
  notifier.tick({1, 4096, 0}, t0 + 1s);
  EXPECT_EQ(socket.receive(), "STATUS=1 connection, 4.0 KiB received, 0 files stored");
  notifier.tick({1, 4096, 0}, t0 + 3s);  // unchanged: nothing
  EXPECT_EQ(socket.receive(), std::nullopt);
  notifier.tick({0, 4096, 1}, t0 + 4s);
  EXPECT_EQ(socket.receive(), "STATUS=0 connections, 4.0 KiB received, 1 file stored");

  notifier.stopping();
  EXPECT_EQ(socket.receive(), "STOPPING=1\nSTATUS=shutting down");
  notifier.stopping();                 // once
  notifier.tick({2, 0, 0}, t0 + 10s);  // and nothing after it
  EXPECT_EQ(socket.receive(), std::nullopt);
}

TEST(ServiceNotifier, PingsTheWatchdogEveryHalfInterval) {
  NotifySocket socket;
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  ServiceNotifier notifier;
  EXPECT_EQ(notifier.watchdog_interval(), 2s);
  const auto t0 = Clock::now();
  notifier.ready({}, t0);
  EXPECT_EQ(socket.receive(),
            "READY=1\nSTATUS=0 connections, 0 B received, 0 files stored\nWATCHDOG=1");
  notifier.tick({}, t0 + 900ms);
  EXPECT_EQ(socket.receive(), std::nullopt);
  notifier.tick({}, t0 + 1s);
  EXPECT_EQ(socket.receive(), "WATCHDOG=1");
  notifier.tick({}, t0 + 1500ms);
  EXPECT_EQ(socket.receive(), std::nullopt);
  notifier.tick({}, t0 + 2s);
  EXPECT_EQ(socket.receive(), "WATCHDOG=1");
}

}  // namespace
}  // namespace rdmax
