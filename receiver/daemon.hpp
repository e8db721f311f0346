#pragma once
// The receiver daemon: one epoll loop serving every connection. It owns the listening
// cm_id, creates each connection's transport (its device resources) on CONNECT_REQUEST,
// routes CM events (by the number in cm_id->context), completion fds and the worker
// pool's results to their connection, ticks timeouts, and shuts down cleanly on
// SIGINT/SIGTERM. Disk and hashing work runs on the pool (common/work/work_pool.hpp); every
// verbs and CM call is made on the process's event loop (common/os/event_loop.hpp).
//
// Shutting down (rdma-recv(1), "Stopping"): the first SIGINT/SIGTERM stops accepting
// connections, closes those that have not started a transfer, and gives the others up to
// --grace to finish (each is closed as soon as its transfer ends); then, or at a second
// signal, every connection is told the receiver is shutting down (what each file stored is
// kept for a resume) and has a few seconds to close.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "common/cli/service_notify.hpp"
#include "common/os/event_loop.hpp"
#include "common/os/fd.hpp"
#include "common/rdma/address_filter.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/rdma_transport.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/secrets.hpp"
#include "protocol/sender_keys.hpp"
#include "receiver/connection.hpp"
#include "receiver/metrics.hpp"
#include "receiver/options.hpp"
#include "receiver/stripe_groups.hpp"

namespace rdmax::receiver {

class Daemon {
 public:
  // `metrics`: where it counts what --metrics shows (null: counted for the status line only).
  Daemon(const ReceiverOptions& options, Fd dir, std::optional<proto::SecretStore> secrets,
         std::optional<proto::SenderKeyStore> sender_keys = std::nullopt,
         ReceiverMetrics* metrics = nullptr);
  ~Daemon();
  // Runs until a signal asks it to stop (0) or the device goes away (1), and every
  // connection has closed (bounded).
  int run();
  // run() returned while a disk job still runs (a hung file system): the caller must exit
  // without destroying this daemon, whose memory the job still uses.
  bool disk_work_left() const { return disk_work_left_; }

 private:
  // A connection and the transport it runs on; the transport goes last.
  struct Peer {
    std::unique_ptr<RdmaTransport> transport;
    std::unique_ptr<Connection> connection;
  };

  using Clock = EventLoop::Clock;
  void on_cm_events();
  void on_connect_request(rdma_cm_id* id);
  void on_signal(int sig);
  void on_tick(Clock::time_point now);
  void expire_partials(Clock::time_point now);
  void stop(int status);  // stop accepting; the grace starts
  void end_grace();       // every connection is told to stop
  bool finished();
  void reap_closed();
  bool wait_for_disk_work();  // false: gave up after kDiskGrace
  Peer* peer_of(std::uint64_t number);
  ServiceStatus service_status() const;

  const ReceiverOptions& options_;
  AddressFilter addresses_;  // --allow / --deny, judged in the CONNECT_REQUEST itself
  RefusalLog refusals_;      // refused addresses are logged once a minute each
  Fd dir_;
  std::optional<proto::SecretStore> secrets_;
  std::optional<proto::SenderKeyStore> sender_keys_;  // --senders
  AuthPenalties penalties_;  // addresses that failed to authenticate wait, in the CM event
  WorkPool pool_;            // outlives every connection (their files' queues)
  // Partial files of interrupted transfers (--no-partial: none); outlive every connection.
  std::optional<PartialStore> partials_;
  WorkQueue expiry_;  // the periodic expire() of partials_
  std::chrono::steady_clock::time_point next_expiry_{};
  ReceiverMetrics own_metrics_;
  ReceiverMetrics& metrics_;
  // One file over several connections (PROTOCOL.md 7.12): outlives every connection.
  StripeGroups stripe_groups_;
  ReceiverContext context_;
  EventLoop loop_;
  EventChannel channel_;
  CmId listener_;
  // After the channel: connections (and their cm_ids) go before it.
  std::map<std::uint64_t, Peer> peers_;
  ServiceNotifier notifier_;  // systemd readiness, status and watchdog
  std::uint64_t next_number_ = 1;
  bool stopping_ = false;
  std::optional<Clock::time_point> grace_ends_;  // while stopping: until the grace ends
  std::optional<Clock::time_point> give_up_;     // after it: until connections must be closed
  int status_ = 0;
  bool disk_work_left_ = false;
};

}  // namespace rdmax::receiver
