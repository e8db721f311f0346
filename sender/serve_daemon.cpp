#include "sender/serve_daemon.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "common/cli/preflight.hpp"
#include "common/rdma/connection_requests.hpp"
#include "protocol/names.hpp"
#include "protocol/refusals.hpp"
#include "protocol/sizes.hpp"
#include "sender/memlock.hpp"
#include "sender/served_session.hpp"

namespace rdmax::sender {

namespace {
constexpr auto kServeTick = std::chrono::milliseconds(100);
// After a signal: how long connections told to stop may take to close.
constexpr auto kServeStopGrace = std::chrono::seconds(5);
// Receives posted before rdma_accept (docs/PROTOCOL.md 7.13: at least 80, so that a fetcher
// may send its Wants without waiting), and what a sender's session needs after them.
constexpr std::uint32_t kServerReceives = std::max<std::uint32_t>(80, kSessionDepths.recv);
}  // namespace

ServeDaemon::ServeDaemon(const SenderOptions& options, Fd export_dir,
                         const proto::SenderKeyStore* readers, ServeMetrics* metrics)
    : options_(options),
      addresses_(options.allow, options.deny),
      export_(std::move(export_dir)),
      pool_(std::max(4u, options.hash_threads)),
      context_{export_.get(), pool_, options.timeout, readers, &penalties_, metrics},
      bwlimit_(options.bwlimit ? std::optional<SharedBwlimit>(*options.bwlimit) : std::nullopt),
      memlock_(preflight::current_memlock_limit(), options.max_connections, kSessionDepths),
      settings_{options.digest, options.timeout, bwlimit_ ? &*bwlimit_ : nullptr, &pool_,
                &memlock_},
      loop_(kServeTick),
      listener_(channel_),
      metrics_(metrics) {
  channel_.set_nonblocking();
  const char* bind = options_.bind_address ? options_.bind_address->c_str() : nullptr;
  listener_.bind_and_listen(bind, options_.port, 64);
  loop_.watch(channel_.fd(), [this] { on_cm_events(); });
  loop_.watch(pool_.ready_fd(), [this] { pool_.run_completions(); });
  loop_.on_signal([this](int sig) { on_signal(sig); });
  loop_.on_tick([this](Clock::time_point now) { on_tick(now); });
}

ServeDaemon::~ServeDaemon() {
  peers_.clear();
}

int ServeDaemon::run() {
  spdlog::info("serving {} read only on {} ({} worker threads)", *options_.serve,
               listener_.local_address(), pool_.threads());
  if (addresses_.active()) spdlog::info("fetchers {}", addresses_.describe());
  if (context_.readers != nullptr) {
    spdlog::info(
        "fetchers must prove a key listed in {} ({} id(s)), each confined to its "
        "subdirectory; sealed",
        *options_.readers_file, context_.readers->size());
  } else {
    spdlog::warn("no keys: {} may fetch everything beneath {}, in clear",
                 addresses_.active() ? "every fetcher those rules let in"
                                     : "any fetcher that reaches this port (--allow limits who)",
                 *options_.serve);
  }
  notifier_.ready(service_status(), Clock::now());
  loop_.run([this] { return finished(); }, [this] { reap_closed(); });
  notifier_.stopping();
  for (const auto& [number, p] : peers_) {
    if (p.session && !p.session->connection().idle()) {
      // A worker is stuck in the kernel (a hung file system) reading into a session's
      // buffers: destroying the session would wait for it forever. Leave without destructors,
      // as rdma-recv does.
      spdlog::error("a read is stuck in the file system; exiting without waiting for it");
      spdlog::shutdown();
      std::_Exit(status_ != 0 ? status_ : 1);
    }
  }
  peers_.clear();
  spdlog::info("stopped");
  return status_;
}

ServeDaemon::Peer* ServeDaemon::peer_of(std::uint64_t number) {
  auto it = peers_.find(number);
  return it != peers_.end() ? &it->second : nullptr;
}

bool ServeDaemon::Peer::reapable() const {
  if (session) return session->connection().finished();
  return intake->reapable();
}

void ServeDaemon::on_signal(int sig) {
  if (stopping_) return;
  spdlog::info("signal {}: stopping ({} connection(s) told to end)", sig, peers_.size());
  stopping_ = true;
  notifier_.stopping();
  give_up_ = Clock::now() + kServeStopGrace;
  for (auto& [number, p] : peers_) {
    if (p.session)
      p.session->connection().interrupt(sig);
    else
      p.intake->shut_down();
  }
}

bool ServeDaemon::finished() {
  if (!stopping_) return false;
  if (peers_.empty()) return true;
  if (Clock::now() > *give_up_) {
    spdlog::warn("{} connection(s) did not close in time; releasing them", peers_.size());
    return true;
  }
  return false;
}

void ServeDaemon::on_cm_events() {
  while (auto event = channel_.try_get()) {
    const rdma_cm_event_type type = event->type();
    rdma_cm_id* id = event->id();
    spdlog::debug("cm event {} (status {})", rdma_event_str(type), event->status());
    event->ack();  // before handling: handling may destroy the id
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      on_connect_request(id);
      continue;
    }
    if (type == RDMA_CM_EVENT_DEVICE_REMOVAL && id == listener_.get()) {
      spdlog::error("the RDMA device was removed; stopping (restart the server once it is back)");
      status_ = 1;
      on_signal(SIGTERM);
      continue;
    }
    if (id == listener_.get()) continue;
    Peer* p = peer_of(cm_number_of(id));
    if (p == nullptr) continue;  // a connection already reaped
    switch (type) {
      case RDMA_CM_EVENT_ESTABLISHED:
        p->transport->on_established();  // a disconnect asked for before goes now
        if (!p->session) p->intake->on_established();
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        if (p->session)
          p->session->connection().on_disconnected();
        else
          p->intake->on_disconnected();
        break;
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_REJECTED:
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        if (p->session)
          p->session->connection().on_cm_failure(rdma_event_str(type));
        else
          p->intake->on_cm_failure(rdma_event_str(type));
        break;
      default:
        break;
    }
  }
}

void ServeDaemon::on_connect_request(rdma_cm_id* id) {
  CmId cm_id = CmId::adopt(id);  // destroyed on any early return
  // --allow / --deny first: a stranger gets no queue pair, no memory, only the rejection.
  const sockaddr* source = ::rdma_get_peer_addr(id);
  if (const auto verdict = addresses_.judge(source); verdict != AddressFilter::Verdict::Allowed) {
    const std::string address = address_text(source);
    if (const auto unlogged = refusals_.note(address, Clock::now()))
      spdlog::warn("refused a connection from {}: {}{}", address, to_string(verdict),
                   *unlogged > 0
                       ? fmt::format(" ({} more refused in the last minute, not logged)", *unlogged)
                       : std::string());
    if (metrics_) metrics_->count(FetcherRefusal::Address);
    reject_request(cm_id, "this address may not fetch (rdma-send --serve --allow/--deny)");
    return;
  }
  // An address that just failed to authenticate waits (common/crypto/auth_penalties.hpp):
  // key guessing goes no faster than the penalties, and costs the server nothing meanwhile.
  const std::string address = address_text(source);
  if (const auto wait = penalties_.refused_for(address, Clock::now())) {
    if (refusals_.note(address, Clock::now()))
      spdlog::warn(
          "refused a connection from {}: it failed to authenticate; it may try again in "
          "{}s",
          address, wait->count());
    if (metrics_) metrics_->count(FetcherRefusal::SlowedDown);
    reject_request(cm_id, "too many failed authentications from this address; try again in " +
                              std::to_string(wait->count()) + "s");
    return;
  }
  if (stopping_ || peers_.size() >= options_.max_connections) {
    spdlog::warn("refusing a connection: {}", stopping_ ? "shutting down" : "too many connections");
    if (metrics_) metrics_->count(FetcherRefusal::Full);
    reject_request(cm_id, stopping_ ? "shutting down; try another server or later"
                                    : "too many connections; try again later");
    return;
  }
  const std::uint64_t number = next_number_++;
  cm_id.set_context(cm_context_for(number));
  const std::string peer = cm_id.peer_address();
  try {
    Peer p;
    p.transport = std::make_unique<RdmaTransport>(
        std::move(cm_id),
        RdmaTransport::Depths{kServerReceives, kSessionDepths.send, kSessionDepths.writes});
    p.intake = std::make_unique<ServeIntake>(
        *p.transport, peer, context_,
        [this, number](ServedTree share) { serve(number, std::move(share)); }, address);
    loop_.watch(p.transport->completion_fd(), [this, number] {
      Peer* found = peer_of(number);
      if (found == nullptr) return;
      if (found->session)
        found->session->connection().poll();
      else
        found->intake->poll();
    });
    peers_.emplace(number, std::move(p));
    peers_.at(number).transport->accept();
    if (metrics_) ++metrics_->connections_accepted;
  } catch (const std::exception& e) {
    spdlog::error("[{}] cannot set up a connection: {}", peer, e.what());
    if (Peer* p = peer_of(number)) {
      loop_.forget(p->transport->completion_fd());
      peers_.erase(number);
    }
  }
}

// The request is walked: the session goes as a push's does, this side sending.
void ServeDaemon::serve(std::uint64_t number, ServedTree share) {
  Peer* p = peer_of(number);
  if (p == nullptr) return;
  p->session = std::make_unique<ServedSession>(std::move(share), p->intake->wire(), settings_,
                                               p->intake->label(), p->intake->chunk_key());
  p->session->start();
}

void ServeDaemon::on_tick(Clock::time_point now) {
  for (auto& [number, p] : peers_) {
    if (p.session)
      p.session->connection().tick(now);
    else
      p.intake->tick(now);
  }
  // The status walks every session's entries: only under systemd or with --metrics, and at
  // most as often as the notifier may send it.
  const bool notifying = notifier_.under_service_manager();
  if (!notifying && metrics_ == nullptr) return;
  if (now - counted_at_ >= ServiceNotifier::kStatusInterval) {
    counted_ = service_status();
    counted_at_ = now;
    if (metrics_) {
      metrics_->connections_open = counted_.connections;
      metrics_->sent_bytes = counted_.bytes;
      metrics_->files_sent = counted_.files;
      metrics_->pool_queued = pool_.queued();
    }
  }
  if (notifying) notifier_.tick(counted_, now);
}

ServiceStatus ServeDaemon::service_status() const {
  ServiceStatus status{peers_.size(), bytes_sent_, files_sent_, "sent", "sent"};
  for (const auto& [number, p] : peers_) {
    if (!p.session) continue;
    status.bytes += p.session->bytes_sent();
    status.files += p.session->files_sent();
  }
  return status;
}

void ServeDaemon::reap_closed() {
  for (auto it = peers_.begin(); it != peers_.end();) {
    Peer& p = it->second;
    if (!p.reapable()) {
      ++it;
      continue;
    }
    if (p.session) {
      spdlog::info("[{}] served: {} of {} entries good", p.intake->label(), p.session->good(),
                   p.session->plan().entries.size());
      bytes_sent_ += p.session->bytes_sent();
      files_sent_ += p.session->files_sent();
    }
    loop_.forget(p.transport->completion_fd());
    it = peers_.erase(it);
  }
}

}  // namespace rdmax::sender
