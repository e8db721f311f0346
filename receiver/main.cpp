// rdma-recv: the receiver daemon. Validates its configuration up front (directory,
// secrets file, device), then serves senders until SIGINT or SIGTERM.

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "common/cli/error_hints.hpp"
#include "common/cli/logging.hpp"
#include "common/cli/loopback.hpp"
#include "common/crypto/key_files.hpp"
#include "common/error.hpp"
#include "common/metrics/metrics_server.hpp"
#include "common/os/fd.hpp"
#include "common/rdma/devices.hpp"
#include "common/rdma/memory_region.hpp"
#include "protocol/sizes.hpp"
#include "receiver/daemon.hpp"
#include "receiver/fetch_command.hpp"
#include "receiver/options.hpp"
#include "receiver/preflight.hpp"
#include "receiver/secrets_file.hpp"
#include "sender/exit_codes.hpp"

using namespace rdmax;
using receiver::kExitFailure;
using receiver::kExitUsage;

namespace {

// -d without --bind listens on the device's first IPv4 address; with --bind the address
// must belong to the device. Returns an exit status on failure.
std::optional<int> apply_device(receiver::ReceiverOptions& options) {
  if (!options.device) return std::nullopt;
  const std::string& device = *options.device;
  if (!rdma_device_exists(device)) {
    spdlog::error("{}", unknown_device_message(device));
    return kExitUsage;
  }
  if (options.bind_address) {
    if (!device_serves_address(device, *options.bind_address)) {
      spdlog::error(
          "--bind {} is not an address of {}'s network interface; leave out --bind "
          "to use its first IPv4 address (see --list-devices)",
          *options.bind_address, device);
      return kExitUsage;
    }
    return std::nullopt;
  }
  const auto address = first_ipv4_address(device);
  if (!address) {
    const auto netdevs = device_netdevs(device);
    spdlog::error(
        "{} has no IPv4 address to listen on (network interface: {}); add one "
        "(ip addr add ADDRESS/PREFIX dev {}) or give an IPv6 address with --bind",
        device, netdevs.empty() ? "none" : netdevs.front(),
        netdevs.empty() ? "NETDEV" : netdevs.front());
    return kExitFailure;
  }
  spdlog::debug("-d {}: listening on its address {}", device, *address);
  options.bind_address = *address;
  return std::nullopt;
}

// Every connection pins its receive window: warn now rather than at the first sender.
void warn_about_memlock(const receiver::ReceiverOptions& options) {
  if (has_ipc_lock_capability()) return;
  const std::uint64_t window = std::uint64_t{options.slots} * options.slot_size;
  if (const std::string hint = memlock_hint(window); !hint.empty())
    spdlog::warn("each connection pins a {} receive window, and senders will fail: {}",
                 proto::format_size(window), hint);
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = receiver::parse_receiver_options(argc, argv);
  if (auto* rc = std::get_if<int>(&parsed)) return *rc;
  auto& options = std::get<receiver::ReceiverOptions>(parsed);
  if (options.list_devices) {
    if (print_rdma_devices(std::cout)) return receiver::kExitSuccess;
    std::cerr << "rdma-recv: " << no_rdma_device_message() << "\n";
    return kExitFailure;
  }
  init_logging(options.verbosity, "rdma-recv");
  // Refused rather than warned about: a listener on loopback looks healthy and can never
  // be reached (no RDMA device serves lo), and a warning scrolls away in a journal. Exit 2
  // is also the status the systemd unit does not restart on (RestartPreventExitStatus).
  if (options.bind_address && resolves_to_loopback(*options.bind_address)) {
    spdlog::error(
        "--bind {}: RDMA does not work over loopback, so no sender could ever connect, not "
        "even one on this host; {}; or leave out --bind to listen on every address "
        "(rdma-recv --list-devices shows them)",
        *options.bind_address, loopback_remedy());
    return kExitUsage;
  }
  if (options.check) return receiver::run_preflight(options, std::cout);

  Fd dir(::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    const int err = errno;
    spdlog::error("cannot open output directory {}: {}; {}", options.dir, std::strerror(err),
                  output_dir_hint(err));
    return kExitUsage;
  }
  if (::faccessat(dir.get(), ".", W_OK, AT_EACCESS) != 0) {
    const int err = errno;
    spdlog::error("output directory {} is not writable: {}; {}", options.dir, std::strerror(err),
                  output_dir_hint(err));
    return kExitUsage;
  }
  if (options.fetch) {
    // rdma-recv --from: one fetch, then exit with its status (receiver/fetch_command.hpp).
    if (!any_rdma_device()) {
      spdlog::error("{}", no_rdma_device_message());
      return sender::kExitConnection;
    }
    try {
      return receiver::run_fetch(options, std::move(dir));
    } catch (const SysError& e) {
      const std::string hint = rdma_setup_hint(e.error());
      spdlog::error("{}{}{}", e.what(), hint.empty() ? "" : "; ", hint);
      return hint.empty() ? sender::kExitOther : sender::kExitConnection;
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return sender::kExitOther;
    }
  }
  std::optional<proto::SecretStore> secrets;
  if (options.secrets_file) {
    try {
      secrets = receiver::load_secrets_file(*options.secrets_file);
      spdlog::info("loaded {} id(s) from {}", secrets->size(), *options.secrets_file);
    } catch (const std::exception& e) {
      spdlog::error("{}; fix the secrets file, or leave out --secrets", e.what());
      return kExitUsage;
    }
  }
  std::optional<proto::SenderKeyStore> sender_keys;
  if (options.senders_file) {
    try {
      sender_keys = load_key_store(*options.senders_file, "senders file");
      spdlog::info("loaded {} sender key(s) from {}: only senders that prove one get in{}",
                   sender_keys->size(), *options.senders_file,
                   options.require_seal ? ", sealed"
                                        : "; --allow-clear: one that does not seal is served "
                                          "in clear");
    } catch (const std::exception& e) {
      spdlog::error("{}; fix the senders file (docs/SECURITY.md)", e.what());
      return kExitUsage;
    }
  }
  // Bound before any device work: a port in use is a usage error, and nothing was started.
  receiver::ReceiverMetrics metrics(dir.get());
  std::optional<MetricsServer> metrics_server;
  if (!bind_metrics(metrics_server, options.metrics, [&metrics] { return metrics.render(); }))
    return kExitUsage;
  if (!any_rdma_device()) {
    spdlog::error("{}", no_rdma_device_message());
    return kExitFailure;
  }
  if (auto rc = apply_device(options)) return *rc;
  warn_about_memlock(options);

  try {
    receiver::Daemon daemon(options, std::move(dir), std::move(secrets), std::move(sender_keys),
                            &metrics);
    start_metrics(metrics_server, options.metrics);
    const int rc = daemon.run();
    if (daemon.disk_work_left()) {
      // A worker is stuck in the kernel (a hung file system): destroying the daemon would
      // wait for it, or free what it still uses. Leave without destructors.
      spdlog::shutdown();
      std::_Exit(rc);
    }
    return rc;
  } catch (const SysError& e) {
    if (e.error() == EADDRINUSE) {
      spdlog::error(
          "port {} is already in use (another rdma-recv?): stop the other listener "
          "or choose another --port",
          options.port);
    } else if (const std::string hint = rdma_setup_hint(e.error()); !hint.empty()) {
      spdlog::error("{}; {}", e.what(), hint);
    } else {
      spdlog::error("{}", e.what());
    }
    return kExitFailure;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitFailure;
  }
}
