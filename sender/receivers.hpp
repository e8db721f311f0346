#pragma once
// -H HOST1,HOST2,... (issue 24): the rdma-recv daemons one command spreads its connections
// over, for example every node that mounts the destination file system. Pure parsing.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rdmax::sender {

struct Receiver {
  Receiver() = default;
  Receiver(std::string h, std::uint16_t p, std::vector<std::string> more = {})
      : host(std::move(h)), port(p), more_hosts(std::move(more)) {}

  std::string host;  // a name, an IPv4 address or an IPv6 address (without brackets)
  std::uint16_t port = 0;
  // HOST+HOST2+...: more addresses of the same rdma-recv (its other ports: multi-rail). Its
  // connections take its addresses in turn, and a file may be striped over all of them.
  std::vector<std::string> more_hosts;
  bool operator==(const Receiver&) const = default;

  std::size_t addresses() const { return 1 + more_hosts.size(); }
  // The address of its K-th connection (0: host).
  const std::string& address(std::size_t k) const {
    const std::size_t i = k % addresses();
    return i == 0 ? host : more_hosts[i - 1];
  }
  // How reports name it: HOST:PORT, or HOST+HOST2:PORT (IPv6 addresses in brackets).
  std::string name() const;
};

// The receivers of -H: comma-separated items, each HOST (on `default_port`, -p's; "[IPV6]"
// too, kept as written), HOST:PORT, or [IPV6]:PORT; an IPv6 address without brackets holds several
// colons and is a HOST. An item may join several addresses of one receiver with '+'
// (A+B:PORT, or each with the same port). An error (for the user, after "-H: ") for an empty
// item, a bad port, a bracket without its port, addresses of one receiver on different ports,
// or one address named twice.
[[nodiscard]] std::variant<std::vector<Receiver>, std::string> parse_receivers(
    std::string_view text, std::uint16_t default_port);

}  // namespace rdmax::sender
