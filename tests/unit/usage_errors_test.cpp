// Usage errors read like the tools' own (issue 22): "PROGRAM: --OPTION: what is wrong", the
// same words in rdma-send and rdma-recv for the same mistake, exit status 2, and never
// CLI11's internal texts.

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "receiver/options.hpp"
#include "sender/exit_codes.hpp"
#include "sender/options.hpp"

namespace rdmax {
namespace {

struct Parsed {
  int status = -1;  // -1: the options parsed
  std::string err;
};

template <typename Parse>
Parsed parse(Parse parse_options, std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  const auto result = parse_options(static_cast<int>(argv.size()), argv.data());
  Parsed p;
  p.err = ::testing::internal::GetCapturedStderr();
  if (const int* status = std::get_if<int>(&result)) p.status = *status;
  return p;
}

Parsed send(std::vector<std::string> args) {
  args.insert(args.begin(), "rdma-send");
  return parse(sender::parse_sender_options, args);
}
Parsed recv(std::vector<std::string> args) {
  args.insert(args.begin(), "rdma-recv");
  return parse(receiver::parse_receiver_options, args);
}

void expect_usage(const Parsed& p, const std::string& program, const std::string& words) {
  EXPECT_EQ(p.status, 2) << p.err;
  EXPECT_EQ(p.err.rfind(program + ": ", 0), 0u) << p.err;
  EXPECT_NE(p.err.find(words), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("Try '" + program + " --help'"), std::string::npos) << p.err;
  for (const char* internal : {"Could not convert", "FAILED", "->", "not in range", "Value "})
    EXPECT_EQ(p.err.find(internal), std::string::npos) << internal << " in: " << p.err;
}

TEST(UsageErrors, ABadPortReadsTheSameInBothPrograms) {
  for (const char* bad : {"abc", "99999", "-1", "1.5"}) {
    SCOPED_TRACE(bad);
    expect_usage(send({"-H", "h", "-p", bad, "f"}), "rdma-send",
                 std::string("--port: '") + bad + "' is not a port number from 1 to 65535");
    expect_usage(recv({"-p", bad}), "rdma-recv",
                 std::string("--port: '") + bad + "' is not a port number from 0 to 65535");
  }
}

TEST(UsageErrors, AnUnknownDigestNamesTheChoices) {
  expect_usage(send({"-H", "h", "--digest", "md5", "f"}), "rdma-send",
               "--digest: 'md5' is not one of fsverity, blake3, sha256");
  EXPECT_EQ(send({"-H", "h", "--digest", "SHA256", "f"}).status, -1);
}

TEST(UsageErrors, NumbersOutOfRangeSayTheRange) {
  expect_usage(send({"-H", "h", "-P", "0", "f"}), "rdma-send",
               "--parallel: '0' is not a number from 1 to 64");
  expect_usage(recv({"--slots", "x"}), "rdma-recv", "--slots: 'x' is not a number from 1 to");
  expect_usage(recv({"--workers", "100000000000000000000000"}), "rdma-recv",
               "--workers: '100000000000000000000000' is not a number from 1 to 256");
}

TEST(UsageErrors, UnknownArgumentsAndMissingUnits) {
  expect_usage(recv({"--bogus"}), "rdma-recv", "unexpected argument: --bogus");
  const Parsed ttl = recv({"--partial-ttl", "5"});
  EXPECT_EQ(ttl.status, 2);
  EXPECT_NE(ttl.err.find("--partial-ttl: '5' is not a duration: digits and a unit"),
            std::string::npos)
      << ttl.err;
}

// --allow / --deny: a rule that is neither a prefix, an address nor a name that resolves is
// a usage error naming the option and the item; good rules reach the options, repeated
// options and comma lists alike.
TEST(UsageErrors, AddressRulesAreCheckedAtStart) {
  for (const auto& [args, words] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--allow", "192.0.2.0/33"}, "--allow: '192.0.2.0/33': a prefix length of 33"},
           {{"--deny", "10.0.0.1,,10.0.0.2"}, "--deny: an empty item"},
           {{"--allow", "storage/24"}, "--allow: 'storage/24': a prefix length needs a numeric"}}) {
    const Parsed p = recv(args);
    EXPECT_EQ(p.status, 2) << p.err;
    EXPECT_EQ(p.err.rfind("rdma-recv: ", 0), 0u) << p.err;
    EXPECT_NE(p.err.find(words), std::string::npos) << p.err;
  }
  std::vector<std::string> argv = {"rdma-recv", "--allow",  "192.0.2.0/24,fd00::/8",
                                   "--allow",   "10.1.2.3", "--deny",
                                   "192.0.2.9"};
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  const auto parsed = receiver::parse_receiver_options(static_cast<int>(raw.size()), raw.data());
  const auto* o = std::get_if<receiver::ReceiverOptions>(&parsed);
  ASSERT_NE(o, nullptr);
  ASSERT_EQ(o->allow.size(), 3u);
  EXPECT_EQ(o->allow[1].text, "fd00::/8");
  EXPECT_EQ(o->allow[2].text, "10.1.2.3");
  ASSERT_EQ(o->deny.size(), 1u);
  EXPECT_EQ(o->deny[0].bits, 32u);
}

}  // namespace
}  // namespace rdmax
