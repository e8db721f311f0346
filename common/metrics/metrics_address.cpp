#include "common/metrics/metrics_address.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace rdmax {

std::optional<MetricsAddress> parse_metrics_address(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc{} || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535)
    return std::nullopt;
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  const std::string literal(host);
  unsigned char bytes[16];
  const bool literal_ok = bracketed ? ::inet_pton(AF_INET6, literal.c_str(), bytes) == 1
                                    : ::inet_pton(AF_INET, literal.c_str(), bytes) == 1;
  if (!literal_ok) return std::nullopt;
  return MetricsAddress{literal, static_cast<std::uint16_t>(port)};
}

std::string to_string(const MetricsAddress& address) {
  const bool v6 = address.host.find(':') != std::string::npos;
  return (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(address.port);
}

std::string not_a_metrics_address(const std::string& given) {
  return "--metrics: '" + given +
         "' is not ADDRESS:PORT: an IPv4 address or a bracketed IPv6 one, and a port from 1 to "
         "65535 (e.g. 127.0.0.1:9464, [::1]:9464)";
}

}  // namespace rdmax
