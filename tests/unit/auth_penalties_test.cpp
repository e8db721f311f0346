// Slowing down key guessing (common/crypto/auth_penalties.hpp): the penalty doubles with each
// failure in a row from one address, up to its cap; other addresses are not touched; a
// success or a long quiet forgets; the map stays bounded.

#include <gtest/gtest.h>

#include "common/crypto/auth_penalties.hpp"

namespace {

using rdmax::AuthPenalties;
using namespace std::chrono_literals;
using Clock = AuthPenalties::Clock;

TEST(AuthPenalties, DoublesFromOneSecondUpToTheCap) {
  EXPECT_EQ(AuthPenalties::penalty_after(0), 0s);
  EXPECT_EQ(AuthPenalties::penalty_after(1), 1s);
  EXPECT_EQ(AuthPenalties::penalty_after(2), 2s);
  EXPECT_EQ(AuthPenalties::penalty_after(5), 16s);
  EXPECT_EQ(AuthPenalties::penalty_after(7), 64s);
  EXPECT_EQ(AuthPenalties::penalty_after(1000), AuthPenalties::kMaxPenalty);
}

TEST(AuthPenalties, AnAddressWaitsOutItsPenaltyAndOthersDoNot) {
  AuthPenalties p;
  const auto t0 = Clock::now();
  EXPECT_FALSE(p.refused_for("192.0.2.7", t0));
  EXPECT_EQ(p.failed("192.0.2.7", t0), 1s);
  EXPECT_EQ(p.refused_for("192.0.2.7", t0), 1s);
  EXPECT_FALSE(p.refused_for("192.0.2.8", t0));
  EXPECT_FALSE(p.refused_for("192.0.2.7", t0 + 1s));
  // The next failure in a row costs twice as much, counted from it.
  EXPECT_EQ(p.failed("192.0.2.7", t0 + 1s), 2s);
  EXPECT_EQ(p.refused_for("192.0.2.7", t0 + 1500ms), 2s);  // 1.5 s left, rounded up
  EXPECT_TRUE(p.refused_for("192.0.2.7", t0 + 2900ms));
  EXPECT_FALSE(p.refused_for("192.0.2.7", t0 + 3s));
}

TEST(AuthPenalties, ASuccessOrAQuarterHourOfQuietForgets) {
  AuthPenalties p;
  const auto t0 = Clock::now();
  for (int i = 0; i < 4; ++i) (void)p.failed("fd00::9", t0);
  p.succeeded("fd00::9");
  EXPECT_EQ(p.failed("fd00::9", t0), 1s);
  for (int i = 0; i < 4; ++i) (void)p.failed("fd00::9", t0);
  EXPECT_EQ(p.failed("fd00::9", t0 + AuthPenalties::kForgetAfter), 1s);
}

TEST(AuthPenalties, RemembersABoundedNumberOfAddressesOldestFirstOut) {
  AuthPenalties p;
  const auto t0 = Clock::now();
  (void)p.failed("first", t0);
  for (std::size_t i = 0; i < AuthPenalties::kMaxAddresses; ++i)
    (void)p.failed("a" + std::to_string(i), t0 + 1ms);
  EXPECT_FALSE(p.refused_for("first", t0 + 2ms));  // forgotten to make room
  EXPECT_TRUE(p.refused_for("a0", t0 + 2ms));
}

}  // namespace
