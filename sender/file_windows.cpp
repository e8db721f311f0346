#include "sender/file_windows.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace rdmax::sender {

std::uint64_t preferred_window_chunks(std::uint64_t chunk, std::uint32_t in_flight) {
  constexpr std::uint64_t kWindowBytes = 32u << 20;
  constexpr std::uint64_t kWindowsPerFlight = 8;
  return std::max<std::uint64_t>(
      in_flight, std::min(kWindowBytes, chunk * in_flight * kWindowsPerFlight) / chunk);
}

FileWindows::FileWindows(Transport& transport, std::span<const std::uint8_t> mapping,
                         std::uint64_t window_bytes)
    : transport_(transport), mapping_(mapping), window_bytes_(window_bytes) {
  if (window_bytes_ == 0) throw std::invalid_argument("FileWindows: zero window");
}

FileWindows::~FileWindows() {
  // Our own file's pages, registered for local reads: a refusal leaves them pinned until the
  // transport goes, nothing more.
  for (const Window& w : windows_) {
    try {
      transport_.deregister(w.registration);
    } catch (const std::exception& e) {
      spdlog::warn("cannot deregister a window of the file being sent: {}", e.what());
    }
  }
}

FileWindows::Window& FileWindows::find_or_register(std::uint64_t index) {
  for (Window& w : windows_)
    if (w.index == index) return w;
  const std::uint64_t begin = index * window_bytes_;
  const std::uint64_t end = std::min<std::uint64_t>(begin + window_bytes_, mapping_.size());
  if (begin >= end) throw std::out_of_range("FileWindows: window past the end of the file");
  // Local read only: the HCA reads these pages and never writes them, which is what a
  // PROT_READ mapping allows. ibv_reg_mr takes a non-const pointer regardless.
  std::span<std::uint8_t> pages(const_cast<std::uint8_t*>(mapping_.data() + begin),
                                static_cast<std::size_t>(end - begin));
  try {
    const Registration registration = transport_.register_memory(pages, Access::LocalRead);
    auto at = std::find_if(windows_.begin(), windows_.end(),
                           [&](const Window& w) { return w.index > index; });
    return *windows_.insert(at, Window{index, registration});
  } catch (const SysError& e) {
    // EFAULT: pages past the end of a file that shrank after it was mapped.
    throw std::runtime_error("cannot register bytes " + std::to_string(begin) + "-" +
                             std::to_string(end) + " of the file" +
                             (e.error() == EFAULT ? " (did it shrink?)" : "") + ": " + e.what());
  }
}

Registration FileWindows::acquire(std::uint64_t offset, std::uint32_t length) {
  Window& w = find_or_register(offset / window_bytes_);
  ++w.in_flight;
  posted_end_ = std::max(posted_end_, offset + length);
  const Registration registration = w.registration;
  drop_finished();
  return registration;
}

void FileWindows::release(std::uint64_t offset) {
  const std::uint64_t index = offset / window_bytes_;
  for (Window& w : windows_) {
    if (w.index == index && w.in_flight > 0) {
      --w.in_flight;
      break;
    }
  }
  drop_finished();
}

void FileWindows::register_ahead(std::uint64_t offset) {
  const std::uint64_t index = offset / window_bytes_;
  for (std::uint64_t i = index; i <= index + 1 && i * window_bytes_ < mapping_.size(); ++i)
    find_or_register(i);
}

void FileWindows::drop_finished() {
  // A window is done when nothing in it is in flight and the sender has moved past it.
  while (!windows_.empty() && windows_.front().in_flight == 0 &&
         (windows_.front().index + 1) * window_bytes_ <= posted_end_) {
    transport_.deregister(windows_.front().registration);
    windows_.pop_front();
  }
}

}  // namespace rdmax::sender
