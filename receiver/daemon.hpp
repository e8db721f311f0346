#pragma once
// The receiver daemon: one epoll loop serving every connection. It owns the listening
// cm_id, routes CM events to connections (cm_id->context), completion-channel fds and
// slot-worker eventfds to their connection, ticks timeouts, and shuts down cleanly on
// SIGINT/SIGTERM. The only other threads are the connections' slot workers, which hash
// and write (receiver/slot_worker.hpp); every verbs and CM call is made here.

#include <cstdint>
#include <map>
#include <memory>

#include "common/epoll.hpp"
#include "common/fd.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/signal_fd.hpp"
#include "common/timer_fd.hpp"
#include "protocol/secrets.hpp"
#include "receiver/connection.hpp"
#include "receiver/options.hpp"

namespace rdmax::receiver {

class Daemon {
 public:
  Daemon(const ReceiverOptions& options, Fd dir, std::optional<proto::SecretStore> secrets);
  // Runs until a signal asks it to stop and every connection has closed (bounded).
  int run();

 private:
  void on_cm_events();
  void on_connect_request(rdma_cm_id* id);
  void on_tick();
  void reap_closed();
  Connection* connection_of(rdma_cm_id* id);

  const ReceiverOptions& options_;
  Fd dir_;
  std::optional<proto::SecretStore> secrets_;
  ReceiverContext context_;
  Epoll epoll_;
  SignalFd signals_;
  TimerFd timer_;
  EventChannel channel_;
  CmId listener_;
  // Declared after the channel: connections (and their cm_ids) go before it.
  std::map<std::uint64_t, std::unique_ptr<Connection>> connections_;
  std::uint64_t next_number_ = 1;
  bool stopping_ = false;
};

}  // namespace rdmax::receiver
