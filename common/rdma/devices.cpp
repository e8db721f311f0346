#include "common/rdma/devices.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>

namespace rdmax {
namespace {

struct DeviceListDeleter {
  void operator()(ibv_device** list) const noexcept { ::ibv_free_device_list(list); }
};
struct ContextDeleter {
  void operator()(ibv_context* context) const noexcept { ::ibv_close_device(context); }
};
struct IfaddrsDeleter {
  void operator()(ifaddrs* list) const noexcept { ::freeifaddrs(list); }
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

const char* link_layer_name(uint8_t link_layer) {
  switch (link_layer) {
    case IBV_LINK_LAYER_ETHERNET:
      return "Ethernet";
    case IBV_LINK_LAYER_INFINIBAND:
    case IBV_LINK_LAYER_UNSPECIFIED:  // older providers: InfiniBand
      return "InfiniBand";
    default:
      return "unknown";
  }
}

void add_unique(std::vector<std::string>& names, std::string name) {
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
    names.push_back(std::move(name));
}

// RoCE and iWARP ports name their netdev in each GID entry (gid_attrs/ndevs/N; unused
// entries fail to read). InfiniBand ports have none there; their IPoIB interfaces hang
// off the same PCI function (device/net/*).
std::vector<std::string> port_netdevs(const std::string& device, int port) {
  namespace fs = std::filesystem;
  const fs::path base = fs::path("/sys/class/infiniband") / device;
  std::vector<std::string> names;
  std::error_code ec;
  const fs::path ndevs = base / "ports" / std::to_string(port) / "gid_attrs" / "ndevs";
  std::vector<std::pair<unsigned long, fs::path>> entries;
  for (const auto& entry : fs::directory_iterator(ndevs, ec)) {
    const std::string index = entry.path().filename().string();
    if (!index.empty() && std::all_of(index.begin(), index.end(),
                                      [](unsigned char c) { return std::isdigit(c) != 0; }))
      entries.emplace_back(std::stoul(index), entry.path());
  }
  std::sort(entries.begin(), entries.end());
  for (const auto& [index, path] : entries) {
    std::ifstream in(path);
    std::string name;
    if (in && std::getline(in, name)) add_unique(names, name);
  }
  if (names.empty()) {
    for (const auto& entry : fs::directory_iterator(base / "device" / "net", ec))
      add_unique(names, entry.path().filename().string());
  }
  return names;
}

std::string interface_address_text(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw =
      addr->sa_family == AF_INET
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(addr)->sin_addr)
          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr);
  if (::inet_ntop(addr->sa_family, raw, text, sizeof text) == nullptr) return {};
  return text;
}

// `text` in the canonical form inet_ntop gives, or empty if it is not a numeric address.
std::string canonical_address(std::string text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']')
    text = text.substr(1, text.size() - 2);
  if (auto percent = text.find('%'); percent != std::string::npos) text.resize(percent);
  in6_addr buffer{};
  char out[INET6_ADDRSTRLEN] = {};
  for (int family : {AF_INET, AF_INET6}) {
    if (::inet_pton(family, text.c_str(), &buffer) == 1 &&
        ::inet_ntop(family, &buffer, out, sizeof out) != nullptr)
      return out;
  }
  return {};
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
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
    const std::string name = ::ibv_get_device_name(device);
    for (int port = 1; port <= device_attr.phys_port_cnt; ++port) {
      ibv_port_attr port_attr{};
      if (::ibv_query_port(context.get(), static_cast<uint8_t>(port), &port_attr) != 0) continue;
      ports.push_back(PortInfo{name, port, ::ibv_port_state_str(port_attr.state),
                               mtu_bytes(port_attr.active_mtu),
                               link_layer_name(port_attr.link_layer), port_netdevs(name, port)});
    }
  }
  return ports;
}

bool any_rdma_device() {
  std::unique_ptr<ibv_device*, DeviceListDeleter> holder;
  return !devices(holder).empty();
}

std::vector<std::string> rdma_device_names() {
  std::unique_ptr<ibv_device*, DeviceListDeleter> holder;
  std::vector<std::string> names;
  for (ibv_device* device : devices(holder)) names.emplace_back(::ibv_get_device_name(device));
  return names;
}

bool rdma_device_exists(const std::string& name) {
  const auto names = rdma_device_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<std::string> netdev_addresses(const std::string& netdev, int family) {
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0) return {};
  std::unique_ptr<ifaddrs, IfaddrsDeleter> list(raw);
  std::vector<std::string> addresses;
  for (const ifaddrs* ifa = raw; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != family) continue;
    if (netdev != ifa->ifa_name) continue;
    add_unique(addresses, interface_address_text(ifa->ifa_addr));
  }
  return addresses;
}

std::vector<std::string> device_netdevs(const std::string& device) {
  std::vector<std::string> names;
  for (const PortInfo& port : list_rdma_ports()) {
    if (port.device != device) continue;
    for (const auto& name : port.netdevs) add_unique(names, name);
  }
  return names;
}

std::optional<std::string> first_ipv4_address(const std::string& device) {
  for (const auto& netdev : device_netdevs(device)) {
    auto addresses = netdev_addresses(netdev, AF_INET);
    if (!addresses.empty()) return addresses.front();
  }
  return std::nullopt;
}

bool device_serves_address(const std::string& device, const std::string& address) {
  const std::string wanted = canonical_address(address);
  if (wanted.empty()) return true;  // a host name: rdma_bind_addr will decide
  if (wanted == "0.0.0.0" || wanted == "::") return true;
  for (const auto& netdev : device_netdevs(device)) {
    for (int family : {AF_INET, AF_INET6}) {
      for (const auto& mine : netdev_addresses(netdev, family))
        if (mine == wanted) return true;
    }
  }
  return false;
}

bool print_rdma_devices(std::ostream& out) {
  const auto ports = list_rdma_ports();
  for (const PortInfo& p : ports) {
    // "PORT_ACTIVE" or "active", depending on the rdma-core version: print "ACTIVE".
    std::string state = p.state;
    if (state.rfind("PORT_", 0) == 0) state = state.substr(5);
    for (char& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out << p.device << " port " << p.port << ": state " << state << ", link layer " << p.link_layer
        << ", active MTU " << p.active_mtu << "\n";
    if (p.netdevs.empty()) out << "  netdev: none (no IP addresses for rdma_cm)\n";
    for (const auto& netdev : p.netdevs) {
      auto addresses = netdev_addresses(netdev, AF_INET);
      for (auto& v6 : netdev_addresses(netdev, AF_INET6)) addresses.push_back(std::move(v6));
      out << "  netdev " << netdev << ": "
          << (addresses.empty() ? std::string("no IP address") : join(addresses, ", ")) << "\n";
    }
  }
  return !ports.empty();
}

std::string no_rdma_device_message() {
  return "no RDMA device found (ibv_get_device_list lists none).\n"
         "  To use Soft-RoCE on an Ethernet interface, as root: "
         "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0";
}

std::string unknown_device_message(const std::string& name) {
  const auto names = rdma_device_names();
  if (names.empty()) return "no RDMA device '" + name + "': " + no_rdma_device_message();
  return "no RDMA device '" + name + "'; devices here: " + join(names, ", ") +
         " (see rdma-recv --list-devices)";
}

void require_device(const ibv_context* verbs, const std::optional<std::string>& wanted) {
  if (!wanted || verbs == nullptr) return;
  const std::string actual = ::ibv_get_device_name(verbs->device);
  if (actual == *wanted) return;
  throw std::runtime_error("the receiver is reached through RDMA device " + actual + ", not " +
                           *wanted + " (-d): give the receiver's address on " + *wanted +
                           "'s network interface, or leave out -d");
}

}  // namespace rdmax
