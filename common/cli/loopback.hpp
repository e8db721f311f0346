#pragma once
// RDMA does not work over loopback: no RDMA device serves the lo interface, so rdma_cm
// cannot resolve a route to 127.0.0.1 and a listener bound there can never be reached
// (issue 22). Both programs refuse such an address up front and say what to use instead.

#include <sys/socket.h>

#include <string>
#include <string_view>

namespace rdmax {

// A resolved address: IPv4 127.0.0.0/8, IPv6 ::1, or IPv4-mapped ::ffff:127.0.0.0/104.
[[nodiscard]] bool is_loopback_address(const sockaddr* address);

// Without a resolver: a loopback address literal (IPv6 also in brackets, with or without a
// %zone), or the names "localhost" and "*.localhost" (RFC 6761 keeps them for loopback).
[[nodiscard]] bool is_loopback_host(std::string_view host);

// is_loopback_host, or a name whose every resolved address is loopback (an /etc/hosts
// alias of 127.0.1.1, say). A name that does not resolve is not called loopback: the
// connection's own resolution reports that.
[[nodiscard]] bool resolves_to_loopback(const std::string& host);

// What to do instead, one clause: the address of an RDMA-capable interface, and how to
// find it.
[[nodiscard]] std::string loopback_remedy();

}  // namespace rdmax
