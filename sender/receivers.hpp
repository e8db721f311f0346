#pragma once
// -H HOST1,HOST2,... (issue 24): the rdma-recv daemons one command spreads its connections
// over, for example every node that mounts the destination file system. Pure parsing.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rdmax::sender {

struct Receiver {
  std::string host;  // a name, an IPv4 address or an IPv6 address (without brackets)
  std::uint16_t port = 0;
  bool operator==(const Receiver&) const = default;
};

// The receivers of -H: comma-separated items, each HOST (on `default_port`, -p's; "[IPV6]"
// too, kept as written), HOST:PORT, or [IPV6]:PORT; an IPv6 address without brackets holds several
// colons and is a HOST. An error (for the user, after "-H: ") for an empty item, a bad port, a
// bracket without its port, or one receiver named twice.
[[nodiscard]] std::variant<std::vector<Receiver>, std::string> parse_receivers(
    std::string_view text, std::uint16_t default_port);

}  // namespace rdmax::sender
