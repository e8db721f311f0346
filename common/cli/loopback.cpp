#include "common/cli/loopback.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <memory>

namespace rdmax {
namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// "LOCALHOST." is localhost too: names are case-insensitive, a trailing dot is the root.
std::string lower_without_root(std::string_view host) {
  std::string name(host);
  if (!name.empty() && name.back() == '.') name.pop_back();
  for (char& c : name)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return name;
}

// "[::1]" and "::1%lo" as ::1: the brackets of a URL-style host, the zone of a link.
std::string bare_address(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (const auto zone = host.find('%'); zone != std::string_view::npos) host = host.substr(0, zone);
  return std::string(host);
}

bool is_loopback_ipv4(const in_addr& address) {
  return (ntohl(address.s_addr) >> 24) == 127;
}

bool is_loopback_ipv6(const in6_addr& address) {
  if (IN6_IS_ADDR_LOOPBACK(&address)) return true;
  if (!IN6_IS_ADDR_V4MAPPED(&address)) return false;
  return address.s6_addr[12] == 127;
}

struct AddrinfoFree {
  void operator()(addrinfo* list) const noexcept { ::freeaddrinfo(list); }
};

}  // namespace

bool is_loopback_address(const sockaddr* address) {
  if (address == nullptr) return false;
  if (address->sa_family == AF_INET)
    return is_loopback_ipv4(reinterpret_cast<const sockaddr_in*>(address)->sin_addr);
  if (address->sa_family == AF_INET6)
    return is_loopback_ipv6(reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
  return false;
}

bool is_loopback_host(std::string_view host) {
  const std::string name = lower_without_root(host);
  if (name == "localhost" || ends_with(name, ".localhost")) return true;
  const std::string bare = bare_address(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, bare.c_str(), &v4) == 1) return is_loopback_ipv4(v4);
  in6_addr v6{};
  if (::inet_pton(AF_INET6, bare.c_str(), &v6) == 1) return is_loopback_ipv6(v6);
  return false;
}

bool resolves_to_loopback(const std::string& host) {
  if (is_loopback_host(host)) return true;
  // A literal that is not loopback needs no resolver.
  const std::string bare = bare_address(host);
  in6_addr scratch{};
  if (::inet_pton(AF_INET, bare.c_str(), &scratch) == 1 ||
      ::inet_pton(AF_INET6, bare.c_str(), &scratch) == 1)
    return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not one per socket type
  addrinfo* found = nullptr;
  if (::getaddrinfo(bare.c_str(), nullptr, &hints, &found) != 0) return false;
  const std::unique_ptr<addrinfo, AddrinfoFree> list(found);
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    if (!is_loopback_address(a->ai_addr)) return false;
  }
  return list != nullptr;
}

std::string loopback_remedy() {
  return "use the address of an RDMA-capable network interface instead, e.g. the IP address "
         "of the rxe device's netdev with Soft-RoCE (`rdma link` shows each RDMA device and "
         "its netdev, `ip -br addr show NETDEV` the address; `ibv_devices` lists the devices)";
}

}  // namespace rdmax
