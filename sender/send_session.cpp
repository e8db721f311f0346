#include "sender/send_session.hpp"

#include <spdlog/spdlog.h>

#include "common/error_hints.hpp"
#include "common/rdma/devices.hpp"
#include "sender/memlock.hpp"

namespace rdmax::sender {

namespace {
enum Tag : std::uint64_t { kTagCm = 1, kTagCq = 2, kTagSignal = 3, kTagTimer = 4, kTagPace = 5 };

std::chrono::milliseconds ms(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(s);
}
}  // namespace

SendSession::SendSession(const SenderOptions& options, const SenderSettings& settings,
                         InputFile& file, const FileDigest& digest)
    : options_(options),
      id_(std::in_place, channel_),
      raw_id_(id_->get()),
      driver_(settings, file, digest, *this, host_and_port(options.host, options.port)) {
  channel_.set_nonblocking();
  epoll_.add(channel_.fd(), EPOLLIN, kTagCm);
  epoll_.add(signals_.fd(), EPOLLIN, kTagSignal);
  epoll_.add(timer_.fd(), EPOLLIN, kTagTimer);
  timer_.arm_periodic(std::chrono::milliseconds(100));
  epoll_.add(pace_timer_.fd(), EPOLLIN, kTagPace);
}

proto::SenderOutcome SendSession::run() {
  driver_.start();
  try {
    id_->resolve_addr(options_.host.c_str(), options_.port, ms(options_.connect_timeout));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return proto::SenderOutcome::ConnectFailed;
  }
  epoll_event events[8];
  while (!driver_.finished()) {
    const int n = epoll_.wait(events, 1000);
    for (int i = 0; i < n && !driver_.finished(); ++i) {
      switch (events[i].data.u64) {
        case kTagCm:
          on_cm_events();
          break;
        case kTagCq:
          driver_.poll();
          break;
        case kTagSignal:
          if (auto sig = signals_.read_signal()) driver_.interrupt(*sig);
          break;
        case kTagTimer:
          (void)timer_.read_expirations();
          driver_.tick(std::chrono::steady_clock::now());
          break;
        case kTagPace:
          (void)pace_timer_.read_expirations();
          driver_.tick(std::chrono::steady_clock::now());
          break;
      }
    }
    // --bwlimit: the next chunk is due at an exact time, finer than the 100 ms tick.
    if (const auto at = driver_.resume_at(); at && !driver_.finished())
      pace_timer_.arm_once_at(*at);
  }
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
  epoll_.add(transport_->completion_fd(), EPOLLIN, kTagCq);
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
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        driver_.on_address_resolved();
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED:
        try {
          require_device(id_->verbs(), options_.device);
        } catch (const std::exception& e) {
          driver_.on_connect_failed(e.what());
          break;
        }
        driver_.on_route_resolved();
        break;
      case RDMA_CM_EVENT_ESTABLISHED:
        driver_.on_established();
        break;
      case RDMA_CM_EVENT_REJECTED:
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_CONNECT_ERROR:
        driver_.on_connect_failed(
            connect_failure_message(type, status, options_.host, options_.port));
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        driver_.on_disconnected();
        break;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        driver_.on_cm_failure("the RDMA device was removed");
        break;
      default:
        break;
    }
  }
}

}  // namespace rdmax::sender
