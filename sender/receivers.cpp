#include "sender/receivers.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

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

// ITEM: addresses of one receiver joined by '+'. A port written on any of them is the port
// of all; two different ones cannot be one daemon's.
std::variant<Receiver, std::string> parse_railed_item(std::string_view item,
                                                      std::uint16_t default_port) {
  std::vector<std::string> hosts;
  std::optional<std::uint16_t> port;
  std::size_t start = 0;
  while (true) {
    const std::size_t plus = std::min(item.find('+', start), item.size());
    const std::string_view part = item.substr(start, plus - start);
    auto parsed = parse_item(part, 0);  // port 0: none written (a written 0 is refused)
    if (auto* error = std::get_if<std::string>(&parsed)) return *error;
    Receiver& r = std::get<Receiver>(parsed);
    if (r.port != 0) {
      if (port && *port != r.port)
        return "'" + std::string(item) + "': the addresses of one receiver share its port";
      port = r.port;
    }
    hosts.push_back(std::move(r.host));
    if (plus == item.size()) break;
    start = plus + 1;
  }
  Receiver r{hosts.front(), port.value_or(default_port), {}};
  r.more_hosts.assign(std::make_move_iterator(hosts.begin() + 1),
                      std::make_move_iterator(hosts.end()));
  return r;
}

std::string bracketed(const std::string& host) {
  return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

}  // namespace

std::string Receiver::name() const {
  std::string text = bracketed(host);
  for (const std::string& more : more_hosts) text += "+" + bracketed(more);
  return text + ":" + std::to_string(port);
}

std::variant<std::vector<Receiver>, std::string> parse_receivers(std::string_view text,
                                                                 std::uint16_t default_port) {
  std::vector<Receiver> receivers;
  std::set<std::pair<std::string, std::uint16_t>> named;  // every address, with its port
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    auto item = parse_railed_item(text.substr(start, comma - start), default_port);
    if (auto* error = std::get_if<std::string>(&item)) return *error;
    Receiver& r = std::get<Receiver>(item);
    for (std::size_t k = 0; k < r.addresses(); ++k)
      if (!named.insert({r.address(k), r.port}).second)
        return r.address(k) + " port " + std::to_string(r.port) + " is named twice";
    receivers.push_back(std::move(r));
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return receivers;
}

}  // namespace rdmax::sender
