#include "common/error.hpp"

#include <spdlog/spdlog.h>

#include <system_error>

namespace rdmax {
namespace {

std::string describe(const std::string& call, int err, const std::string& hint) {
  // system_category().message() is strerror without strerror's static buffer.
  std::string text =
      call + ": " + std::system_category().message(err) + " (errno " + std::to_string(err) + ")";
  if (!hint.empty()) text += "; " + hint;
  return text;
}

}  // namespace

SysError::SysError(std::string call, int err, const std::string& hint)
    : std::runtime_error(describe(call, err, hint)), call_(std::move(call)), err_(err) {}

void throw_sys(const char* call, int err) {
  throw SysError(call, err);
}

void throw_sys(const std::string& call, int err) {
  throw SysError(call, err);
}

void warn_release_failure(const char* call, int err) noexcept {
  try {
    spdlog::warn("{}: {} (errno {})", call, std::system_category().message(err), err);
  } catch (...) {
    // Logging is best effort here; a destructor must not throw.
  }
}

}  // namespace rdmax
