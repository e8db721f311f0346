#include "receiver/daemon.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

namespace rdmax::receiver {

namespace {
// epoll tags: small fixed ones for the daemon's fds; connection numbers start above, and
// the top bit tells a connection's worker eventfd from its completion channel.
enum Tag : std::uint64_t { kTagCm = 1, kTagSignal = 2, kTagTimer = 3, kFirstConnectionTag = 16 };
constexpr std::uint64_t kChunksStoredBit = std::uint64_t{1} << 63;
constexpr auto kShutdownGrace = std::chrono::seconds(5);

std::uint64_t completion_tag(std::uint64_t number) {
  return kFirstConnectionTag + number;
}
std::uint64_t chunks_stored_tag(std::uint64_t number) {
  return completion_tag(number) | kChunksStoredBit;
}
std::uint64_t connection_number(std::uint64_t tag) {
  return (tag & ~kChunksStoredBit) - kFirstConnectionTag;
}
}  // namespace

Daemon::Daemon(const ReceiverOptions& options, Fd dir, std::optional<proto::SecretStore> secrets)
    : options_(options),
      dir_(std::move(dir)),
      secrets_(std::move(secrets)),
      context_{options_, dir_.get(), secrets_ ? &*secrets_ : nullptr, 0},
      listener_(channel_) {
  channel_.set_nonblocking();
  const char* bind = options_.bind_address ? options_.bind_address->c_str() : nullptr;
  listener_.bind_and_listen(bind, options_.port, 64);
  epoll_.add(channel_.fd(), EPOLLIN, kTagCm);
  epoll_.add(signals_.fd(), EPOLLIN, kTagSignal);
  epoll_.add(timer_.fd(), EPOLLIN, kTagTimer);
  timer_.arm_periodic(std::chrono::milliseconds(200));
}

int Daemon::run() {
  spdlog::info("listening on {} (files go to {})", listener_.local_address(), options_.dir);
  std::chrono::steady_clock::time_point give_up{};
  epoll_event events[16];
  while (!stopping_ || !connections_.empty()) {
    if (stopping_ && std::chrono::steady_clock::now() > give_up) {
      spdlog::warn("{} connection(s) did not close in time; releasing them", connections_.size());
      break;
    }
    const int n = epoll_.wait(events, 1000);
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      try {
        if (tag == kTagCm) {
          on_cm_events();
        } else if (tag == kTagSignal) {
          if (auto sig = signals_.read_signal(); sig && !stopping_) {
            spdlog::info("signal {}: shutting down", *sig);
            stopping_ = true;
            give_up = std::chrono::steady_clock::now() + kShutdownGrace;
            for (auto& [number, c] : connections_) c->shut_down();
          }
        } else if (tag == kTagTimer) {
          on_tick();
        } else if (auto it = connections_.find(connection_number(tag)); it != connections_.end()) {
          if (tag & kChunksStoredBit)
            it->second->on_chunks_stored();
          else
            it->second->on_completions();
        }
      } catch (const std::exception& e) {
        // One connection's failure (a post that fails, a registration...) must not end
        // the daemon: drop that connection.
        spdlog::error("{}", e.what());
        if (auto it = connections_.find(connection_number(tag)); it != connections_.end())
          it->second->on_transport_failure(e.what());
      }
    }
    reap_closed();
  }
  connections_.clear();
  spdlog::info("stopped");
  return 0;
}

Connection* Daemon::connection_of(rdma_cm_id* id) {
  return id != nullptr ? static_cast<Connection*>(id->context) : nullptr;
}

void Daemon::on_cm_events() {
  while (auto event = channel_.try_get()) {
    const rdma_cm_event_type type = event->type();
    rdma_cm_id* id = event->id();
    const int status = event->status();
    spdlog::debug("cm event {} (status {})", rdma_event_str(type), status);
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      event->ack();
      on_connect_request(id);
      continue;
    }
    event->ack();  // acked before handling: handling may destroy the id
    if (id == listener_.get()) {
      if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
        spdlog::error("the RDMA device was removed; stopping");
        stopping_ = true;
      }
      continue;
    }
    Connection* c = connection_of(id);
    if (c == nullptr) continue;
    switch (type) {
      case RDMA_CM_EVENT_ESTABLISHED:
        c->on_established();
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        c->on_disconnected();
        break;
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_REJECTED:
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        c->on_transport_failure(rdma_event_str(type));
        break;
      default:
        break;
    }
  }
}

void Daemon::on_connect_request(rdma_cm_id* id) {
  if (stopping_ || connections_.size() >= options_.max_connections) {
    spdlog::warn("refusing a connection: {}", stopping_ ? "shutting down" : "too many connections");
    CmId refused = CmId::adopt(id);  // destroyed on return, whatever reject does
    try {
      refused.reject(nullptr, 0);
    } catch (const std::exception& e) {
      spdlog::warn("{}", e.what());
    }
    return;
  }
  const std::uint64_t number = next_number_++;
  std::unique_ptr<Connection> c;
  try {
    c = std::make_unique<Connection>(number, id, context_);
  } catch (const std::exception& e) {
    // The id now belongs to the half-built connection, which destroyed it.
    spdlog::error("cannot set up a connection: {}", e.what());
    return;
  }
  epoll_.add(c->completion_fd(), EPOLLIN, completion_tag(number));
  epoll_.add(c->chunks_stored_fd(), EPOLLIN, chunks_stored_tag(number));
  c->accept();
  connections_.emplace(number, std::move(c));
}

void Daemon::on_tick() {
  (void)timer_.read_expirations();
  const auto now = std::chrono::steady_clock::now();
  for (auto& [number, c] : connections_) c->on_tick(now);
}

void Daemon::reap_closed() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (it->second->closed()) {
      epoll_.remove(it->second->completion_fd());
      epoll_.remove(it->second->chunks_stored_fd());
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace rdmax::receiver
