#include "common/connection/driver_core.hpp"

#include <spdlog/spdlog.h>

namespace rdmax {

void DriverCore::poll() {
  guarded([&] {
    if (transport_ != nullptr) transport_->poll(*this);
  });
}

void DriverCore::on_disconnected() {
  // The peer's last message may sit in the CQ while DISCONNECTED is already on the CM
  // channel (they come through different fds): take it first.
  poll();
  disconnected_ = true;
  transport_gone_ = true;
  guarded([&] { on_peer_disconnected(); });
}

void DriverCore::on_tick(Clock::time_point now) {
  if (!deadline_ || now < *deadline_) return;
  deadline_.reset();  // one timeout per expect(); the driver expects anew
  guarded([&] { on_timeout(now); });
}

void DriverCore::on_received(Inbound inbound) {
  // The peer is talking: the wait it ended is over (the driver expects anew).
  guarded([&] { on_message(std::move(inbound)); });
}

void DriverCore::on_send_completed(std::uint64_t tag) {
  guarded([&] {
    on_sent(tag);
    disconnect_when_drained();
  });
}

void DriverCore::on_transport_failed(const std::string& why) {
  transport_gone_ = true;
  guarded([&] { on_transport_failure(why); });
}

void DriverCore::post(const proto::Message& message, std::uint64_t tag) {
  if (transport_ == nullptr || transport_gone_ || disconnected_) return;
  // Before the peer said which version it speaks (a receiver timing out on the Hello),
  // version 1, which every peer reads.
  transport_->send(message, version_ != 0 ? version_ : proto::kVersion1, tag);
  last_sent_ = Clock::now();
}

void DriverCore::release_transport() noexcept {
  transport_gone_ = true;
  if (transport_ != nullptr) transport_->shut_down();
}

void DriverCore::begin_disconnect() {
  expect("the disconnect", kCloseGrace);
  disconnect_pending_ = true;
  disconnect_when_drained();
}

void DriverCore::disconnect_when_drained() {
  // rdma_disconnect flushes whatever is still queued: let the last messages (a verdict, a
  // secret, an Error) complete first.
  if (!disconnect_pending_ || disconnected_ || transport_ == nullptr) return;
  if (!transport_gone_ && transport_->sends_in_flight() > 0) return;
  disconnected_ = true;
  transport_->disconnect();
}

void DriverCore::expect(const char* what, Clock::duration within) {
  waiting_for_ = what;
  deadline_ = Clock::now() + within;
}

void DriverCore::expect_until(const char* what, Clock::time_point deadline) {
  waiting_for_ = what;
  deadline_ = deadline;
}

void DriverCore::expect_own_work(const char* what) {
  waiting_for_ = what;
  deadline_.reset();
}

void DriverCore::fail(const std::string& what) noexcept {
  std::string reason = what;
  if (!failing_) {
    failing_ = true;
    try {
      spdlog::error("[{}] {}", label_, what);
      on_local_failure(what);
      failing_ = false;
      return;
    } catch (const std::exception& e) {
      reason = e.what();
    } catch (...) {
      reason = "unknown failure";
    }
    failing_ = false;
  }
  // Handling the failure failed too (or a failure arrived while handling one): say
  // nothing more on the wire, stop the queue pair and let the driver release everything.
  transport_gone_ = true;
  if (transport_ != nullptr) transport_->shut_down();
  try {
    spdlog::error("[{}] {}", label_, reason);
    on_transport_lost(reason);
  } catch (...) {
    // Nothing is left to try: the owner reaps the connection at its deadline.
  }
}

void StepLog::took(const std::string& label, const char* from, const char* event, const char* to) {
  spdlog::trace("[{}] {} --{}--> {}", label, from, event, to);
  if (recording_) steps_.push_back({from, event});
}

}  // namespace rdmax
