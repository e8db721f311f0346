// rdma-recv --metrics: the address it takes, the text it serves, and the server itself over a
// real socket on the loopback (receiver/metrics.hpp, common/metrics/metrics_server.hpp).

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics/metrics_server.hpp"
#include "common/os/fd.hpp"
#include "common/work/work_pool.hpp"
#include "receiver/metrics.hpp"

namespace rdmax::receiver {
namespace metrics_test {

// A port of the loopback that nothing listens on now.
std::uint16_t free_port() {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t length = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &length);
  return ntohs(a.sin_port);
}

// GET `path` from 127.0.0.1:port, the whole answer (headers and body), or empty.
std::string http_get(std::uint16_t port, const std::string& path) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return {};
  const timeval patience{5, 0};  // a server that does not answer fails the test, not hangs it
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
  if (::write(fd.get(), request.data(), request.size()) != static_cast<ssize_t>(request.size()))
    return {};
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;)
    answer.append(buffer, static_cast<std::size_t>(n));
  return answer;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(MetricsAddress, TakesNumericAddressesAndAPort) {
  EXPECT_EQ(parse_metrics_address("127.0.0.1:9464"), (MetricsAddress{"127.0.0.1", 9464}));
  EXPECT_EQ(parse_metrics_address("0.0.0.0:1"), (MetricsAddress{"0.0.0.0", 1}));
  EXPECT_EQ(parse_metrics_address("[::1]:65535"), (MetricsAddress{"::1", 65535}));
  EXPECT_EQ(parse_metrics_address("[::]:9464"), (MetricsAddress{"::", 9464}));
  EXPECT_EQ(to_string(MetricsAddress{"::1", 9464}), "[::1]:9464");
  EXPECT_EQ(to_string(MetricsAddress{"127.0.0.1", 9464}), "127.0.0.1:9464");
}

TEST(MetricsAddress, RefusesWhatItWouldNotBindExactly) {
  for (const char* bad :
       {"9464", ":9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
        "127.0.0.1:94x", "localhost:9464", "::1:9464", "[::1]9464", "[127.0.0.1]:9464", "[::1:9464",
        "256.0.0.1:9464", "127.0.0.1:-1", ""})
    EXPECT_FALSE(parse_metrics_address(bad)) << bad;
}

TEST(ReceiverMetrics, RendersEverySeriesFromTheStartAndCounts) {
  ReceiverMetrics m;
  std::string text = m.render();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');  // the format's last line ends too
  EXPECT_TRUE(has_line(text, "# TYPE rdmax_received_bytes_total counter"));
  EXPECT_TRUE(has_line(text, "rdmax_received_bytes_total 0"));
  EXPECT_TRUE(has_line(text, "rdmax_files_total{outcome=\"bad_digest\"} 0"));
  EXPECT_TRUE(has_line(text, "rdmax_files_refused_total{reason=\"no_space\"} 0"));
  EXPECT_TRUE(has_line(text, "rdmax_senders_refused_total{reason=\"slowed_down\"} 0"));
  EXPECT_TRUE(has_line(text, "# TYPE rdmax_connections gauge"));
  EXPECT_NE(text.find("rdmax_build_info{version=\""), std::string::npos);
  EXPECT_NE(text.find("digests=\"sha256,fsverity-sha256,blake3\",protocols=\"1,2\"} 1\n"),
            std::string::npos)
      << text;

  m.received_bytes += 4096;
  m.count(FileOutcome::Good);
  m.count(FileOutcome::Good);
  m.count_refused(proto::RejectReason::Exists);
  m.count(SenderRefusal::WrongKey);
  m.count_verification(std::chrono::milliseconds(1500));
  m.connections_open = 3;
  text = m.render();
  EXPECT_TRUE(has_line(text, "rdmax_received_bytes_total 4096"));
  EXPECT_TRUE(has_line(text, "rdmax_files_total{outcome=\"good\"} 2"));
  EXPECT_TRUE(has_line(text, "rdmax_files_refused_total{reason=\"exists\"} 1"));
  EXPECT_TRUE(has_line(text, "rdmax_senders_refused_total{reason=\"wrong_key\"} 1"));
  EXPECT_TRUE(has_line(text, "rdmax_verifications_total 1"));
  EXPECT_TRUE(has_line(text, "rdmax_verification_seconds_total 1.500000"));
  EXPECT_TRUE(has_line(text, "rdmax_connections 3"));
  EXPECT_EQ(m.files(FileOutcome::Good), 2u);
}

TEST(ReceiverMetrics, ReadsTheFreeSpaceOfItsDirectory) {
  Fd dir(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ReceiverMetrics m(dir.get());
  dir.reset();  // the metrics keep a descriptor of their own
  EXPECT_NE(m.render().find("\nrdmax_dir_free_bytes "), std::string::npos);
  EXPECT_EQ(ReceiverMetrics().render().find("rdmax_dir_free_bytes"), std::string::npos);
}

TEST(MetricsServer, ServesTheMetricsAndRefusesAPortInUse) {
  ReceiverMetrics m;
  m.received_bytes += 7;
  const MetricsAddress address{"127.0.0.1", free_port()};
  MetricsServer server(address, [&m] { return m.render(); });
  // Bound, not yet serving: a second server on the port is refused at once, with the reason.
  try {
    MetricsServer second(address, [&m] { return m.render(); });
    ADD_FAILURE() << "a second server bound a port in use";
  } catch (const MetricsBindError& e) {
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  EXPECT_NE(metrics_port_problem(address).find("in use"), std::string::npos);
  server.start();
  const std::string answer = http_get(address.port, "/metrics");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\nrdmax_received_bytes_total 7\n"), std::string::npos) << answer;
  EXPECT_EQ(http_get(address.port, "/other").rfind("HTTP/1.1 404", 0), 0u);
  const auto before = std::chrono::steady_clock::now();
  server.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(3));
  EXPECT_EQ(metrics_port_problem(address), "");  // free again
}

// Clients that connect and send their request a byte at a time, from a thread of their own,
// for as long as they live: each byte comes well within any timeout per read, so only a
// deadline per request (or a server that polls them all) gets rid of them.
class SlowClients {
 public:
  SlowClients(std::uint16_t port, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
      fds_.push_back(std::move(fd));
    }
    thread_ = std::thread([this] {
      static const std::string request = "GET /metrics HTTP/1.1\r\nHost: a-very-slow-client";
      for (std::size_t at = 0; !stop_; at = (at + 1) % request.size()) {
        for (const Fd& fd : fds_) (void)::send(fd.get(), &request[at], 1, MSG_NOSIGNAL);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  ~SlowClients() {
    stop_ = true;
    thread_.join();
  }
  // Whether the server closed the first one (it reads end of file, or a reset).
  bool first_closed_within(std::chrono::seconds patience) const {
    const timeval wait{static_cast<time_t>(patience.count()), 0};
    ::setsockopt(fds_.front().get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    char byte = 0;
    const ssize_t n = ::recv(fds_.front().get(), &byte, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  std::vector<Fd> fds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The metrics server answers a scrape at once while slow clients hold connections open:
// fewer of them than it serves at once, and many more (the oldest makes room). Each slow one
// is dropped at its request's deadline. (A thread per connection, as an HTTP library serves,
// is starved by as many slow clients as it has threads.)
TEST(MetricsServer, SlowClientsDoNotStarveAScrape) {
  ReceiverMetrics m;
  m.received_bytes += 9;
  const MetricsAddress address{"127.0.0.1", free_port()};
  MetricsServer server(address, [&m] { return m.render(); });
  server.start();
  const auto answered_at_once = [&] {
    const auto before = std::chrono::steady_clock::now();
    const std::string answer = http_get(address.port, "/metrics");
    EXPECT_NE(answer.find("\nrdmax_received_bytes_total 9\n"), std::string::npos) << answer;
    // Well below the slow clients' deadline (after which even a starved server would have
    // room again), and far above the few milliseconds a scrape takes, so that a loaded
    // machine (sanitizers, two cores) does not make it fail.
    static_assert(MetricsServer::kRequestDeadline > std::chrono::milliseconds(1500));
    return std::chrono::steady_clock::now() - before < std::chrono::milliseconds(1500);
  };
  {
    SlowClients few(address.port, 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // all of them under way
    EXPECT_TRUE(answered_at_once());
    EXPECT_TRUE(few.first_closed_within(std::chrono::seconds(3)))
        << "a slow client outlived its request's deadline";
  }
  {
    SlowClients many(address.port, 3 * MetricsServer::kMaxClients);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_TRUE(answered_at_once());
    EXPECT_TRUE(answered_at_once());
  }
}

TEST(MetricsServer, NamesAnAddressThatIsNotThisHosts) {
  ReceiverMetrics m;
  // TEST-NET-1 (RFC 5737): never an address of this host.
  const MetricsAddress address{"192.0.2.1", free_port()};
  EXPECT_NE(metrics_port_problem(address).find("not an address of this host"), std::string::npos);
  EXPECT_THROW(MetricsServer(address, [&m] { return m.render(); }), MetricsBindError);
}

TEST(WorkPoolQueued, CountsJobsPostedAndNotStarted) {
  WorkPool pool(1);
  WorkQueue first(pool), second(pool);
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  first.post(
      [&] {
        started = true;
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      {});
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  first.post([] {}, {});
  second.post([] {}, {});
  second.post([] {}, {});
  EXPECT_EQ(pool.queued(), 3u);  // the running job is not queued
  second.cancel();
  EXPECT_EQ(pool.queued(), 1u);
  release = true;
  while (!first.idle()) pool.run_completions();
  EXPECT_EQ(pool.queued(), 0u);
}

}  // namespace metrics_test
}  // namespace rdmax::receiver
