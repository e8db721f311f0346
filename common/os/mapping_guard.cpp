#include "common/os/mapping_guard.hpp"

#include <setjmp.h>
#include <signal.h>

#include "common/error.hpp"

namespace rdmax {
namespace {

// Where a SIGBUS raised by this thread while it reads [begin, end) returns to. Set only
// around the read, so nothing else (a progress callback holding a lock, another fault,
// `kill -BUS`) is ever jumped out of.
struct FaultExit {
  sigjmp_buf* exit = nullptr;
  const std::uint8_t* begin = nullptr;
  const std::uint8_t* end = nullptr;
};
thread_local FaultExit fault_exit;

void on_sigbus(int signal, siginfo_t* info, void*) {
  const FaultExit& f = fault_exit;
  const auto* address = static_cast<const std::uint8_t*>(info->si_addr);
  if (f.exit != nullptr && info->si_code > 0 /* raised by the kernel, not sent */ &&
      address >= f.begin && address < f.end) {
    siglongjmp(*f.exit, 1);
  }
  // Not a fault of a guarded read: die of it as if there were no handler.
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

SigbusScope::SigbusScope() {
  struct sigaction handler {};
  handler.sa_sigaction = on_sigbus;
  handler.sa_flags = SA_SIGINFO;
  sigemptyset(&handler.sa_mask);
  if (::sigaction(SIGBUS, &handler, &previous_) != 0) throw_sys("sigaction(SIGBUS)");
}

SigbusScope::~SigbusScope() {
  ::sigaction(SIGBUS, &previous_, nullptr);
}

bool read_mapping_guarded(std::span<const std::uint8_t> range, void (*read)(void* context),
                          void* context) {
  sigjmp_buf exit;
  if (sigsetjmp(exit, 1) != 0) {
    fault_exit = {};
    return false;
  }
  fault_exit = {&exit, range.data(), range.data() + range.size()};
  read(context);
  fault_exit = {};
  return true;
}

}  // namespace rdmax
