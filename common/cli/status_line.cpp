#include "common/cli/status_line.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

namespace rdmax::status_line {
namespace {

std::mutex mutex;
std::string shown;  // empty: no status line on screen

// "\r" returns to the start of the line, "\x1b[K" erases to its end: together they
// remove a line of any length without knowing the terminal's width.
constexpr char kErase[] = "\r\x1b[K";

// Mirrors !shown.empty() for the signal handler, which cannot take the mutex.
std::atomic<bool> on_screen{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void write(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

// Ctrl-C (or SIGTERM, SIGHUP) while a bar is drawn and nothing else handles the signal:
// erase the bar so the shell's prompt does not land on it, then die of the signal as
// before. Only write(2), signal(2) and raise(3), which are async-signal-safe.
void erase_and_die(int signal) {
  if (on_screen.load()) (void)!::write(STDERR_FILENO, kErase, sizeof kErase - 1);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void erase_on_fatal_signals() {
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction handler {};
    handler.sa_handler = erase_and_die;
    sigemptyset(&handler.sa_mask);
    (void)::sigaction(signal, &handler, nullptr);
  }
}

}  // namespace

void set(const std::string& text) {
  static std::once_flag handlers;
  std::call_once(handlers, erase_on_fatal_signals);
  std::lock_guard lock(mutex);
  shown = text;
  on_screen = !shown.empty();
  write(kErase + text);
}

void clear() {
  std::lock_guard lock(mutex);
  if (shown.empty()) return;
  shown.clear();
  on_screen = false;
  write(kErase);
}

void finish_with(const std::string& text) {
  std::lock_guard lock(mutex);
  shown.clear();
  on_screen = false;
  write(kErase + text + "\n");
}

Pause::Pause() {
  mutex.lock();
  if (!shown.empty()) write(kErase);
}

Pause::~Pause() {
  if (!shown.empty()) write(shown);
  mutex.unlock();
}

}  // namespace rdmax::status_line
