#include "receiver/daemon.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/rdma/connection_requests.hpp"
#include "protocol/refusals.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::receiver {

namespace {
// After the grace (or a second signal): how long connections told to stop may take to close.
constexpr auto kShutdownGrace = std::chrono::seconds(5);
// After the connections: how long disk work still running may take before rdma-recv exits
// regardless (a hung file system must not make SIGTERM useless).
constexpr auto kDiskGrace = std::chrono::seconds(10);
constexpr auto kTick = std::chrono::milliseconds(100);  // also the keepalive resolution
}  // namespace

Daemon::Daemon(const ReceiverOptions& options, Fd dir, std::optional<proto::SecretStore> secrets,
               std::optional<proto::SenderKeyStore> sender_keys, ReceiverMetrics* metrics)
    : options_(options),
      addresses_(options.allow, options.deny),
      dir_(std::move(dir)),
      secrets_(std::move(secrets)),
      sender_keys_(std::move(sender_keys)),
      pool_(options.workers),
      expiry_(pool_),
      metrics_(metrics != nullptr ? *metrics : own_metrics_),
      context_{options_, dir_.get(), secrets_ ? &*secrets_ : nullptr, pool_, metrics_, 0},
      loop_(kTick),
      listener_(channel_) {
  if (sender_keys_) {
    context_.sender_keys = &*sender_keys_;
    context_.penalties = &penalties_;
  }
  context_.stripe_groups = &stripe_groups_;
  if (options_.partials) {
    partials_.emplace(dir_.get(), PartialStore::Limits{options_.partial_ttl, options_.partial_max});
    context_.partials = &*partials_;
  }
  channel_.set_nonblocking();
  const char* bind = options_.bind_address ? options_.bind_address->c_str() : nullptr;
  listener_.bind_and_listen(bind, options_.port, 64);
  loop_.watch(channel_.fd(), [this] { on_cm_events(); });
  // Each connection's callbacks run under its own failure policy.
  loop_.watch(pool_.ready_fd(), [this] { pool_.run_completions(); });
  loop_.on_signal([this](int sig) { on_signal(sig); });
  loop_.on_tick([this](Clock::time_point now) { on_tick(now); });
}

Daemon::~Daemon() {
  // Jobs still running use their connection's window and file: let them finish before
  // anything is destroyed. (When run() gave up on them, main exits without destroying.)
  wait_for_disk_work();
  peers_.clear();
}

int Daemon::run() {
  spdlog::info("listening on {} (files go to {}; {} worker threads)", listener_.local_address(),
               options_.dir, pool_.threads());
  if (addresses_.active()) spdlog::info("senders {}", addresses_.describe());
  notifier_.ready(service_status(), Clock::now());
  loop_.run([this] { return finished(); }, [this] { reap_closed(); });
  if (!wait_for_disk_work()) {
    disk_work_left_ = true;
    return status_ != 0 ? status_ : 1;
  }
  peers_.clear();
  spdlog::info("stopped");
  return status_;
}

void Daemon::on_signal(int sig) {
  if (!stopping_) {
    spdlog::info("signal {}: shutting down{}", sig,
                 options_.grace.count() > 0 && !peers_.empty()
                     ? fmt::format(" once the transfers under way end (at most {}s; a second "
                                   "signal stops at once)",
                                   options_.grace.count())
                     : "");
    return stop(0);
  }
  if (!give_up_) {
    spdlog::info("signal {}: stopping the transfers under way now", sig);
    end_grace();
  }
}

void Daemon::stop(int status) {
  if (status != 0) status_ = status;
  if (stopping_) return;
  stopping_ = true;
  notifier_.stopping();
  grace_ends_ = Clock::now() + options_.grace;
  // Those with nothing under way go now; the others when their transfer ends (on_tick).
  for (auto& [number, p] : peers_)
    if (!p.connection->transferring()) p.connection->shut_down();
  // No grace when asked for none, or when the daemon stops on a failure (the device gone).
  if (options_.grace.count() == 0 || status != 0) end_grace();
}

void Daemon::end_grace() {
  if (give_up_) return;
  give_up_ = Clock::now() + kShutdownGrace;
  for (auto& [number, p] : peers_) p.connection->shut_down();
}

bool Daemon::finished() {
  if (!stopping_) return false;
  if (peers_.empty()) return true;
  if (give_up_ && Clock::now() > *give_up_) {
    spdlog::warn("{} connection(s) did not close in time; releasing them", peers_.size());
    return true;
  }
  return false;
}

Daemon::Peer* Daemon::peer_of(std::uint64_t number) {
  auto it = peers_.find(number);
  return it != peers_.end() ? &it->second : nullptr;
}

void Daemon::on_cm_events() {
  while (auto event = channel_.try_get()) {
    const rdma_cm_event_type type = event->type();
    rdma_cm_id* id = event->id();
    spdlog::debug("cm event {} (status {})", rdma_event_str(type), event->status());
    event->ack();  // before handling: handling may destroy the id
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      on_connect_request(id);
      continue;
    }
    if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
      // Every connection on it is gone, and so is the listener: nothing left to serve.
      spdlog::error("the RDMA device was removed; stopping (restart rdma-recv once it is back)");
      if (Peer* p = id != listener_.get() ? peer_of(cm_number_of(id)) : nullptr)
        p->connection->on_cm_failure("the RDMA device was removed");
      stop(1);
      continue;
    }
    if (id == listener_.get()) continue;
    Peer* p = peer_of(cm_number_of(id));
    if (p == nullptr) continue;  // a connection already reaped
    switch (type) {
      case RDMA_CM_EVENT_ESTABLISHED:
        spdlog::debug("[{}] connection established", p->connection->label());
        p->transport->on_established();  // a disconnect asked for before goes now
        p->connection->on_established();
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        p->connection->on_disconnected();
        break;
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_REJECTED:
        p->connection->on_cm_failure(rdma_event_str(type));
        break;
      default:
        break;
    }
  }
}

void Daemon::on_connect_request(rdma_cm_id* id) {
  CmId cm_id = CmId::adopt(id);  // destroyed on any early return
  // --allow / --deny first: a stranger gets no queue pair, no memory, no file, only the
  // rejection (and one log line a minute, however often it tries).
  const sockaddr* source = ::rdma_get_peer_addr(id);
  const std::string address = address_text(source);  // without the port: what is judged
  if (const auto verdict = addresses_.judge(source); verdict != AddressFilter::Verdict::Allowed) {
    if (const auto unlogged = refusals_.note(address, Clock::now())) {
      spdlog::warn("refused a connection from {}: {}{}", address, to_string(verdict),
                   *unlogged > 0 ? " (" + std::to_string(*unlogged) +
                                       " more refused in the last minute, not logged)"
                                 : std::string());
    }
    metrics_.count(SenderRefusal::Address);
    reject_request(cm_id, "this address may not connect (rdma-recv --allow/--deny)");
    return;
  }
  // An address that just failed to authenticate waits (common/crypto/auth_penalties.hpp): key
  // guessing goes no faster than the penalties, and costs the daemon nothing meanwhile.
  if (const auto wait = penalties_.refused_for(address, Clock::now())) {
    if (refusals_.note(address, Clock::now()))
      spdlog::warn(
          "refused a connection from {}: it failed to authenticate; it may try again "
          "in {}s",
          address, wait->count());
    metrics_.count(SenderRefusal::SlowedDown);
    reject_request(cm_id, "too many failed authentications from this address; try again in " +
                              std::to_string(wait->count()) + "s");
    return;
  }
  if (stopping_ || peers_.size() >= options_.max_connections) {
    spdlog::warn("refusing a connection: {}", stopping_ ? "shutting down" : "too many connections");
    reject_request(cm_id, stopping_ ? "shutting down; try another receiver or later"
                                    : "too many connections; try again later");
    return;
  }
  const std::uint64_t number = next_number_++;
  cm_id.set_context(cm_context_for(number));
  const std::string peer = cm_id.peer_address();
  try {
    Peer p;
    // Receives are posted here, before rdma_accept: the sender may send as soon as the
    // connection is established.
    const std::uint32_t depth = control_depth(options_.slots);
    p.transport =
        std::make_unique<RdmaTransport>(std::move(cm_id), RdmaTransport::Depths{depth, depth, 0});
    p.connection = std::make_unique<Connection>(*p.transport, peer, context_, address);
    loop_.watch(p.transport->completion_fd(), [this, number] {
      if (Peer* found = peer_of(number)) found->connection->poll();
    });
    peers_.emplace(number, std::move(p));
    peers_.at(number).transport->accept();
    ++metrics_.connections_accepted;
  } catch (const std::exception& e) {
    spdlog::error("[{}] cannot set up a connection: {}", peer, e.what());
    if (Peer* p = peer_of(number)) {
      loop_.forget(p->transport->completion_fd());
      peers_.erase(number);
    }
  }
}

void Daemon::on_tick(Clock::time_point now) {
  for (auto& [number, p] : peers_) p.connection->tick(now);
  if (stopping_ && !give_up_) {
    if (now >= *grace_ends_) {
      spdlog::warn(
          "the grace of {}s is over; stopping {} transfer(s) under way (what they "
          "stored is kept for a resume)",
          options_.grace.count(), peers_.size());
      end_grace();
    } else {
      for (auto& [number, p] : peers_)
        if (!p.connection->transferring()) p.connection->shut_down();
    }
  }
  notifier_.tick(service_status(), now);
  metrics_.connections_open = peers_.size();
  metrics_.pool_queued = pool_.queued();
  expire_partials(now);
}

// Partials untouched for --partial-ttl go, then the oldest beyond --partial-max: at start,
// then every quarter of the ttl (at least every second, at most every minute). On the pool:
// it lists and removes files.
void Daemon::expire_partials(Clock::time_point now) {
  if (!partials_ || now < next_expiry_ || !expiry_.idle() || stopping_) return;
  next_expiry_ =
      now + std::clamp<std::chrono::steady_clock::duration>(
                options_.partial_ttl / 4, std::chrono::seconds(1), std::chrono::seconds(60));
  auto expired = std::make_shared<PartialStore::Expired>();
  auto error = std::make_shared<std::string>();
  expiry_.post(
      [this, expired, error] {
        try {
          *expired = partials_->expire(std::chrono::system_clock::now());
        } catch (const std::exception& e) {
          *error = e.what();
        }
      },
      [expired, error] {
        if (!error->empty())
          spdlog::warn("cannot expire partial files: {}", *error);
        else if (expired->files > 0)
          spdlog::info("removed {} expired partial file(s) ({})", expired->files,
                       proto::format_size(expired->bytes));
      });
}

ServiceStatus Daemon::service_status() const {
  return {peers_.size(), metrics_.received_bytes.load(), metrics_.files(FileOutcome::Good)};
}

void Daemon::reap_closed() {
  for (auto it = peers_.begin(); it != peers_.end();) {
    if (it->second.connection->reapable()) {
      loop_.forget(it->second.transport->completion_fd());
      it = peers_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Daemon::wait_for_disk_work() {
  auto busy = [&] {
    return !expiry_.idle() || std::any_of(peers_.begin(), peers_.end(), [](const auto& entry) {
      return !entry.second.connection->idle();
    });
  };
  if (!busy()) return true;
  spdlog::info("waiting for the disk work in progress to finish");
  for (auto& [number, p] : peers_) p.connection->abandon();
  const auto give_up = std::chrono::steady_clock::now() + kDiskGrace;
  while (busy()) {
    if (std::chrono::steady_clock::now() > give_up) {
      spdlog::error(
          "a disk operation (write, fsync or rename) has not finished after {}s; exiting "
          "without waiting for it (its temporary file may be left in the directory)",
          std::chrono::duration_cast<std::chrono::seconds>(kDiskGrace).count());
      return false;
    }
    pollfd fd{pool_.ready_fd(), POLLIN, 0};
    ::poll(&fd, 1, 1000);
    pool_.run_completions();
  }
  return true;
}

}  // namespace rdmax::receiver
