#pragma once

#include <cerrno>
#include <stdexcept>
#include <string>

namespace rdmax {

// A failed system, verbs or CM call on the setup path. what() reads
// "<call>: <strerror> (errno N)" followed by "; <hint>" when a hint is given, e.g.
// "ibv_reg_mr: Cannot allocate memory (errno 12)". `call` may name its object too
// ("open /data/x") so the message alone tells the user what failed.
class SysError : public std::runtime_error {
 public:
  SysError(std::string call, int err, const std::string& hint = {});

  const std::string& call() const noexcept { return call_; }
  int error() const noexcept { return err_; }

 private:
  std::string call_;
  int err_;
};

// errno is read at the call site (default argument), before anything can clobber it.
[[noreturn]] void throw_sys(const char* call, int err = errno);
[[noreturn]] void throw_sys(const std::string& call, int err = errno);

// For destructors, which must not throw: a release that fails (EBUSY from ibv_dealloc_pd
// means a child outlived its parent) is logged as a warning so the bug stays visible.
void warn_release_failure(const char* call, int err) noexcept;

}  // namespace rdmax
