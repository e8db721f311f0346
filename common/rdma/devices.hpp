#pragma once

#include <string>
#include <vector>

namespace rdmax {

struct PortInfo {
  std::string device;  // e.g. "rxe0", "mlx5_0"
  int port = 0;        // 1-based, as verbs numbers ports
  std::string state;   // ibv_port_state_str(), e.g. "PORT_ACTIVE"
  int active_mtu = 0;  // bytes (256..4096)
};

// Every port of every RDMA device; empty when there is none (or no verbs support at all).
// For diagnostics ("no RDMA device found; load rdma_rxe ..."), so it never throws for a
// device that cannot be opened or queried: that device is skipped.
std::vector<PortInfo> list_rdma_ports();

bool any_rdma_device();

}  // namespace rdmax
