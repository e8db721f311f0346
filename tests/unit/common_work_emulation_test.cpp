// The benchmark's emulation (common/work/work_emulation.hpp): off, it does nothing; on, a job's
// work becomes a wait of its measured length, on at most N emulated cores at once.
#include "common/work/work_emulation.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace rdmax::emulation {
namespace work_emulation_test {

using Clock = std::chrono::steady_clock;

TEST(WorkEmulation, OffItReplacesNothing) {
  ASSERT_FALSE(active());
  const auto start = Clock::now();
  EXPECT_FALSE(instead(Work::Write, std::size_t{1} << 30));
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(50));
}

TEST(WorkEmulation, OnAJobWaitsItsLengthOnOneOfTheCores) {
  // 1 ns per byte: 20 MB is a wait of 20 ms. Four jobs on two cores take two rounds.
  start(2, {1e-9, 2e-9, 0});
  ASSERT_TRUE(active());
  const auto begin = Clock::now();
  std::vector<std::thread> jobs;
  for (int i = 0; i < 4; ++i)
    jobs.emplace_back([] { EXPECT_TRUE(instead(Work::Hash, 20'000'000)); });
  for (auto& j : jobs) j.join();
  const auto took = Clock::now() - begin;
  stop();
  EXPECT_FALSE(active());
  EXPECT_GE(took, std::chrono::milliseconds(40)) << "two rounds of 20 ms on two cores";
  EXPECT_LT(took, std::chrono::milliseconds(2000));
  // Each kind has its own cost: a read of 10 MB at 2 ns per byte waits 20 ms.
  start(1, {0, 2e-9, 0});
  const auto read_begin = Clock::now();
  EXPECT_TRUE(instead(Work::Read, 10'000'000));
  EXPECT_GE(Clock::now() - read_begin, std::chrono::milliseconds(20));
  stop();
}

}  // namespace work_emulation_test
}  // namespace rdmax::emulation
