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

// The option's help (each daemon's --metrics), and what is said of a value that is not one.
inline constexpr const char* kMetricsOptionHelp =
    "serve Prometheus metrics at http://ADDRESS:PORT/metrics (127.0.0.1:PORT or [::1]:PORT "
    "keeps them on this host; 0.0.0.0 or [::] for every address: no authentication, so only "
    "behind a firewall)";
std::string not_a_metrics_address(const std::string& given);

}  // namespace rdmax
