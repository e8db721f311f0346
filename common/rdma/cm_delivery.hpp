#pragma once
// What rdma_cm tells a connection that connects, as calls on its driver (the sender's,
// sender/connection.hpp; a fetcher's, receiver/fetch_intake.hpp): the mapping, written once.

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/cli/error_hints.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/devices.hpp"
#include "protocol/sender_machine.hpp"

namespace rdmax {

// The event's status and what the messages and the -d check need.
struct CmDelivery {
  int status;
  const CmId* id;  // the connection's id, while it has not been handed to a transport
  const std::optional<std::string>& device;  // -d: the device the connection must use
  const std::string& host;
  std::uint16_t port;
  const std::string& receiver_says;  // a REJECTED's words (cm_reject_words), else empty
};

template <class Driver>
void deliver_cm_event(Driver& driver, rdma_cm_event_type type, const CmDelivery& d) {
  switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      return driver.on_setup(proto::SetupEvent::AddressResolved);
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      try {
        if (d.id != nullptr) require_device(d.id->verbs(), d.device);
      } catch (const std::exception& e) {
        return driver.on_connect_failed(e.what());
      }
      return driver.on_setup(proto::SetupEvent::RouteResolved);
    case RDMA_CM_EVENT_ESTABLISHED:
      return driver.on_established();
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return driver.on_connect_failed(
          connect_failure_message(type, d.status, d.host, d.port, d.receiver_says));
    case RDMA_CM_EVENT_DISCONNECTED:
      return driver.on_disconnected();
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return driver.on_cm_failure("the RDMA device was removed");
    default:
      return;
  }
}

}  // namespace rdmax
