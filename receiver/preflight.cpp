#include "receiver/preflight.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <ostream>
#include <variant>
#include <vector>

#include "common/cli/error_hints.hpp"
#include "common/cli/preflight.hpp"
#include "common/crypto/key_files.hpp"
#include "common/error.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/devices.hpp"
#include "common/rdma/event_channel.hpp"
#include "protocol/sizes.hpp"
#include "receiver/secrets_file.hpp"

namespace rdmax::receiver {

namespace {

using preflight::Check;
using preflight::failure;
using preflight::pass;

// The address the daemon would listen on (main.cpp's -d rule: without --bind, the device's
// first IPv4 address), or a FAIL line.
std::variant<std::optional<std::string>, Check> listen_address(const ReceiverOptions& o) {
  if (!o.device) return o.bind_address;
  if (o.bind_address) {
    if (!device_serves_address(*o.device, *o.bind_address))
      return failure("address " + *o.bind_address + ": not an address of " + *o.device +
                         "'s network interface",
                     "leave out --bind to use its first IPv4 address (see --list-devices)");
    return o.bind_address;
  }
  if (auto address = first_ipv4_address(*o.device)) return address;
  return failure(*o.device + ": no IPv4 address to listen on",
                 "add one (ip addr add ADDRESS/PREFIX dev NETDEV) or give an IPv6 address "
                 "with --bind");
}

// Binds and listens on the port, then closes it again (the address as the daemon picks it).
std::vector<Check> listen_checks(const ReceiverOptions& o) {
  auto address = listen_address(o);
  if (auto* check = std::get_if<Check>(&address)) return {*check};
  return preflight::listen_checks(std::get<std::optional<std::string>>(address), o.port,
                                  "another rdma-recv?");
}

Check secrets_check(const ReceiverOptions& o) {
  if (!o.secrets_file) return pass("secrets file: none (--secrets): every id is denied");
  return preflight::credentials_check(
      "secrets file", *o.secrets_file, "--secrets", "one 'ID SECRET'",
      [&] { return std::to_string(load_secrets_file(*o.secrets_file).size()) + " id(s)"; });
}

Check senders_check(const ReceiverOptions& o) {
  if (!o.senders_file)
    return pass(
        "senders file: none (--senders): any sender that reaches the port may write "
        "files" +
        std::string(o.allow.empty() ? " (no --allow either)" : ", from --allow"));
  return preflight::credentials_check(
      "senders file", *o.senders_file, "--senders", "one 'ID KEY [SUBDIR]'", [&] {
        const auto store = load_key_store(*o.senders_file, "senders file");
        return std::to_string(store.size()) + " sender key(s)";
      });
}

}  // namespace

int run_preflight(const ReceiverOptions& o, std::ostream& out) {
  preflight::Report report(out);
  const bool devices_ok = report.add_all(preflight::device_checks(o.device));
  if (devices_ok) {
    for (const auto& check : listen_checks(o)) report.add(check);
  } else {
    report.add(failure("listen on port " + std::to_string(o.port) + ": not tried",
                       "fix the RDMA device first"));
  }
  const std::uint64_t window = std::uint64_t{o.slots} * o.slot_size;
  const auto limit = preflight::current_memlock_limit();
  auto memlock = preflight::memlock_check(limit, window,
                                          "one connection's receive window (--slots " +
                                              std::to_string(o.slots) + " x --slot-size " +
                                              proto::format_size(o.slot_size) + ")");
  if (memlock.ok) {
    const std::uint64_t fits = preflight::memlock_fits(limit, window);
    if (fits < o.max_connections)
      memlock.what += "; room for " + std::to_string(fits) + " of --max-connections " +
                      std::to_string(o.max_connections) + " at once";
  }
  report.add(memlock);
  report.add(preflight::directory_check(o.dir, o.slot_size));
  report.add(secrets_check(o));
  report.add(senders_check(o));
  if (auto metrics = preflight::metrics_check(o.metrics)) report.add(*metrics);
  // Resolved and checked when the options were read (a bad rule is a usage error): say
  // what they let in, names with the addresses they stand for.
  if (const AddressFilter filter(o.allow, o.deny); filter.active())
    report.add(pass("senders " + filter.describe()));
  return report.all_ok() ? kExitSuccess : kExitFailure;
}

}  // namespace rdmax::receiver
