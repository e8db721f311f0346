#pragma once
// --metrics ADDRESS:PORT (both daemons): an IPv4 literal or a bracketed IPv6 literal, and a
// port 1..65535. Names are refused: the server binds exactly what the operator wrote.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmax {

struct MetricsAddress {
  std::string host;  // without brackets
  std::uint16_t port = 0;
  bool operator==(const MetricsAddress&) const = default;
};
[[nodiscard]] std::optional<MetricsAddress> parse_metrics_address(std::string_view text);
// How to write it back: 127.0.0.1:9464, [::1]:9464.
std::string to_string(const MetricsAddress& address);

}  // namespace rdmax
