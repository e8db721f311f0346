#include "common/cli/error_hints.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "common/cli/loopback.hpp"
#include "protocol/refusals.hpp"

namespace rdmax {
namespace {

// IB CM reject reasons (IBTA 12.6.7.2) that rdma_cm reports as the REJECTED status.
constexpr int kRejectInvalidServiceId = 8;  // nobody listens on that port
constexpr int kRejectConsumer = 28;         // the listener itself said no

std::string where(const std::string& host, std::uint16_t port) {
  return "cannot connect to " + host + " port " + std::to_string(port) + ": ";
}

}  // namespace

std::string rdma_setup_hint(int err) {
  switch (err) {
    case ENODEV:
    case EADDRNOTAVAIL:
      return "no RDMA device serves that address: use an address of a network interface "
             "that has an RDMA device (see --list-devices; 127.0.0.1 never works)";
    case ENETUNREACH:
    case EHOSTUNREACH:
      return "no route to that address: check `ip route get ADDRESS`";
    case ENOENT:
    case ENOSYS:
      return "the RDMA kernel modules are not loaded (modprobe rdma_ucm ib_uverbs)";
    case EACCES:
    case EPERM:
      return "no access to /dev/infiniband: check its permissions (rdma-core's udev rules "
             "make it usable by every user)";
    default:
      return {};
  }
}

std::string cm_reject_words(const rdma_cm_event* event) {
  if (event == nullptr || event->event != RDMA_CM_EVENT_REJECTED) return {};
  return proto::decode_cm_reject(event->param.conn.private_data,
                                 event->param.conn.private_data_len);
}

std::string connect_failure_message(rdma_cm_event_type event, int status, const std::string& host,
                                    std::uint16_t port, std::string_view receiver_says) {
  const int err = std::abs(status);
  const std::string prefix = where(host, port);
  switch (event) {
    case RDMA_CM_EVENT_REJECTED:
      if (status == kRejectConsumer && !receiver_says.empty())
        return prefix + "the receiver refused the connection: " + std::string(receiver_says);
      if (status == kRejectConsumer)
        return prefix +
               "the receiver refused the connection (too many connections, or shutting "
               "down); try again later";
      return prefix + "no rdma-recv listens there (connection rejected" +
             (status == kRejectInvalidServiceId ? "" : ", reason " + std::to_string(status)) +
             "); start rdma-recv on that host, or check --host and --port against its "
             "'listening on' line";
    case RDMA_CM_EVENT_ADDR_ERROR:
      if (is_loopback_host(host))
        return prefix + "RDMA does not work over loopback; " + loopback_remedy();
      if (err == ENODEV || err == EADDRNOTAVAIL)
        return prefix +
               "no local RDMA device can reach that address; check `rdma link` and `ip "
               "route get " +
               host + "` (the route must leave through an interface with an RDMA device)";
      return prefix + "address resolution failed (" + std::system_category().message(err) +
             "); check that the host is up and `ip route get " + host + "`";
    case RDMA_CM_EVENT_ROUTE_ERROR:
      if (is_loopback_host(host))
        return prefix + "RDMA does not work over loopback; " + loopback_remedy();
      return prefix + "no RDMA route (" + std::system_category().message(err) +
             "); check `ip route get " + host + "` and that its interface has an RDMA device";
    case RDMA_CM_EVENT_UNREACHABLE:
      return prefix + "no answer to the connection request (" +
             std::system_category().message(err) +
             "); check that the host is up, runs rdma-recv on that port, and that no "
             "firewall drops RoCE (UDP port 4791)";
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return prefix + "the connection failed while being set up (" +
             std::system_category().message(err) +
             "); check the receiver's log, and that both ends' RDMA devices are up";
    default:
      return prefix + ::rdma_event_str(event) + " (status " + std::to_string(status) + ")";
  }
}

std::string outcome_message(proto::SenderOutcome outcome) {
  using O = proto::SenderOutcome;
  switch (outcome) {
    case O::ReceiverFailed:
      return "the receiver could not store the file (for example its disk is full); see the "
             "receiver's log";
    case O::ConnectFailed:
      return "cannot connect (see above)";
    case O::ConnectionLost:
      return "the connection broke before the transfer finished; run rdma-send again";
    case O::Rejected:
      return "the receiver rejected the file (see the reason above)";
    case O::HashMismatch:
      return "the data arrived damaged (digest mismatch); nothing was stored, send it again";
    case O::Denied:
      return "the file arrived intact, but the receiver does not know the --id; ask its "
             "operator to add it to the secrets file";
    case O::Success:
      return "success";
    case O::ProtocolError:
      return "protocol error (see above)";
    case O::Interrupted:
      return "interrupted";
    case O::VersionUnsupported:
      return "the receiver does not speak this protocol version";
    case O::LocalFailure:
      return "this sender failed (see above)";
    case O::SomeFailed:
      return "some entries failed (see above)";
    case O::AuthFailed:
      return "authentication failed (see above)";
  }
  return proto::to_string(outcome);
}

std::string input_file_hint(int err) {
  switch (err) {
    case ENOENT:
      return "check the path";
    case EACCES:
    case EPERM:
      return "rdma-send runs as uid " + std::to_string(::getuid()) +
             ": make the file readable by it (chmod, chown) or run as the file's owner";
    case EISDIR:
      return "add -r (--recursive) to send a directory and everything under it";
    default:
      return {};
  }
}

std::string output_dir_hint(int err) {
  switch (err) {
    case ENOENT:
      return "create it (mkdir -p) or choose another with --dir";
    case ENOTDIR:
      return "it is not a directory; choose a directory with --dir";
    case EACCES:
    case EPERM:
    case EROFS:
      return "rdma-recv runs as uid " + std::to_string(::getuid()) +
             ": give that user write access (chown/chmod) or choose another --dir";
    default:
      return "choose another directory with --dir";
  }
}

std::string cannot_read_text(int err) {
  const std::string hint = input_file_hint(err);
  return "cannot read: " + std::system_category().message(err) + (hint.empty() ? "" : "; " + hint);
}

}  // namespace rdmax
