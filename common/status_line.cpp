#include "common/status_line.hpp"

#include <cstdio>
#include <mutex>

namespace rdmax::status_line {
namespace {

std::mutex mutex;
std::string shown;  // empty: no status line on screen

// "\r" returns to the start of the line, "\x1b[K" erases to its end: together they
// remove a line of any length without knowing the terminal's width.
constexpr char kErase[] = "\r\x1b[K";

void write(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void set(const std::string& text) {
  std::lock_guard lock(mutex);
  shown = text;
  write(kErase + text);
}

void clear() {
  std::lock_guard lock(mutex);
  if (shown.empty()) return;
  shown.clear();
  write(kErase);
}

void finish_with(const std::string& text) {
  std::lock_guard lock(mutex);
  shown.clear();
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
