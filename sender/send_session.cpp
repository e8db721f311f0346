#include "sender/send_session.hpp"

#include <spdlog/spdlog.h>

#include "common/error_hints.hpp"
#include "sender/cm_delivery.hpp"
#include "sender/memlock.hpp"
#include "sender/report.hpp"

namespace rdmax::sender {

namespace {
constexpr auto kTick = std::chrono::milliseconds(100);

std::chrono::milliseconds ms(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(s);
}
}  // namespace

SendSession::SendSession(const SenderOptions& options, const SenderSettings& settings,
                         InputFile& file, const FileDigest& digest)
    : options_(options),
      loop_(kTick),
      id_(std::in_place, channel_),
      raw_id_(id_->get()),
      driver_(settings, file, digest, *this, host_and_port(options.host, options.port)) {
  channel_.set_nonblocking();
  loop_.watch(channel_.fd(), [this] { on_cm_events(); });
  loop_.on_signal([this](int sig) {
    say_interrupted(sig);
    driver_.interrupt(sig);
  });
  loop_.on_tick([this](EventLoop::Clock::time_point now) { driver_.tick(now); });
}

proto::SenderOutcome SendSession::run() {
  driver_.start();
  try {
    id_->resolve_addr(options_.host.c_str(), options_.port, ms(options_.connect_timeout));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return proto::SenderOutcome::ConnectFailed;
  }
  loop_.run([this] { return driver_.finished(); },
            [this] {
              // --bwlimit: the next chunk is due at an exact time, finer than the tick.
              if (const auto at = driver_.resume_at(); at && !driver_.finished())
                loop_.wake_at(*at);
            });
  return driver_.outcome();
}

void SendSession::resolve_route() {
  id_->resolve_route(ms(options_.connect_timeout));
}

Transport& SendSession::connect() {
  transport_ = std::make_unique<RdmaTransport>(
      std::move(*id_),
      RdmaTransport::Depths{kOneFileDepths.recv, kOneFileDepths.send, kOneFileDepths.writes});
  id_.reset();
  loop_.watch(transport_->completion_fd(), [this] { driver_.poll(); });
  transport_->connect();
  return *transport_;
}

void SendSession::on_cm_events() {
  while (auto event = channel_.try_get()) {
    const rdma_cm_event_type type = event->type();
    const int status = event->status();
    const bool ours = event->id() == raw_id_;
    event->ack();  // before anything that might destroy the id
    spdlog::debug("cm event {} (status {})", rdma_event_str(type), status);
    if (!ours) continue;
    deliver_cm_event(
        driver_, type,
        {status, id_ ? &*id_ : nullptr, options_.device, options_.host, options_.port});
  }
}

}  // namespace rdmax::sender
