#include <gtest/gtest.h>

#include "receiver/options.hpp"

namespace rdmax::receiver {
namespace {

using std::chrono::seconds;

TEST(ParseDuration, DigitsAndAUnit) {
  EXPECT_EQ(parse_duration("45s"), seconds(45));
  EXPECT_EQ(parse_duration("90m"), seconds(90 * 60));
  EXPECT_EQ(parse_duration("24h"), seconds(24 * 3600));
  EXPECT_EQ(parse_duration("7d"), seconds(7 * 24 * 3600));
}

TEST(ParseDuration, RejectsWhatIsNotADuration) {
  for (const char* text : {"", "h", "0", "0s", "90", "5", "-5m", "+5m", "1.5h", "5 m", "5mm", "5w",
                           "5H", "99999999999999999999", "36501d"})
    EXPECT_EQ(parse_duration(text), std::nullopt) << text;
}

}  // namespace
}  // namespace rdmax::receiver
