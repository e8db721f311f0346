#include "common/rdma/cm_id.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "common/error.hpp"

namespace rdmax {
namespace {

struct AddrinfoDeleter {
  void operator()(addrinfo* ai) const noexcept { ::freeaddrinfo(ai); }
};
using AddrinfoPtr = std::unique_ptr<addrinfo, AddrinfoDeleter>;

// Resolves `host` (name, IPv4 or IPv6 literal, optionally "[...]") and `port` to the
// first address getaddrinfo returns. Throws "cannot resolve host X: reason".
AddrinfoPtr resolve(const char* host, uint16_t port, int flags) {
  std::string name = host;
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | flags;
  const std::string service = std::to_string(port);
  addrinfo* result = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    const std::string reason =
        rc == EAI_SYSTEM ? std::system_category().message(errno) : ::gai_strerror(rc);
    throw std::runtime_error("cannot resolve host " + std::string(host) + ": " + reason);
  }
  return AddrinfoPtr(result);
}

int to_timeout_ms(std::chrono::milliseconds timeout) {
  return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(timeout.count(), 1, INT_MAX));
}

}  // namespace

CmId::CmId(EventChannel& channel, void* context) {
  rdma_cm_id* id = nullptr;
  if (::rdma_create_id(channel.get(), &id, context, RDMA_PS_TCP) != 0) throw_sys("rdma_create_id");
  id_.reset(id);
}

CmId CmId::adopt(rdma_cm_id* id) noexcept {
  return CmId(id);
}

void CmId::resolve_addr(const char* host, uint16_t port, std::chrono::milliseconds timeout,
                        const char* source) {
  const AddrinfoPtr addr = resolve(host, port, 0);
  AddrinfoPtr from;
  if (source != nullptr) from = resolve(source, 0, AI_PASSIVE);
  if (::rdma_resolve_addr(id_.get(), from ? from->ai_addr : nullptr, addr->ai_addr,
                          to_timeout_ms(timeout)) != 0) {
    throw_sys("rdma_resolve_addr " + std::string(host));
  }
}

void CmId::resolve_route(std::chrono::milliseconds timeout) {
  if (::rdma_resolve_route(id_.get(), to_timeout_ms(timeout)) != 0) throw_sys("rdma_resolve_route");
}

void CmId::connect(rdma_conn_param& param) {
  if (::rdma_connect(id_.get(), &param) != 0) throw_sys("rdma_connect");
}

void CmId::bind_and_listen(const char* addr_or_null, uint16_t port, int backlog) {
  if (addr_or_null == nullptr) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(port);
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::rdma_bind_addr(id_.get(), reinterpret_cast<sockaddr*>(&any)) != 0) {
      throw_sys("rdma_bind_addr 0.0.0.0:" + std::to_string(port));
    }
  } else {
    const AddrinfoPtr addr = resolve(addr_or_null, port, AI_PASSIVE);
    if (::rdma_bind_addr(id_.get(), addr->ai_addr) != 0) {
      throw_sys("rdma_bind_addr " + sockaddr_to_string(addr->ai_addr));
    }
  }
  if (::rdma_listen(id_.get(), backlog) != 0) throw_sys("rdma_listen");
}

void CmId::accept(rdma_conn_param& param) {
  if (::rdma_accept(id_.get(), &param) != 0) throw_sys("rdma_accept");
}

void CmId::reject(const void* private_data, uint8_t length) {
  if (::rdma_reject(id_.get(), private_data, length) != 0) throw_sys("rdma_reject");
}

void CmId::disconnect() noexcept {
  ::rdma_disconnect(id_.get());
}

void CmId::set_ack_timeout(std::uint8_t exponent) {
  if (::rdma_set_option(id_.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &exponent,
                        sizeof exponent) != 0)
    throw_sys("rdma_set_option(ACK_TIMEOUT)");
}

std::string CmId::peer_address() const {
  return sockaddr_to_string(::rdma_get_peer_addr(id_.get()));
}

std::string CmId::local_address() const {
  return sockaddr_to_string(::rdma_get_local_addr(id_.get()));
}

uint16_t CmId::local_port() const noexcept {
  return ntohs(::rdma_get_src_port(id_.get()));
}

std::string host_and_port(const std::string& host, std::uint16_t port) {
  const bool bare_ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (bare_ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string sockaddr_to_string(const sockaddr* addr) {
  if (addr == nullptr) return {};
  char text[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) == nullptr) return {};
    return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text) == nullptr) return {};
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return {};
}

}  // namespace rdmax
