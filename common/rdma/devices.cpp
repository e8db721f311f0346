#include "common/rdma/devices.hpp"

#include <infiniband/verbs.h>

#include <memory>
#include <span>

namespace rdmax {
namespace {

struct DeviceListDeleter {
  void operator()(ibv_device** list) const noexcept { ::ibv_free_device_list(list); }
};
struct ContextDeleter {
  void operator()(ibv_context* context) const noexcept { ::ibv_close_device(context); }
};

// ibv_get_device_list returns NULL (errno ENOSYS) without kernel verbs support; treat it
// like an empty list.
std::span<ibv_device*> devices(std::unique_ptr<ibv_device*, DeviceListDeleter>& holder) {
  int count = 0;
  holder.reset(::ibv_get_device_list(&count));
  if (!holder || count <= 0) return {};
  return {holder.get(), static_cast<size_t>(count)};
}

int mtu_bytes(ibv_mtu mtu) {
  return mtu >= IBV_MTU_256 ? 128 << static_cast<int>(mtu) : 0;
}

}  // namespace

std::vector<PortInfo> list_rdma_ports() {
  std::unique_ptr<ibv_device*, DeviceListDeleter> holder;
  std::vector<PortInfo> ports;
  for (ibv_device* device : devices(holder)) {
    std::unique_ptr<ibv_context, ContextDeleter> context(::ibv_open_device(device));
    if (!context) continue;
    ibv_device_attr device_attr{};
    if (::ibv_query_device(context.get(), &device_attr) != 0) continue;
    for (int port = 1; port <= device_attr.phys_port_cnt; ++port) {
      ibv_port_attr port_attr{};
      if (::ibv_query_port(context.get(), static_cast<uint8_t>(port), &port_attr) != 0) continue;
      ports.push_back(PortInfo{::ibv_get_device_name(device), port,
                               ::ibv_port_state_str(port_attr.state),
                               mtu_bytes(port_attr.active_mtu)});
    }
  }
  return ports;
}

bool any_rdma_device() {
  std::unique_ptr<ibv_device*, DeviceListDeleter> holder;
  return !devices(holder).empty();
}

}  // namespace rdmax
