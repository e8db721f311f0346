#include "common/rdma/address_filter.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <tuple>

namespace rdmax {

namespace {

std::optional<IpPrefix> numeric(const std::string& text, unsigned bits_given, bool has_bits) {
  IpPrefix p;
  if (::inet_pton(AF_INET, text.c_str(), p.bytes.data()) == 1) {
    p.family = AF_INET;
    p.bits = 32;
  } else if (::inet_pton(AF_INET6, text.c_str(), p.bytes.data()) == 1) {
    p.family = AF_INET6;
    p.bits = 128;
  } else {
    return std::nullopt;
  }
  if (has_bits) {
    if (bits_given > p.bits)
      throw std::invalid_argument("a prefix length of " + std::to_string(bits_given) +
                                  " is longer than the address (" + std::to_string(p.bits) +
                                  " bits)");
    p.bits = bits_given;
  }
  return p;
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(s);
}

bool prefix_matches(const IpPrefix& p, int family, const std::uint8_t* bytes) {
  if (p.family != family) return false;
  const unsigned whole = p.bits / 8, rest = p.bits % 8;
  if (std::memcmp(p.bytes.data(), bytes, whole) != 0) return false;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xFF << (8 - rest));
  return (p.bytes[whole] & mask) == (bytes[whole] & mask);
}

std::string list_of(const std::vector<IpPrefix>& prefixes) {
  if (prefixes.empty()) return "none";
  std::string out;
  for (const auto& p : prefixes) out += (out.empty() ? "" : ", ") + p.text;
  return out;
}

// The IP address in `address`, an IPv4-mapped IPv6 address as its IPv4 (an IPv4 peer on a
// dual-stack listener); nothing for a null address or another family.
struct PeerIp {
  int family;
  const std::uint8_t* bytes;  // 4 or 16
};
std::optional<PeerIp> peer_ip(const sockaddr* address) {
  if (address != nullptr && address->sa_family == AF_INET)
    return PeerIp{AF_INET, reinterpret_cast<const std::uint8_t*>(
                               &reinterpret_cast<const sockaddr_in*>(address)->sin_addr)};
  if (address != nullptr && address->sa_family == AF_INET6) {
    const auto* a6 = &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(a6);
    if (IN6_IS_ADDR_V4MAPPED(a6)) return PeerIp{AF_INET, bytes + 12};
    return PeerIp{AF_INET6, bytes};
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> resolve_host(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not one per socket type
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found); rc != 0)
    throw std::invalid_argument(std::string("cannot resolve it: ") + ::gai_strerror(rc));
  std::vector<std::string> out;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* where =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
        ::inet_ntop(a->ai_family, where, text, sizeof text) != nullptr &&
        std::find(out.begin(), out.end(), text) == out.end())
      out.emplace_back(text);
  }
  ::freeaddrinfo(found);
  return out;
}

std::vector<IpPrefix> parse_prefixes(std::string_view list, const NameResolver& resolve) {
  std::vector<IpPrefix> out;
  std::size_t start = 0;
  while (start <= list.size()) {  // past the end once the last item is read
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = trimmed(list.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) throw std::invalid_argument("an empty item (two commas, or one at an end)");
    try {
      const std::size_t slash = item.find('/');
      const std::string address = item.substr(0, slash);
      bool has_bits = slash != std::string::npos;
      unsigned bits = 0;
      if (has_bits) {
        const std::string digits = item.substr(slash + 1);
        if (digits.empty() || digits.size() > 3 ||
            !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
          throw std::invalid_argument("the prefix length must be a number of bits");
        bits = static_cast<unsigned>(std::stoul(digits));
      }
      if (auto p = numeric(address, bits, has_bits)) {
        p->text = item;
        out.push_back(*p);
        continue;
      }
      if (has_bits) throw std::invalid_argument("a prefix length needs a numeric address");
      const std::vector<std::string> addresses = resolve(address);
      if (addresses.empty()) throw std::invalid_argument("the name has no address");
      for (const std::string& a : addresses) {
        auto p = numeric(a, 0, false);
        if (!p) throw std::invalid_argument("the name resolved to '" + a + "'");
        p->text = item + " (" + a + ")";
        out.push_back(*p);
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("'" + item + "': " + e.what());
    }
  }
  return out;
}

AddressFilter::AddressFilter(std::vector<IpPrefix> allow, std::vector<IpPrefix> deny)
    : allow_(std::move(allow)), deny_(std::move(deny)) {}

AddressFilter::Verdict AddressFilter::judge(const sockaddr* address) const {
  if (!active()) return Verdict::Allowed;
  const auto ip = peer_ip(address);
  if (!ip) return Verdict::NotAllowed;
  for (const auto& p : deny_)
    if (prefix_matches(p, ip->family, ip->bytes)) return Verdict::Denied;
  if (allow_.empty()) return Verdict::Allowed;
  for (const auto& p : allow_)
    if (prefix_matches(p, ip->family, ip->bytes)) return Verdict::Allowed;
  return Verdict::NotAllowed;
}

std::string AddressFilter::describe() const {
  return "allowed from " + (allow_.empty() ? std::string("anywhere") : list_of(allow_)) +
         "; denied from " + list_of(deny_);
}

const char* to_string(AddressFilter::Verdict verdict) {
  switch (verdict) {
    case AddressFilter::Verdict::Allowed:
      return "allowed";
    case AddressFilter::Verdict::Denied:
      return "matches --deny";
    case AddressFilter::Verdict::NotAllowed:
      return "not in --allow";
  }
  return "?";
}

std::optional<std::string> parse_address_rules(const std::vector<std::string>& allow_texts,
                                               const std::vector<std::string>& deny_texts,
                                               std::vector<IpPrefix>& allow,
                                               std::vector<IpPrefix>& deny) {
  for (auto [texts, rules, name] :
       {std::tuple{&allow_texts, &allow, "--allow"}, std::tuple{&deny_texts, &deny, "--deny"}}) {
    for (const std::string& text : *texts) {
      try {
        for (auto& rule : parse_prefixes(text, resolve_host)) rules->push_back(std::move(rule));
      } catch (const std::invalid_argument& e) {
        return std::string(name) + ": " + e.what();
      }
    }
  }
  return std::nullopt;
}

std::string address_text(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  const auto ip = peer_ip(address);
  if (!ip || ::inet_ntop(ip->family, ip->bytes, text, sizeof text) == nullptr) return "?";
  return text;
}

std::optional<std::uint64_t> RefusalLog::note(const std::string& address, Clock::time_point now) {
  auto it = seen_.find(address);
  if (it == seen_.end()) {
    if (seen_.size() >= kMaxAddresses) {
      seen_.erase(std::min_element(seen_.begin(), seen_.end(), [](const auto& a, const auto& b) {
        return a.second.logged < b.second.logged;
      }));
    }
    seen_.emplace(address, Seen{now, 0});
    return 0;
  }
  if (now - it->second.logged < kInterval) {
    ++it->second.unlogged;
    return std::nullopt;
  }
  const std::uint64_t unlogged = it->second.unlogged;
  it->second = Seen{now, 0};
  return unlogged;
}

}  // namespace rdmax
