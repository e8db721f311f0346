#pragma once
// The one shape of every verbs and rdma_cm owner: a std::unique_ptr whose deleter calls the
// library's release function and logs its failure (a destructor has no one to throw to).
// Moving, the ban on copying and the single release come from here; each owner class keeps
// its constructor (which throws SysError) and its operations.

#include <cerrno>
#include <memory>

#include "common/error.hpp"

namespace rdmax {

// The ibv_* release functions return the errno value; the rdma_* ones return -1 and set
// errno (SetsErrno).
template <typename T, auto Release, const char* Call, bool SetsErrno = false>
struct ReleaseWith {
  void operator()(T* object) const noexcept {
    if (const int rc = Release(object); rc != 0) warn_release_failure(Call, SetsErrno ? errno : rc);
  }
};

template <typename T, auto Release, const char* Call, bool SetsErrno = false>
using Owned = std::unique_ptr<T, ReleaseWith<T, Release, Call, SetsErrno>>;

}  // namespace rdmax
