#include "receiver/metrics_server.hpp"

#include <httplib.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/os/fd.hpp"

namespace rdmax::receiver {
namespace {

// httplib's own default is SO_REUSEPORT, with which a second process binds a port in use
// without an error: SO_REUSEADDR alone lets a restart rebind at once and still refuses a
// port another listener holds.
void reuse_address(int fd) {
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

std::string remedy(int error) {
  switch (error) {
    case EADDRINUSE:
      return "the port is in use (another rdma-recv?): stop the other listener or choose "
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

}  // namespace

std::string metrics_port_problem(const MetricsAddress& address) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr)
    return "not a numeric address";
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
  Fd fd(::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol));
  if (!fd) return std::strerror(errno);
  reuse_address(fd.get());
  if (found->ai_family == AF_INET6) {
    const int no = 0;  // [::] takes IPv4 too, as the server's socket does
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
  }
  if (::bind(fd.get(), found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd.get(), 1) != 0)
    return remedy(errno);
  return {};
}

MetricsServer::MetricsServer(const MetricsAddress& address, const ReceiverMetrics& metrics)
    : server_(std::make_unique<httplib::Server>()), port_(address.port) {
  // Two threads serve scrapes; a Prometheus server keeps one connection alive.
  server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  server_->set_socket_options(reuse_address);
  // Short, so that stop() returns soon: a worker waits this long on an idle keep-alive.
  server_->set_keep_alive_timeout(1);
  server_->set_read_timeout(2, 0);
  server_->set_write_timeout(2, 0);
  server_->Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& response) {
    response.set_content(metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  const int flags = AI_NUMERICHOST | AI_PASSIVE;
  if (address.port == 0) {  // any free port (the benchmark's): the one bound is port()
    const int bound = server_->bind_to_any_port(address.host.c_str(), flags);
    if (bound <= 0) throw MetricsBindError("--metrics " + address.host + ": cannot listen");
    port_ = static_cast<std::uint16_t>(bound);
    return;
  }
  if (!server_->bind_to_port(address.host.c_str(), address.port, flags)) {
    // httplib says only that it failed: bind a socket of our own for the reason.
    std::string why = metrics_port_problem(address);
    throw MetricsBindError("--metrics " + to_string(address) + ": cannot listen: " +
                           (why.empty() ? std::string("the address was refused") : why));
  }
}

void MetricsServer::start() {
  thread_ = std::thread([this] {
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    if (!server_->listen_after_bind()) spdlog::error("--metrics: the server stopped serving");
    finished_ = true;
  });
  // stop() does nothing before the server runs: wait until it does (or gave up).
  while (!server_->is_running() && !finished_)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void MetricsServer::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

MetricsServer::~MetricsServer() {
  stop();
}

}  // namespace rdmax::receiver
