#pragma once
// SIGINT and SIGTERM while no event loop watches them (rdma-send's hashing pass, before it
// connects): the handler only records the signal, so that the work under way stops at its
// next step (an Interrupted exception), the program says what happened, and then dies of the
// signal as before, so that a shell or a script sees an interrupted command. While an event
// loop runs, its signalfd blocks both signals and this handler does not see them. A signal
// the process was started to ignore stays ignored.

#include <stdexcept>

namespace rdmax {

class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

class InterruptFlag {
 public:
  // Installs the handler (for as long as this lives; one flag at a time); the previous ones
  // come back after, and what was recorded is forgotten.
  InterruptFlag();
  ~InterruptFlag();
  InterruptFlag(const InterruptFlag&) = delete;
  InterruptFlag& operator=(const InterruptFlag&) = delete;

  // The signal received while a flag was installed, 0 if none.
  [[nodiscard]] static int pending() noexcept;
  // Throws Interrupted when a signal came.
  static void check();
  // Dies of `signal` by its default action (for main, once it has said why).
  [[noreturn]] static void die_of(int signal);
};

}  // namespace rdmax
