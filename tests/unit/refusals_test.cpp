// What rdma-send says when the receiver refuses a file: every reason has a next step, and
// the step fits the scope (--name only where it can rename the file).

#include "protocol/refusals.hpp"
#include "text_contains.hpp"

#include <gtest/gtest.h>

#include <string>

namespace rdmax::proto {
namespace {

using rdmax::test::contains;

// Every reason the wire defines (docs/PROTOCOL.md 6.2).
constexpr RejectReason kEveryReason[] = {
    RejectReason::BadName,  RejectReason::Exists,   RejectReason::TooLarge,
    RejectReason::NoSpace,  RejectReason::Busy,     RejectReason::UnsupportedVersion,
    RejectReason::Internal, RejectReason::NoMemory,
};

TEST(Refusals, EveryReasonHasANextStepInEveryScope) {
  for (const RejectReason reason : kEveryReason) {
    for (const RefusalScope scope :
         {RefusalScope::File, RefusalScope::Entry, RefusalScope::Session}) {
      const std::string step = refusal_next_step(reason, scope);
      EXPECT_GT(step.size(), 20u) << to_string(reason);
      EXPECT_NE(step.back(), '.') << "a clause, the caller ends the line: " << step;
    }
  }
}

TEST(Refusals, ExistsOffersAnotherNameOnlyForTheOneFile) {
  const std::string file = refusal_next_step(RejectReason::Exists, RefusalScope::File);
  EXPECT_TRUE(contains(file, "--name")) << file;
  EXPECT_TRUE(contains(file, "rdma-recv with --overwrite")) << file;
  const std::string entry = refusal_next_step(RejectReason::Exists, RefusalScope::Entry);
  EXPECT_FALSE(contains(entry, "--name")) << entry;
  EXPECT_TRUE(contains(entry, "on the receiver")) << entry;
  EXPECT_TRUE(contains(entry, "--overwrite")) << entry;
}

TEST(Refusals, EachReasonNamesItsRemedy) {
  const auto step = [](RejectReason reason) {
    return refusal_next_step(reason, RefusalScope::File);
  };
  EXPECT_TRUE(contains(step(RejectReason::Internal), "see the receiver's log"));
  EXPECT_TRUE(contains(step(RejectReason::TooLarge), "--max-size"));
  EXPECT_TRUE(contains(step(RejectReason::NoSpace), "free space"));
  EXPECT_TRUE(contains(step(RejectReason::NoMemory), "--max-memory"));
  EXPECT_TRUE(contains(step(RejectReason::BadName), "--name"));
  EXPECT_TRUE(contains(step(RejectReason::Busy), "try again"));
  EXPECT_TRUE(contains(step(RejectReason::UnsupportedVersion), "version"));
}

TEST(Refusals, AnUnknownReasonPointsToTheReceiversLog) {
  const auto unknown = static_cast<RejectReason>(99);
  EXPECT_TRUE(contains(refusal_next_step(unknown, RefusalScope::Entry), "receiver's log"));
}

TEST(Refusals, DescribeGivesReasonTextAndNextStep) {
  EXPECT_EQ(
      describe_refusal(RejectReason::Exists, "a file of that name exists", RefusalScope::File),
      "Exists: a file of that name exists; " +
          refusal_next_step(RejectReason::Exists, RefusalScope::File));
  EXPECT_EQ(describe_refusal(RejectReason::Internal, "", RefusalScope::Entry),
            "Internal; " + refusal_next_step(RejectReason::Internal, RefusalScope::Entry));
}

TEST(Refusals, TheReceiversTextIsEscaped) {
  const std::string line =
      describe_refusal(RejectReason::BadName, "bad\nline\x1b[31m", RefusalScope::File);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_TRUE(contains(line, "bad\\x0aline\\x1b[31m")) << line;
}

}  // namespace
}  // namespace rdmax::proto
