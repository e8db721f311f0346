#include "sender/interrupt_flag.hpp"

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace rdmax {
namespace {

std::atomic<int> received{0};
static_assert(std::atomic<int>::is_always_lock_free);  // so the handler may store to it

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct sigaction previous[2];

void record(int signal) {
  received.store(signal);
}

}  // namespace

Interrupted::Interrupted(int signal)
    : std::runtime_error("interrupted by signal " + std::to_string(signal)), signal_(signal) {}

InterruptFlag::InterruptFlag() {
  received.store(0);
  struct sigaction handler {};
  handler.sa_handler = record;
  sigemptyset(&handler.sa_mask);
  for (int i = 0; i < 2; ++i) {
    // A signal the process was started to ignore (nohup, a script's background job) stays
    // ignored, as it does for the event loop's signalfd.
    if (::sigaction(kSignals[i], nullptr, &previous[i]) != 0) continue;
    if (previous[i].sa_handler == SIG_IGN) continue;
    (void)::sigaction(kSignals[i], &handler, nullptr);
  }
}

InterruptFlag::~InterruptFlag() {
  for (int i = 0; i < 2; ++i) (void)::sigaction(kSignals[i], &previous[i], nullptr);
  received.store(0);  // outside a flag's life nothing is pending
}

int InterruptFlag::pending() noexcept {
  return received.load();
}

void InterruptFlag::check() {
  if (const int signal = pending(); signal != 0) throw Interrupted(signal);
}

void InterruptFlag::die_of(int signal) {
  ::signal(signal, SIG_DFL);
  ::raise(signal);
  std::abort();  // not reached: the default action of SIGINT and SIGTERM ends the process
}

}  // namespace rdmax
