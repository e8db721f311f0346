#pragma once
// rdma-recv --allow / --deny (and rdma-send --serve's): which peer addresses may connect at
// all (issue 23). The daemon judges a connection request's source address in the rdma_cm
// event itself and rejects it there, before any queue pair, memory registration or file
// exists: the one safe rkey is the one never granted to a stranger.
//
// A rule is an IPv4 or IPv6 prefix ("192.0.2.0/24", "2001:db8::/32"), one address (a whole
// prefix: "192.0.2.7", "fd00::1") or a host name, resolved once at start to every address it
// has (each a whole prefix; a name that later points elsewhere needs a restart). A peer is
// refused when a --deny rule matches it, or when --allow rules exist and none matches; an
// IPv4 peer seen as an IPv4-mapped IPv6 address (::ffff:a.b.c.d) is judged as IPv4.

#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdmax {

struct IpPrefix {
  int family = AF_INET;  // AF_INET or AF_INET6
  std::array<std::uint8_t, 16> bytes{};
  unsigned bits = 32;  // how many leading bits must match
  std::string text;    // as the user wrote it (a name: "name (address)")
  bool operator==(const IpPrefix&) const = default;
};

// A host name's addresses (numeric text), or an error message; injected by tests.
using NameResolver = std::function<std::vector<std::string>(const std::string& name)>;
// getaddrinfo(3): every IPv4 and IPv6 address of `name`; throws with gai_strerror's text.
[[nodiscard]] std::vector<std::string> resolve_host(const std::string& name);

// "NET[,NET...]": throws std::invalid_argument naming the item and what is wrong with it.
[[nodiscard]] std::vector<IpPrefix> parse_prefixes(std::string_view list,
                                                   const NameResolver& resolve);

// --allow and --deny as a command line gives them (each NET[,NET...], names resolved now)
// appended to `allow` and `deny`; the first that is not one, as "--allow: <why>".
[[nodiscard]] std::optional<std::string> parse_address_rules(
    const std::vector<std::string>& allow_texts, const std::vector<std::string>& deny_texts,
    std::vector<IpPrefix>& allow, std::vector<IpPrefix>& deny);

class AddressFilter {
 public:
  enum class Verdict : std::uint8_t { Allowed, Denied, NotAllowed };

  AddressFilter() = default;
  AddressFilter(std::vector<IpPrefix> allow, std::vector<IpPrefix> deny);

  // A peer's address as rdma_get_peer_addr gives it (null or another family: NotAllowed
  // when rules exist, else Allowed).
  [[nodiscard]] Verdict judge(const sockaddr* address) const;
  bool active() const { return !allow_.empty() || !deny_.empty(); }
  // "allowed from 192.0.2.0/24; denied from none" (for --check and the start-up line).
  std::string describe() const;

 private:
  std::vector<IpPrefix> allow_;
  std::vector<IpPrefix> deny_;
};

const char* to_string(AddressFilter::Verdict verdict);

// A peer's IP address alone ("192.0.2.1", "fd00::1"; an IPv4-mapped IPv6 address as its
// IPv4), without the port: what refusals are counted and logged by. "?" for anything else.
[[nodiscard]] std::string address_text(const sockaddr* address);

// Refused connections are logged once per address and minute, not once per attempt: a peer
// that retries in a loop (or a flood of them) cannot fill the log. Bounded: at most
// kMaxAddresses addresses are remembered; the least recently logged is forgotten first.
class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kInterval{60};
  static constexpr std::size_t kMaxAddresses = 4096;

  // Whether a refusal of `address` at `now` is to be logged; if so, how many refusals of it
  // went unlogged since its last line.
  [[nodiscard]] std::optional<std::uint64_t> note(const std::string& address,
                                                  Clock::time_point now);

 private:
  struct Seen {
    Clock::time_point logged;
    std::uint64_t unlogged = 0;
  };
  std::map<std::string, Seen> seen_;
};

}  // namespace rdmax
