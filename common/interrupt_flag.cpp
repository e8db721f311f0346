#include "common/interrupt_flag.hpp"

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
  struct sigaction handler {};
  handler.sa_handler = record;
  sigemptyset(&handler.sa_mask);
  for (int i = 0; i < 2; ++i) (void)::sigaction(kSignals[i], &handler, &previous[i]);
}

InterruptFlag::~InterruptFlag() {
  for (int i = 0; i < 2; ++i) (void)::sigaction(kSignals[i], &previous[i], nullptr);
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
