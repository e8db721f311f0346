// SIGINT/SIGTERM while no event loop watches them (sender/interrupt_flag.hpp): recorded for
// the work under way to stop at its next step, and left ignored where the process was
// started to ignore them.

#include "sender/interrupt_flag.hpp"

#include <gtest/gtest.h>
#include <signal.h>

namespace rdmax {
namespace {

sighandler_t disposition(int signal) {
  struct sigaction current {};
  ::sigaction(signal, nullptr, &current);
  return current.sa_handler;
}

TEST(InterruptFlag, ASignalIsRecordedAndStopsTheNextStep) {
  ASSERT_EQ(disposition(SIGTERM), SIG_DFL);
  {
    InterruptFlag flag;
    EXPECT_EQ(InterruptFlag::pending(), 0);
    EXPECT_NO_THROW(InterruptFlag::check());
    ASSERT_EQ(::raise(SIGTERM), 0);  // handled: the test process lives on
    EXPECT_EQ(InterruptFlag::pending(), SIGTERM);
    try {
      InterruptFlag::check();
      ADD_FAILURE() << "check() did not throw";
    } catch (const Interrupted& e) {
      EXPECT_EQ(e.signal(), SIGTERM);
    }
  }
  // The previous disposition is back, and nothing is pending outside a flag's life.
  EXPECT_EQ(disposition(SIGTERM), SIG_DFL);
  EXPECT_EQ(InterruptFlag::pending(), 0);
}

TEST(InterruptFlag, ASignalTheProcessIgnoresStaysIgnored) {
  ASSERT_NE(::signal(SIGINT, SIG_IGN), SIG_ERR);
  {
    InterruptFlag flag;
    EXPECT_EQ(disposition(SIGINT), SIG_IGN);
    ASSERT_EQ(::raise(SIGINT), 0);
    EXPECT_EQ(InterruptFlag::pending(), 0);
  }
  EXPECT_EQ(disposition(SIGINT), SIG_IGN);
  ::signal(SIGINT, SIG_DFL);
}

}  // namespace
}  // namespace rdmax
