// The free-space bookkeeping shared by every file being received
// (receiver/space_reservations.hpp): what counts against the next file's check, and when.

#include "receiver/space_reservations.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace rdmax::receiver {
namespace {

TEST(SpaceReservations, FitsCountsTheReservedBytesAsTaken) {
  EXPECT_TRUE(SpaceReservations::fits(100, 100, 0));
  EXPECT_TRUE(SpaceReservations::fits(100, 60, 40));
  EXPECT_FALSE(SpaceReservations::fits(100, 61, 40));
  EXPECT_FALSE(SpaceReservations::fits(100, 101, 0));
  EXPECT_FALSE(SpaceReservations::fits(0, 1, 0));
  EXPECT_TRUE(SpaceReservations::fits(0, 0, 0));
  EXPECT_FALSE(SpaceReservations::fits(UINT64_MAX, UINT64_MAX, 1));  // no wrap-around
}

TEST(SpaceReservations, AFileThatDoesNotFitReservesNothingAndIsNotMade) {
  SpaceReservations space;
  bool made = false;
  const auto hold = space.admit(
      std::uint64_t{1} << 62, [] { return std::uint64_t{1000}; },
      [&] {
        made = true;
        return false;
      });
  EXPECT_FALSE(hold.has_value());
  EXPECT_FALSE(made);
  EXPECT_EQ(space.reserved(), 0u);
  // So the next file is checked against the whole free space.
  EXPECT_TRUE(space.admit(
      1000, [] { return std::uint64_t{1000}; }, [] { return false; }));
}

TEST(SpaceReservations, AnUnpreallocatedFileHoldsItsBytesUntilWrittenOrReleased) {
  SpaceReservations space;
  auto free = [] { return std::uint64_t{1000}; };
  auto a = space.admit(600, free, [] { return false; });
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->bytes(), 600u);
  EXPECT_EQ(space.reserved(), 600u);
  EXPECT_FALSE(space.admit(401, free, [] { return false; }).has_value());
  a->release(100);  // written (the free space the check reads would drop by as much)
  EXPECT_EQ(space.reserved(), 500u);
  a->release(10000);  // never more than it holds
  EXPECT_EQ(space.reserved(), 0u);
  {
    auto b = space.admit(300, free, [] { return false; });
    SpaceReservations::Hold moved = std::move(*b);
    EXPECT_EQ(space.reserved(), 300u);
  }
  EXPECT_EQ(space.reserved(), 0u);  // released when the hold goes
}

TEST(SpaceReservations, APreallocatedFileHoldsNothing) {
  SpaceReservations space;
  const auto hold = space.admit(
      600, [] { return std::uint64_t{1000}; }, [] { return true; });
  ASSERT_TRUE(hold.has_value());
  EXPECT_EQ(hold->bytes(), 0u);
  EXPECT_EQ(space.reserved(), 0u);
}

TEST(SpaceReservations, AFailedCreationReservesNothing) {
  SpaceReservations space;
  EXPECT_THROW((void)space.admit(
                   10, [] { return std::uint64_t{1000}; },
                   []() -> bool { throw std::runtime_error("EACCES"); }),
               std::runtime_error);
  EXPECT_EQ(space.reserved(), 0u);
}

// Files checked on several workers at once: each check sees every file admitted before it,
// so together they never promise more than the free space.
TEST(SpaceReservations, ConcurrentChecksNeverPromiseMoreThanTheFreeSpace) {
  SpaceReservations space;
  constexpr std::uint64_t kFree = 1000;
  std::atomic<int> admitted{0};
  std::vector<SpaceReservations::Hold> holds(64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 64; i += 4) {
        auto hold = space.admit(
            100, [] { return kFree; }, [] { return false; });
        if (hold) {
          ++admitted;
          holds[static_cast<std::size_t>(i)] = std::move(*hold);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(admitted.load(), 10);
  EXPECT_EQ(space.reserved(), kFree);
  holds.clear();
  EXPECT_EQ(space.reserved(), 0u);
}

}  // namespace
}  // namespace rdmax::receiver
