#include "common/cli/preflight.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "common/cli/error_hints.hpp"
#include "common/error.hpp"
#include "common/metrics/metrics_server.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/devices.hpp"
#include "common/rdma/memory_region.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::preflight {

namespace {

std::string upper_state(std::string state) {
  if (state.rfind("PORT_", 0) == 0) state = state.substr(5);
  for (char& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return state;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::string gid_text(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(AF_INET6, gid.raw, text, sizeof text) == nullptr) return "?";
  return text;
}

std::optional<int> gid_index(ibv_context* verbs, std::uint8_t port, const ibv_gid& wanted) {
  ibv_port_attr attr{};
  if (::ibv_query_port(verbs, port, &attr) != 0) return std::nullopt;
  for (int i = 0; i < attr.gid_tbl_len; ++i) {
    ibv_gid gid{};
    if (::ibv_query_gid(verbs, port, i, &gid) == 0 &&
        std::memcmp(gid.raw, wanted.raw, sizeof gid.raw) == 0)
      return i;
  }
  return std::nullopt;
}

}  // namespace

std::string format_check(const Check& check) {
  if (check.ok) return "ok   " + check.what;
  return "FAIL " + check.what + (check.remedy.empty() ? "" : ": " + check.remedy);
}

void Report::add(const Check& check) {
  if (!check.ok) ++failed_;
  out_ << format_check(check) << '\n' << std::flush;
}

bool Report::add_all(const std::vector<Check>& checks) {
  bool ok = true;
  for (const auto& check : checks) {
    ok = ok && check.ok;
    add(check);
  }
  return ok;
}

MemlockLimit current_memlock_limit() {
  MemlockLimit limit;
  limit.capability = has_ipc_lock_capability();
  rlimit rl{};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    limit.bytes = static_cast<std::uint64_t>(rl.rlim_cur);
  return limit;
}

std::uint64_t memlock_fits(const MemlockLimit& limit, std::uint64_t unit) {
  if (limit.capability || !limit.bytes) return UINT64_MAX;
  if (unit == 0) return UINT64_MAX;
  return *limit.bytes / unit;
}

std::string remedy_memlock() {
  return "raise the locked-memory limit: ulimit -l unlimited (as root, or after raising the hard "
         "limit), a line '<user> - memlock unlimited' in /etc/security/limits.conf, or "
         "LimitMEMLOCK=infinity in the systemd unit";
}

std::string remedy_no_device() {
  return "load a driver or set up Soft-RoCE, as root: modprobe rdma_rxe; rdma link add rxe0 type "
         "rxe netdev eth0";
}

std::string remedy_port_down(const std::vector<std::string>& netdevs) {
  const std::string netdev = netdevs.empty() ? "NETDEV" : netdevs.front();
  return "bring its link up (ip link set " + netdev +
         " up; check the cable and the switch port, or the subnet manager on InfiniBand)";
}

Check memlock_check(const MemlockLimit& limit, std::uint64_t needed, const std::string& purpose) {
  const std::string need = proto::format_size(needed);
  if (limit.capability)
    return pass("locked memory: CAP_IPC_LOCK (no limit applies); " + purpose + " needs " + need);
  if (!limit.bytes)
    return pass("locked memory: RLIMIT_MEMLOCK unlimited; " + purpose + " needs " + need);
  const std::string have = proto::format_size(*limit.bytes);
  if (*limit.bytes < needed)
    return failure("locked memory: RLIMIT_MEMLOCK " + have + " is below the " + need + " " +
                       purpose + " needs",
                   remedy_memlock());
  return pass("locked memory: RLIMIT_MEMLOCK " + have + " covers the " + need + " " + purpose +
              " needs");
}

std::vector<Check> device_checks(const std::optional<std::string>& wanted) {
  const auto names = rdma_device_names();
  if (names.empty()) return {failure("RDMA device: none found", remedy_no_device())};
  if (wanted && std::find(names.begin(), names.end(), *wanted) == names.end())
    return {
        failure("RDMA device " + *wanted + ": no such device (devices here: " + join(names) + ")",
                "name one of them with -d (see rdma-recv --list-devices), or leave out -d")};
  std::vector<Check> checks;
  std::vector<std::string> found;
  std::optional<PortInfo> down;
  for (const PortInfo& port : list_rdma_ports()) {
    if (wanted && port.device != *wanted) continue;
    const std::string state = upper_state(port.state);
    const std::string where = port.device + " port " + std::to_string(port.port);
    if (state == "ACTIVE") {
      found.push_back(where + " ACTIVE (" + port.link_layer + ", MTU " +
                      std::to_string(port.active_mtu) +
                      (port.netdevs.empty() ? "" : ", netdev " + join(port.netdevs)) + ")");
    } else if (!down) {
      down = port;
      down->state = state;
    }
  }
  if (!found.empty()) return {pass("RDMA device: " + join(found))};
  if (down)
    return {failure("RDMA device " + down->device + " port " + std::to_string(down->port) + " is " +
                        down->state + ", not ACTIVE",
                    remedy_port_down(down->netdevs))};
  return {
      failure("RDMA device " + (wanted ? *wanted : join(names)) + ": cannot be opened or queried",
              "check /dev/infiniband permissions (rdma-core's udev rules) and dmesg")};
}

std::optional<CmEvent> wait_cm_event(EventChannel& channel,
                                     std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    if (auto event = channel.try_get()) return event;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd pfd{channel.fd(), POLLIN, 0};
    const int n = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count() + 1, 60000)));
    if (n < 0 && errno != EINTR) return std::nullopt;
  }
}

std::string describe_endpoint(const rdma_cm_id* id) {
  if (id == nullptr || id->verbs == nullptr) return {};
  std::string text = std::string(::ibv_get_device_name(id->verbs->device)) + " port " +
                     std::to_string(id->port_num);
  const ibv_gid& gid = reinterpret_cast<const ibv_gid&>(id->route.addr.addr.ibaddr.sgid);
  text += ", GID " + gid_text(gid);
  if (auto index = gid_index(id->verbs, id->port_num, gid))
    text += " (index " + std::to_string(*index) + ")";
  return text;
}

Check route_check(const std::string& host, std::uint16_t port,
                  const std::optional<std::string>& wanted, std::chrono::milliseconds timeout,
                  const std::optional<std::string>& source) {
  const std::string what =
      "route to " + host_and_port(host, port) + (source ? " from " + *source : "");
  try {
    EventChannel channel;
    channel.set_nonblocking();
    CmId id(channel);
    id.resolve_addr(host.c_str(), port, timeout, source ? source->c_str() : nullptr);
    auto event = wait_cm_event(
        channel, std::chrono::steady_clock::now() + timeout + std::chrono::milliseconds(500));
    if (!event)
      return failure(what + ": address resolution timed out",
                     "check that HOST is reachable over an RDMA interface (ping it; ip route get " +
                         host + ")");
    const rdma_cm_event_type type = event->type();
    const int status = event->status();
    event->ack();
    if (type != RDMA_CM_EVENT_ADDR_RESOLVED)
      return failure(what + ": " + rdma_event_str(type),
                     connect_failure_message(type, status, host, port, {}));
    if (id.verbs() == nullptr)
      return failure(what + ": resolved to no RDMA device",
                     "give the receiver's address on an RDMA interface (see --list-devices)");
    const std::string endpoint = describe_endpoint(id.get());
    const std::string device = ::ibv_get_device_name(id.verbs()->device);
    if (wanted && device != *wanted)
      return failure(
          what + ": goes through " + endpoint + ", not " + *wanted + " (-d)",
          "give the receiver's address on " + *wanted + "'s network interface, or leave out -d");
    return pass(what + ": " + endpoint);
  } catch (const std::exception& e) {
    return failure(what + ": " + e.what(),
                   "check HOST (a name or address of the receiver on its RDMA interface)");
  }
}

Check directory_check(const std::string& dir, std::uint64_t min_free) {
  const std::string what = "directory " + dir;
  std::string pattern = dir + "/.rdmax-check.XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) {
    const int err = errno;
    return failure(what + ": cannot create a file in it (" + std::strerror(err) + ")",
                   output_dir_hint(err));
  }
  ::close(fd);
  ::unlink(pattern.c_str());
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0)
    return pass(what + ": writable (free space unknown: " + std::strerror(errno) + ")");
  const std::uint64_t free_bytes = std::uint64_t{fs.f_bavail} * fs.f_frsize;
  if (free_bytes < min_free)
    return failure(what + ": writable, but only " + proto::format_size(free_bytes) + " free",
                   "make room, or choose a directory on another file system");
  return pass(what + ": writable, " + proto::format_size(free_bytes) + " free");
}

std::vector<Check> listen_checks(const std::optional<std::string>& bind, std::uint16_t port,
                                 const std::string& in_use) {
  const std::string shown = bind ? *bind : "0.0.0.0";
  const std::string what = "listen on " + shown + " port " + std::to_string(port);
  try {
    EventChannel channel;
    CmId id(channel);
    id.bind_and_listen(bind ? bind->c_str() : nullptr, port, 1);
    std::vector<Check> checks{pass(what + ": the port is free")};
    const std::string endpoint = describe_endpoint(id.get());
    if (endpoint.empty())
      checks.push_back(pass("bound address " + id.local_address() +
                            ": a wildcard, served by every RDMA device"));
    else
      checks.push_back(pass("bound address " + id.local_address() + ": " + endpoint));
    return checks;
  } catch (const SysError& e) {
    if (e.error() == EADDRINUSE)
      return {failure(what + ": the port is in use (" + in_use + ")",
                      "stop the other listener or choose another --port")};
    const std::string hint = rdma_setup_hint(e.error());
    return {failure(what + ": " + e.what(),
                    hint.empty() ? "check --bind against the RDMA interfaces' addresses" : hint)};
  } catch (const std::exception& e) {
    return {failure(what + ": " + e.what(), "check --bind")};
  }
}

Check credentials_check(const std::string& what, const std::string& path, const char* option,
                        const char* format, const std::function<std::string()>& load) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return failure(what + " " + path + ": " + std::strerror(errno),
                   std::string("check the path given to ") + option + ", or leave out " + option);
  if (S_ISREG(st.st_mode) && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return failure(what + " " + path + ": mode " + mode + " lets group or others read it",
                   "chmod 600 " + path);
  }
  try {
    return pass(what + " " + path + ": owner-only, " + load());
  } catch (const std::exception& e) {
    // "PATH:LINE: what" for a syntax error; other messages name the file themselves.
    const std::string message = e.what();
    if (message.rfind(path + ":", 0) != 0) return failure(message, std::string("check ") + option);
    return failure(what + " " + message, std::string("fix that line: ") + format +
                                             " per line, '#' starts a comment (docs/SECURITY.md)");
  }
}

std::optional<Check> metrics_check(const std::optional<MetricsAddress>& address) {
  if (!address) return std::nullopt;
  const std::string what = "metrics on http://" + to_string(*address) + "/metrics";
  const std::string problem = metrics_port_problem(*address);
  if (problem.empty()) return pass(what + ": the port is free");
  return failure(what + ": " + problem, "choose another --metrics ADDRESS:PORT");
}

}  // namespace rdmax::preflight
