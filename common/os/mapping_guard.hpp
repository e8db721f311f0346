#pragma once
// Reading a file through a read-only mapping without dying of it: a file truncated while
// it is mapped makes reads of the lost pages raise SIGBUS, which would otherwise kill the
// process. Hashing a mapping in place saves a copy through a buffer (under emulation, and
// on slow memory, a sixth of the pass), so the hashing code reads mappings under this
// guard and turns such a fault into an error.

#include <signal.h>

#include <cstdint>
#include <span>

namespace rdmax {

// Installs the SIGBUS handler for its lifetime (process-wide) and restores the previous
// one. Create it on the thread that coordinates the reading, around every guarded read,
// whichever threads those run on.
class SigbusScope {
 public:
  SigbusScope();
  SigbusScope(const SigbusScope&) = delete;
  SigbusScope& operator=(const SigbusScope&) = delete;
  ~SigbusScope();

 private:
  struct sigaction previous_ {};
};

// Runs read(context), which reads only from `range` (part of a mapping), on the calling
// thread; returns false if a page of `range` faulted with SIGBUS, true otherwise. A fault
// jumps out of `read` without unwinding it, so `read` must own nothing in its own frames
// (no allocation, no lock, no C++ object with a destructor that matters): a loop over
// OpenSSL calls on state owned by the caller. Only a kernel-raised SIGBUS at an address
// inside `range` on this thread is caught; any other dies as if there were no handler.
// Needs a SigbusScope alive.
[[nodiscard]] bool read_mapping_guarded(std::span<const std::uint8_t> range,
                                        void (*read)(void* context), void* context);

}  // namespace rdmax
