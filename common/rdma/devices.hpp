#pragma once
// RDMA devices as a user sees them: names, ports, state, link layer, MTU, and the network
// interface (netdev) each port runs over with its IP addresses. For `--list-devices`,
// `-d/--device` and the "no RDMA device" diagnostics; nothing here is on a data path.

#include <infiniband/verbs.h>
#include <sys/socket.h>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace rdmax {

struct PortInfo {
  std::string device;                // e.g. "rxe0", "mlx5_0"
  int port = 0;                      // 1-based, as verbs numbers ports
  std::string state;                 // ibv_port_state_str(), e.g. "PORT_ACTIVE"
  int active_mtu = 0;                // bytes (256..4096)
  std::string link_layer;            // "Ethernet" (RoCE, iWARP) or "InfiniBand"
  std::vector<std::string> netdevs;  // e.g. {"eth0"}; may be empty (InfiniBand without IPoIB)
};

// Every port of every RDMA device; empty when there is none (or no verbs support at all).
// For diagnostics ("no RDMA device found; load rdma_rxe ..."), so it never throws for a
// device that cannot be opened or queried: that device is skipped.
std::vector<PortInfo> list_rdma_ports();

bool any_rdma_device();
std::vector<std::string> rdma_device_names();
bool rdma_device_exists(const std::string& name);

// The IP addresses of a network interface, as text, for `family` AF_INET or AF_INET6.
std::vector<std::string> netdev_addresses(const std::string& netdev, int family);

// The netdevs under every port of `device` (empty if there is no such device).
std::vector<std::string> device_netdevs(const std::string& device);

// The first IPv4 address of the first netdev of `device` that has one.
std::optional<std::string> first_ipv4_address(const std::string& device);

// True when `address` (a numeric IPv4/IPv6 literal, brackets allowed) is an address of
// one of `device`'s netdevs, or a wildcard (0.0.0.0, ::). Names that are not numeric
// cannot be checked here and count as true.
bool device_serves_address(const std::string& device, const std::string& address);

// --list-devices: one block per port with its netdev and addresses. Returns false (and
// prints nothing) when there is no device.
bool print_rdma_devices(std::ostream& out);

// Two lines for "no RDMA device here": what is missing and how to set up Soft-RoCE.
std::string no_rdma_device_message();

// For `-d NAME` naming no device: the devices that do exist, and where to look.
std::string unknown_device_message(const std::string& name);

// `-d` on the active side: throws std::runtime_error when the device the cm_id resolved
// to (verbs->device) is not `wanted`. Nothing to check without a wanted device.
void require_device(const ibv_context* verbs, const std::optional<std::string>& wanted);

}  // namespace rdmax
