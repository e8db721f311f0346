#include "sender/receivers.hpp"

#include <algorithm>

namespace rdmax::sender {
namespace {

std::variant<std::uint16_t, std::string> parse_port(std::string_view text, std::string_view item) {
  std::uint32_t value = 0;
  const bool digits =
      !text.empty() && text.size() <= 5 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits)
    for (const char c : text) value = value * 10 + static_cast<std::uint32_t>(c - '0');
  if (!digits || value == 0 || value > 65535)
    return "'" + std::string(item) + "': '" + std::string(text) +
           "' is not a port number from 1 to 65535";
  return static_cast<std::uint16_t>(value);
}

std::variant<Receiver, std::string> parse_item(std::string_view item, std::uint16_t default_port) {
  if (item.empty()) return std::string("an empty HOST in the list");
  std::string_view host = item;
  std::string_view port;
  if (item.front() == '[' && item.back() == ']') {
    // [IPV6] alone: the host as given (the resolver takes the brackets off), on -p's port.
  } else if (item.front() == '[') {  // [IPV6]:PORT
    const std::size_t close = item.find(']');
    if (close == std::string_view::npos || close + 1 >= item.size() || item[close + 1] != ':')
      return "'" + std::string(item) + "': write an IPv6 address with a port as [ADDRESS]:PORT";
    host = item.substr(1, close - 1);
    port = item.substr(close + 2);
  } else if (std::count(item.begin(), item.end(), ':') == 1) {  // HOST:PORT
    const std::size_t colon = item.find(':');
    host = item.substr(0, colon);
    port = item.substr(colon + 1);
  }
  if (host.empty()) return "'" + std::string(item) + "': no host before the port";
  Receiver r{std::string(host), default_port};
  if (!port.empty() || host.size() != item.size()) {
    auto parsed = parse_port(port, item);
    if (auto* error = std::get_if<std::string>(&parsed)) return *error;
    r.port = std::get<std::uint16_t>(parsed);
  }
  return r;
}

}  // namespace

std::variant<std::vector<Receiver>, std::string> parse_receivers(std::string_view text,
                                                                 std::uint16_t default_port) {
  std::vector<Receiver> receivers;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    auto item = parse_item(text.substr(start, comma - start), default_port);
    if (auto* error = std::get_if<std::string>(&item)) return *error;
    Receiver& r = std::get<Receiver>(item);
    if (std::find(receivers.begin(), receivers.end(), r) != receivers.end())
      return r.host + " port " + std::to_string(r.port) + " is named twice";
    receivers.push_back(std::move(r));
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return receivers;
}

}  // namespace rdmax::sender
