#pragma once
// The skeleton both connection drivers share (the receiver's Connection, the sender's
// Connection): what they do the same way is here, once.
//
// - One failure policy. Every entry point (a received message, a send completion, a
//   transport failure, a disconnect, a tick, an owner's call) runs guarded: an exception
//   from an action is a local failure of this connection, handed to on_local_failure()
//   (the driver dispatches its LocalFailure event: an Error to the peer if possible, then
//   the way out). If handling that throws as well, the transport is shut down and
//   on_transport_lost() ends the connection without another word on the wire.
// - Posting. post() sends a control message in the connection's protocol version; once
//   the connection is disconnected or its transport is gone, it sends nothing.
// - Graceful disconnect: begin_disconnect() lets every posted SEND complete, so the last
//   message (a verdict, a secret, an Error) reaches the peer, then disconnects; the close
//   grace bounds the wait.
// - Deadlines: expect() names what the connection waits for and until when; on_tick()
//   calls on_timeout() once it passes.
// - A disconnect racing the last message: on_disconnected() first takes every completion
//   that already arrived (docs/PROTOCOL.md 4.4).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/connection/step_log.hpp"
#include "common/connection/transport.hpp"
#include "protocol/wire.hpp"

namespace rdmax {

class DriverCore : protected TransportSink {
 public:
  using Clock = std::chrono::steady_clock;

  DriverCore(const DriverCore&) = delete;
  DriverCore& operator=(const DriverCore&) = delete;

  // The owner's entry points.
  void poll();  // the transport's completion fd is readable
  void on_disconnected();
  void on_tick(Clock::time_point now);

  const std::string& label() const { return label_; }
  std::uint16_t version() const { return version_; }
  const char* waiting_for() const { return waiting_for_; }

  // Every step of the driver's machines (common/connection/step_log.hpp).
  using Step = StepLog::Step;
  StepLog& step_log() { return step_log_; }

 protected:
  explicit DriverCore(std::string label) : label_(std::move(label)) {}
  ~DriverCore() = default;

  // The transport, once there is one (the sender creates it after route resolution).
  void attach(Transport& transport) { transport_ = &transport; }
  Transport* transport() const { return transport_; }
  void set_version(std::uint16_t version) { version_ = version; }

  // Runs `work` under the failure policy. Every entry point goes through here.
  template <typename Work>
  void guarded(Work&& work) {
    try {
      work();
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

  void post(const proto::Message& message, std::uint64_t tag = 0);
  // How long a side waits for DISCONNECTED once it disconnected.
  static constexpr std::chrono::seconds kCloseGrace{3};
  void begin_disconnect();
  // The peer or the transport is gone: post nothing more.
  void mark_transport_gone() { transport_gone_ = true; }
  // Moves the queue pair to the error state (nothing more lands in our memory or leaves
  // this side) and posts nothing more.
  void release_transport() noexcept;
  Clock::time_point last_sent() const { return last_sent_; }

  void expect(const char* what, Clock::duration within);
  void expect_until(const char* what, Clock::time_point deadline);
  // Waiting on our own work (the disk): no deadline until the next expect().
  void expect_own_work(const char* what);

  // What the driver does with what comes back. Called under the failure policy.
  virtual void on_message(Inbound inbound) = 0;
  virtual void on_sent(std::uint64_t tag) = 0;
  virtual void on_transport_failure(const std::string& why) = 0;
  virtual void on_peer_disconnected() = 0;
  // The deadline passed; `now` is the tick's time.
  virtual void on_timeout(Clock::time_point now) = 0;
  virtual void on_local_failure(const std::string& what) = 0;
  virtual void on_transport_lost(const std::string& what) = 0;

 private:
  // TransportSink, reached through poll().
  void on_received(Inbound inbound) final;
  void on_send_completed(std::uint64_t tag) final;
  void on_transport_failed(const std::string& why) final;

  void fail(const std::string& what) noexcept;
  void disconnect_when_drained();

  std::string label_;
  Transport* transport_ = nullptr;
  std::uint16_t version_ = 0;  // 0: not known yet (a receiver learns it from the Hello)
  bool disconnect_pending_ = false;
  bool disconnected_ = false;
  bool transport_gone_ = false;
  bool failing_ = false;
  const char* waiting_for_ = "the connection";
  std::optional<Clock::time_point> deadline_;
  Clock::time_point last_sent_{};
  StepLog step_log_;
};

}  // namespace rdmax
