#include "sender/preflight.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>

#include "common/cli/error_hints.hpp"
#include "common/crypto/key_files.hpp"
#include "common/error.hpp"
#include "common/os/fd.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/devices.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/rdma_transport.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "sender/memlock.hpp"

namespace rdmax::sender {

namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The CM event `wanted` on `channel` within `timeout`; otherwise why not, as a FAIL line's
// text and remedy.
std::optional<preflight::Check> expect_event(EventChannel& channel, rdma_cm_event_type wanted,
                                             std::chrono::milliseconds timeout, const Receiver& r,
                                             const std::string& what) {
  auto event = preflight::wait_cm_event(channel, Clock::now() + timeout);
  if (!event)
    return preflight::failure(
        what + ": no answer within " + std::to_string(timeout.count()) + " ms",
        "check that rdma-recv runs there and that UDP port 4791 (RoCE) "
        "is open between the hosts");
  const rdma_cm_event_type type = event->type();
  const int status = event->status();
  const std::string said = cm_reject_words(event->get());
  event->ack();
  if (type == wanted) return std::nullopt;
  return preflight::failure(
      what + ": " + rdma_event_str(type) + " (status " + std::to_string(status) + ")",
      connect_failure_message(type, status, r.host, r.port, said));
}
// --key-file (or RDMAX_KEY_FILE), loaded as a transfer loads it.
preflight::Check key_file_check(const SenderOptions& o) {
  if (!o.key_file)
    return preflight::pass(
        "key file: none (--key-file, RDMAX_KEY_FILE): no key is offered, and a receiver "
        "started with --senders refuses this sender");
  try {
    const proto::SenderKey key = load_key_file(*o.key_file);
    return preflight::pass("key file " + *o.key_file + ": owner-only, id '" +
                           proto::escape_for_log(key.id) + "', a " +
                           std::to_string(key.key.size() * 8) + "-bit key");
  } catch (const std::exception& e) {
    return preflight::failure(e.what(),
                              "fix the key file: one 'ID KEY' line, mode 0600 (docs/SECURITY.md)");
  }
}
}  // namespace

preflight::Check receiver_answers_check(const SenderOptions& o, const Receiver& r) {
  const std::string what = "receiver at " + host_and_port(r.host, r.port);
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.connect_timeout);
  try {
    EventChannel channel;
    channel.set_nonblocking();
    CmId id(channel);
    id.resolve_addr(r.host.c_str(), r.port, timeout);
    if (auto f = expect_event(channel, RDMA_CM_EVENT_ADDR_RESOLVED, timeout, r, what)) return *f;
    id.resolve_route(timeout);
    if (auto f = expect_event(channel, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout, r, what)) return *f;
    RdmaTransport transport(std::move(id), RdmaTransport::Depths{4, 4, 1});
    transport.connect();
    if (auto f = expect_event(channel, RDMA_CM_EVENT_ESTABLISHED, timeout, r, what)) return *f;
    // Leave before the Hello: the receiver logs a sender that offered nothing.
    transport.disconnect();
    (void)preflight::wait_cm_event(channel, Clock::now() + 2s);  // DISCONNECTED, acked
    return preflight::pass(what +
                           ": accepts connections (connected, then left before "
                           "offering a file)");
  } catch (const std::exception& e) {
    const std::string hint = [&] {
      if (const auto* sys = dynamic_cast<const SysError*>(&e)) return rdma_setup_hint(sys->error());
      return std::string();
    }();
    return preflight::failure(what + ": " + e.what(),
                              hint.empty() ? "check --host and --port" : hint);
  }
}

int run_preflight(const SenderOptions& o, std::ostream& out) {
  preflight::Report report(out);
  // -d DEV1,DEV2: each device the connections spread over.
  bool devices_ok = true;
  if (o.devices.size() > 1) {
    for (const std::string& device : o.devices)
      devices_ok = report.add_all(preflight::device_checks(device)) && devices_ok;
  } else {
    devices_ok = report.add_all(preflight::device_checks(o.device));
  }
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.connect_timeout);
  // -r or several PATHs go over the -P connections; a single file over one.
  const bool many = o.recursive || o.files.size() > 1;
  report.add(key_file_check(o));
  report.add(
      memlock_prediction(preflight::current_memlock_limit(), many ? std::max(1U, o.parallel) : 1));
  // Every receiver of -H, each with its route and its answer: a transfer needs them all.
  // Each address of one (HOST+HOST2: its rails) is checked from the device of the first
  // connection that goes there: connection i goes to receiver i mod R, its address i / R, from
  // device i mod D of -d DEV1,DEV2 (and from that device's address, as the transfer does).
  for (std::size_t ri = 0; ri < o.receivers.size(); ++ri) {
    const Receiver& receiver = o.receivers[ri];
    for (std::size_t k = 0; k < receiver.addresses(); ++k) {
      const Receiver r{receiver.address(k), receiver.port, {}};
      const std::string where = host_and_port(r.host, r.port);
      std::optional<std::string> device = o.device;
      std::optional<std::string> source;
      if (o.devices.size() > 1) {
        device = o.devices[(ri + k * o.receivers.size()) % o.devices.size()];
        source = first_ipv4_address(*device);
      }
      const auto route =
          !devices_ok
              ? preflight::failure("route to " + where + ": not tried", "fix the RDMA device first")
          : device && o.devices.size() > 1 && !source
              ? preflight::failure("route to " + where + " from " + *device +
                                       ": the device's interface has no IPv4 address",
                                   "give " + *device + "'s network interface an address")
              : preflight::route_check(r.host, r.port, device, timeout, source);
      report.add(route);
      report.add(route.ok ? receiver_answers_check(o, r)
                          : preflight::failure("receiver at " + where + ": not tried",
                                               "fix the route first"));
    }
  }
  return report.all_ok() ? 0 : 1;
}

int run_serve_preflight(const SenderOptions& o, std::ostream& out) {
  preflight::Report report(out);
  report.add_all(preflight::device_checks(std::nullopt));
  report.add_all(preflight::listen_checks(o.bind_address, o.port, "another rdma-send --serve?"));
  const std::string& dir = *o.serve;
  if (Fd exported(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); exported) {
    report.add(preflight::pass("export " + proto::escape_for_log(dir) +
                               ": a directory this user can open (served read only)"));
  } else {
    report.add(
        preflight::failure("export " + proto::escape_for_log(dir) + ": " + std::strerror(errno),
                           "name a directory this user may read, after --serve"));
  }
  if (!o.readers_file) {
    report.add(preflight::pass(
        "readers file: none (--readers): any fetcher that reaches the port may fetch all of the "
        "export, in clear" +
        std::string(o.allow.empty() ? " (no --allow either)" : ", from --allow")));
  } else {
    report.add(preflight::credentials_check(
        "readers file", *o.readers_file, "--readers", "one 'ID KEY [SUBDIR]'", [&] {
          return std::to_string(load_key_store(*o.readers_file, "readers file").size()) +
                 " reader key(s)";
        }));
  }
  // The daemon splits RLIMIT_MEMLOCK over --max-connections sessions (sender/memlock.hpp).
  report.add(memlock_prediction(preflight::current_memlock_limit(), o.max_connections));
  if (auto metrics = preflight::metrics_check(o.metrics)) report.add(*metrics);
  return report.all_ok() ? 0 : 1;
}

}  // namespace rdmax::sender
