#pragma once
// rdma-send --serve DIR: a daemon that exports DIR, read only, to fetchers (rdma-recv --from,
// docs/PROTOCOL.md 7.13). One epoll loop serves every connection: it owns the listening
// cm_id, makes each connection's transport on CONNECT_REQUEST, lets the connection's intake
// (sender/serve_intake.hpp) take the request and walk it, then runs the sender's own driver
// (sender/connection.hpp) over the same wire for the session, exactly as a push sends. Disk
// and hashing work runs on the worker pool.
//
// Stopping: SIGINT/SIGTERM stop accepting; requests not yet served are told the server stops,
// sessions are ended as a push's SIGINT ends them (the fetcher keeps what it stored, and a
// fetch run again continues), and the daemon exits once every connection closed (bounded).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/cli/service_notify.hpp"
#include "common/crypto/auth_penalties.hpp"
#include "common/os/event_loop.hpp"
#include "common/os/fd.hpp"
#include "common/rdma/address_filter.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/rdma_transport.hpp"
#include "common/work/work_pool.hpp"
#include "sender/connection.hpp"
#include "sender/memlock.hpp"
#include "sender/options.hpp"
#include "sender/serve_intake.hpp"
#include "sender/serve_metrics.hpp"
#include "sender/served_session.hpp"
#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

class ServeDaemon {
 public:
  // `export_dir`: DIR, opened as a directory; `readers`: --readers (null: no keys).
  // `metrics`: --metrics (null: none); counted by the loop, read by the metrics server.
  ServeDaemon(const SenderOptions& options, Fd export_dir,
              const proto::SenderKeyStore* readers = nullptr, ServeMetrics* metrics = nullptr);
  ~ServeDaemon();
  // Runs until a signal asks it to stop (0) or the device goes away (1), and every
  // connection has closed (bounded).
  int run();

 private:
  using Clock = EventLoop::Clock;
  // A connection: its transport, its intake, then its session; destroyed in reverse.
  struct Peer {
    std::unique_ptr<RdmaTransport> transport;
    std::unique_ptr<ServeIntake> intake;
    std::unique_ptr<ServedSession> session;
    bool reapable() const;
  };

  void on_cm_events();
  void on_connect_request(rdma_cm_id* id);
  void serve(std::uint64_t number, ServedTree share);
  void on_signal(int sig);
  void on_tick(Clock::time_point now);
  void reap_closed();
  bool finished();
  Peer* peer_of(std::uint64_t number);
  // What systemd's status line says (connections now; bytes and files of every session).
  ServiceStatus service_status() const;

  const SenderOptions& options_;
  AddressFilter addresses_;  // --allow / --deny, judged in the CONNECT_REQUEST itself
  RefusalLog refusals_;      // refused addresses are logged once a minute each
  AuthPenalties penalties_;  // addresses that failed to authenticate wait, in the CM event
  Fd export_;
  WorkPool pool_;  // outlives every connection
  ServeContext context_;
  std::optional<SharedBwlimit> bwlimit_;  // --bwlimit: the server's rate, all sessions together
  MemlockBudget memlock_;                 // RLIMIT_MEMLOCK, a share per connection
  ServeSettings settings_;
  EventLoop loop_;
  EventChannel channel_;
  CmId listener_;
  // After the channel: connections (and their cm_ids) go before it.
  std::map<std::uint64_t, Peer> peers_;
  std::uint64_t next_number_ = 1;
  bool stopping_ = false;
  std::optional<Clock::time_point> give_up_;  // while stopping: until connections must close
  int status_ = 0;
  std::uint64_t bytes_sent_ = 0;  // by the sessions reaped
  std::uint64_t files_sent_ = 0;
  ServeMetrics* metrics_;     // --metrics, or null
  ServiceNotifier notifier_;  // systemd readiness, status and watchdog (Type=notify)
  ServiceStatus counted_{};   // the last status counted, at counted_at_
  Clock::time_point counted_at_{};
};

}  // namespace rdmax::sender
