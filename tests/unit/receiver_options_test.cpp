#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

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

// The options parsed from `args` (after the program's name), or the exit status.
std::variant<ReceiverOptions, int> parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "rdma-recv");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  auto result = parse_receiver_options(static_cast<int>(argv.size()), argv.data());
  (void)::testing::internal::GetCapturedStderr();
  return result;
}

bool requires_seal(std::vector<std::string> args) {
  const auto result = parsed(std::move(args));
  const auto* o = std::get_if<ReceiverOptions>(&result);
  EXPECT_NE(o, nullptr);
  return o != nullptr && o->require_seal;
}

// docs/SECURITY.md: a receiver with --senders requires the seal unless told otherwise
// (--allow-clear); --require-seal, the opt-in of the release before, still parses and says the
// default; without --senders there is no key to seal with, so nothing is required.
TEST(SealingOption, SendersRequireTheSealUnlessAllowClear) {
  EXPECT_TRUE(requires_seal({"--senders", "keys"}));
  EXPECT_TRUE(requires_seal({"--senders", "keys", "--require-seal"}));
  EXPECT_FALSE(requires_seal({"--senders", "keys", "--allow-clear"}));
  EXPECT_FALSE(requires_seal({}));
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--allow-clear"},
        std::vector<std::string>{"--senders", "keys", "--allow-clear", "--require-seal"}}) {
    const auto result = parsed(bad);
    ASSERT_TRUE(std::holds_alternative<int>(result)) << bad.front();
    EXPECT_EQ(std::get<int>(result), 2);
  }
}

// rdma-recv --from -P N: N connections, each its part of the --shard share; -P is a fetch's
// (1..64), refused without --from.
TEST(FetchOptions, ParallelIsAFetchsConnectionsWithinItsShare) {
  const auto result = parsed({"--from", "storage1", "-r", "-P", "4", "--shard", "1/3", "data"});
  const auto* o = std::get_if<ReceiverOptions>(&result);
  ASSERT_NE(o, nullptr);
  ASSERT_TRUE(o->fetch.has_value());
  EXPECT_EQ(o->fetch->connections, 4U);
  EXPECT_EQ(o->fetch->shard_index, 1U);
  EXPECT_EQ(o->fetch->shard_count, 3U);
  const auto one = parsed({"--from", "storage1", "data"});
  ASSERT_TRUE(std::holds_alternative<ReceiverOptions>(one));
  EXPECT_EQ(std::get<ReceiverOptions>(one).fetch->connections, 1U);
  const auto json = parsed({"--from", "storage1", "--json-lines", "data"});
  ASSERT_TRUE(std::holds_alternative<ReceiverOptions>(json));
  EXPECT_TRUE(std::get<ReceiverOptions>(json).fetch->json_lines);
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"-P", "2"}, std::vector<std::string>{"--json"},
        std::vector<std::string>{"--from", "h", "--json", "--json-lines", "d"},
        std::vector<std::string>{"--from", "h", "-P", "0", "d"},
        std::vector<std::string>{"--from", "h", "-P", "65", "d"}}) {
    const auto refused = parsed(bad);
    ASSERT_TRUE(std::holds_alternative<int>(refused)) << bad.back();
    EXPECT_EQ(std::get<int>(refused), 2);
  }
}

// rdma-recv --from --files-from LIST [-0]: the list names what to fetch, so no PATH beside it,
// and each listed entry comes as it is, so no -r; -0 and --files-from are a fetch's.
TEST(FetchOptions, FilesFromNamesWhatToFetchAlone) {
  const auto listed = parsed({"--from", "storage1", "--files-from", "-", "-0"});
  const auto* o = std::get_if<ReceiverOptions>(&listed);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->fetch->files_from, "-");
  EXPECT_TRUE(o->fetch->from0);
  EXPECT_TRUE(o->fetch->paths.empty()) << "read when the fetch starts";
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--from", "h", "--files-from", "list", "data"},
        std::vector<std::string>{"--from", "h", "--files-from", "list", "-r"},
        std::vector<std::string>{"--from", "h", "--files-from", ""},
        std::vector<std::string>{"--from", "h", "-0", "data"},
        std::vector<std::string>{"--files-from", "list"}, std::vector<std::string>{"-0"}}) {
    const auto refused = parsed(bad);
    ASSERT_TRUE(std::holds_alternative<int>(refused)) << bad.back();
    EXPECT_EQ(std::get<int>(refused), 2);
  }
}

}  // namespace
}  // namespace rdmax::receiver
