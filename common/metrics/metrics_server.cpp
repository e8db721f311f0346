#include "common/metrics/metrics_server.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <memory>
#include <optional>
#include <vector>

namespace rdmax {
namespace {

// Not SO_REUSEPORT, with which a second process binds a port in use without an error:
// SO_REUSEADDR alone lets a restart rebind at once and still refuses a port another listener
// holds.
void reuse_address(int fd) {
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

std::string remedy(int error) {
  switch (error) {
    case EADDRINUSE:
      return "the port is in use (another rdma-recv or rdma-send --serve?): stop the other "
             "listener or choose "
             "another --metrics port";
    case EACCES:
      return "ports below 1024 need CAP_NET_BIND_SERVICE: choose a port from 1024 up";
    case EADDRNOTAVAIL:
      return "not an address of this host (ip addr lists them); 127.0.0.1 keeps the metrics "
             "on this host";
    default:
      return std::strerror(error);
  }
}

// A listening socket on `address`, or the errno of the step that failed (and a null Fd).
// Non-blocking, so that the serving thread never waits in accept.
struct Bound {
  Fd fd;
  int error = 0;
};
Bound bind_listener(const MetricsAddress& address, int backlog) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr)
    return {Fd(), EINVAL};
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
  Fd fd(::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                 found->ai_protocol));
  if (!fd) return {Fd(), errno};
  reuse_address(fd.get());
  if (found->ai_family == AF_INET6) {
    const int no = 0;  // [::] takes IPv4 too
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
  }
  if (::bind(fd.get(), found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd.get(), backlog) != 0)
    return {Fd(), errno};
  return {std::move(fd), 0};
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage a{};
  socklen_t length = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0) return 0;
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
}

// The answer to one request (its head and the bytes up to the blank line), whole, closing.
std::string answer(const std::string& request, const MetricsServer::Render& render) {
  const auto reply = [](const char* status, const std::string& type, const std::string& body) {
    return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
  };
  const std::string line = request.substr(0, request.find("\r\n"));
  if (line.rfind("GET ", 0) != 0)
    return reply("405 Method Not Allowed", "text/plain; charset=utf-8", "GET only\n");
  const std::string target = line.substr(4, line.find(' ', 4) - 4);
  if (target != "/metrics" && target.rfind("/metrics?", 0) != 0)
    return reply("404 Not Found", "text/plain; charset=utf-8", "see /metrics\n");
  try {
    return reply("200 OK", "text/plain; version=0.0.4; charset=utf-8", render());
  } catch (const std::exception& e) {
    return reply("500 Internal Server Error", "text/plain; charset=utf-8", e.what());
  }
}

}  // namespace

std::string metrics_port_problem(const MetricsAddress& address) {
  const Bound bound = bind_listener(address, 1);
  if (bound.fd) return {};
  return bound.error == EINVAL ? "not a numeric address" : remedy(bound.error);
}

// One connection: its request as it comes, then its answer as it goes.
struct MetricsServer::Client {
  Fd fd;
  std::chrono::steady_clock::time_point deadline;
  std::string request;
  std::string reply;  // non-empty once the request is whole
  std::size_t sent = 0;
};

MetricsServer::MetricsServer(const MetricsAddress& address, Render render)
    : render_(std::move(render)), port_(address.port) {
  Bound bound = bind_listener(address, static_cast<int>(kMaxClients));
  if (!bound.fd) {
    const std::string why = bound.error == EINVAL ? "not a numeric address" : remedy(bound.error);
    throw MetricsBindError("--metrics " + to_string(address) + ": cannot listen: " + why);
  }
  listener_ = std::move(bound.fd);
  if (address.port == 0) port_ = bound_port(listener_.get());  // any free port (the benchmark's)
}

void MetricsServer::start() {
  thread_ = std::thread([this] {
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    try {
      serve();
    } catch (const std::exception& e) {
      spdlog::error("--metrics: the server stopped serving: {}", e.what());
    }
  });
}

void MetricsServer::serve() {
  using Clock = std::chrono::steady_clock;
  std::list<Client> clients;  // oldest first, so also by deadline
  std::vector<pollfd> fds;
  // After an accept that failed for want of descriptors (the daemon's own limit), the
  // listener rests a while: polled at once, its pending connection would spin this thread.
  Clock::time_point accept_again{};
  for (;;) {
    const auto now = Clock::now();
    // Past its deadline, a client is dropped, whatever it was doing.
    while (!clients.empty() && clients.front().deadline <= now) clients.pop_front();
    const bool accepting = now >= accept_again;
    fds.clear();
    fds.push_back({wake_.fd(), POLLIN, 0});
    fds.push_back({listener_.get(), static_cast<short>(accepting ? POLLIN : 0), 0});
    for (const Client& c : clients)
      fds.push_back({c.fd.get(), static_cast<short>(c.reply.empty() ? POLLIN : POLLOUT), 0});
    std::optional<Clock::time_point> wake_at;
    if (!clients.empty()) wake_at = clients.front().deadline;
    if (!accepting) wake_at = std::min(wake_at.value_or(accept_again), accept_again);
    int timeout_ms = -1;
    if (wake_at)
      timeout_ms =
          static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*wake_at - now).count());
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    if (fds[0].revents != 0) return;  // stop()
    // Each client's turn, before new ones shift the list.
    std::size_t i = 2;
    for (auto it = clients.begin(); it != clients.end(); ++i) {
      const short events = fds[i].revents;
      bool done = (events & (POLLERR | POLLNVAL)) != 0;
      if (!done && (events & POLLIN) != 0) {
        char buffer[2048];
        const ssize_t n = ::recv(it->fd.get(), buffer, sizeof buffer, 0);
        if (n > 0) {
          it->request.append(buffer, static_cast<std::size_t>(n));
          if (it->request.find("\r\n\r\n") != std::string::npos)
            it->reply = answer(it->request, render_);
          else if (it->request.size() > kMaxRequestBytes)
            done = true;
        } else {
          done = n == 0 || (errno != EAGAIN && errno != EINTR);
        }
      } else if (!done && (events & (POLLOUT | POLLHUP)) != 0 && !it->reply.empty()) {
        const ssize_t n = ::send(it->fd.get(), it->reply.data() + it->sent,
                                 it->reply.size() - it->sent, MSG_NOSIGNAL);
        if (n > 0) it->sent += static_cast<std::size_t>(n);
        done = it->sent == it->reply.size() || (n < 0 && errno != EAGAIN && errno != EINTR);
      } else if (!done && (events & POLLHUP) != 0) {
        done = true;
      }
      it = done ? clients.erase(it) : std::next(it);
    }
    if ((fds[1].revents & POLLIN) == 0) continue;
    for (;;) {
      Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
          accept_again = Clock::now() + std::chrono::milliseconds(100);
        break;  // EAGAIN: none left; a connection that went meanwhile: the next poll
      }
      // At the bound, the oldest goes: a scrape takes a millisecond, so the oldest is the
      // slowest, and a fresh client is always served.
      if (clients.size() >= kMaxClients) clients.pop_front();
      clients.push_back({std::move(fd), Clock::now() + kRequestDeadline, {}, {}, 0});
    }
  }
}

void MetricsServer::stop() {
  if (thread_.joinable()) {
    wake_.signal();
    thread_.join();  // its clients' connections close with it
  }
  listener_.reset();  // the port is free again
}

MetricsServer::~MetricsServer() {
  stop();
}

bool bind_metrics(std::optional<MetricsServer>& into, const std::optional<MetricsAddress>& address,
                  MetricsServer::Render render) {
  if (!address) return true;
  try {
    into.emplace(*address, std::move(render));
    return true;
  } catch (const MetricsBindError& e) {
    spdlog::error("{}", e.what());
    return false;
  }
}

void start_metrics(std::optional<MetricsServer>& server,
                   const std::optional<MetricsAddress>& address) {
  if (!server || !address) return;
  server->start();
  spdlog::info("metrics on http://{}/metrics", to_string(*address));
}

}  // namespace rdmax
