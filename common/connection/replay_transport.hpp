#pragma once
// A connection handed from one driver to the next (a fetch's, docs/PROTOCOL.md 7.13: the
// fetcher's intake takes the request's answers, the receiver's driver the session): the
// messages the first driver received for the second (the server's Open, and any that came in
// the same poll) wait here, and the next poll delivers them first, in order, before what the
// wire has.

#include <deque>
#include <utility>

#include "common/connection/transport_decorator.hpp"

namespace rdmax {

class ReplayTransport final : public TransportDecorator {
 public:
  using TransportDecorator::TransportDecorator;

  // Delivered at the next poll(), after those held before it.
  void hold(Inbound inbound) { held_.push_back(std::move(inbound)); }

  void poll(TransportSink& sink) override {
    while (!held_.empty()) {
      Inbound next = std::move(held_.front());
      held_.pop_front();
      sink.on_received(std::move(next));
    }
    wire().poll(sink);
  }

 private:
  std::deque<Inbound> held_;
};

}  // namespace rdmax
