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
               "--digest: 'md5' is not one of fsverity, sha256");
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

}  // namespace
}  // namespace rdmax
