#pragma once
// Runs a state machine's inputs one at a time. An action may raise further inputs (a
// check that passes, a result ready at once); they queue behind the current one and run
// when it is done, so a transition's actions always run in order and never re-enter.

#include <deque>
#include <utility>

namespace rdmax {

template <typename Input>
class Dispatcher {
 public:
  // Queues `input`; unless already running, runs `step` on it and on every input queued
  // meanwhile. If `step` throws, the inputs still queued belonged to the failed step: they
  // are dropped, and the exception goes to the caller (the driver's one failure policy).
  template <typename Step>
  void dispatch(Input input, Step&& step) {
    pending_.push_back(std::move(input));
    if (running_) return;
    running_ = true;
    struct Reset {
      Dispatcher& d;
      ~Reset() {
        d.running_ = false;
        d.pending_.clear();
      }
    } reset{*this};
    while (!pending_.empty()) {
      Input next = std::move(pending_.front());
      pending_.pop_front();
      step(next);
    }
  }

 private:
  std::deque<Input> pending_;
  bool running_ = false;
};

}  // namespace rdmax
