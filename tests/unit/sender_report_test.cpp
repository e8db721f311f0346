// rdma-send's one report (sender/report.hpp): the exit status of a command, one file or
// many, and the --json object, whose every word has one meaning.

#include "sender/report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "sender/exit_codes.hpp"

namespace rdmax::sender {
namespace report_test {

using Status = EntryResult::Status;
using O = proto::SenderOutcome;

PlannedEntry file(std::string name, std::uint64_t size) {
  PlannedEntry e;
  e.local_path = "src/" + name;
  e.remote_path = name;
  e.size = size;
  e.mode = 0644;
  e.digest.fill(0xab);
  return e;
}

EntryResult result(Status status, O outcome, std::uint64_t bytes = 0) {
  EntryResult r;
  r.status = status;
  r.outcome = outcome;
  r.bytes = bytes;
  return r;
}

struct Command {
  TransferPlan plan;
  RunSummary summary;
  void add(PlannedEntry e, EntryResult r) {
    plan.entries.push_back(std::move(e));
    plan.results.push_back(std::move(r));
  }
  nlohmann::json json(const std::string& secret = "") const {
    return nlohmann::json::parse(to_json(plan, summary, exit_status(plan, summary), secret));
  }
};

TEST(SenderReport, TheExitStatusIsTheFirstEntrysThatIsNotGood) {
  Command c;
  c.add(file("a", 10), result(Status::Good, O::Success, 10));
  c.add(file("b", 10), result(Status::Refused, O::Rejected));
  c.add(file("c", 10), result(Status::Failed, O::HashMismatch, 10));
  EXPECT_EQ(exit_status(c.plan, c.summary), kExitRejected);
  std::swap(c.plan.results[1], c.plan.results[2]);
  EXPECT_EQ(exit_status(c.plan, c.summary), kExitHashMismatch);
}

TEST(SenderReport, EveryEntryGoodIsSuccessUnlessTheIdWasDenied) {
  Command c;
  c.add(file("a", 10), result(Status::Good, O::Success, 10));
  EXPECT_EQ(exit_status(c.plan, c.summary), kExitSuccess);
  c.summary.lead = O::Denied;
  EXPECT_EQ(exit_status(c.plan, c.summary), kExitDenied);
  EXPECT_EQ(c.json()["outcome"], "denied");
}

// --json's outcome values are identifiers that scripts match (rdma-send(1) lists them): each
// is written out here, so that a renamed one fails a test rather than a user's script.
TEST(SenderReport, OutcomesAreTheStableIdentifiersTheManPageLists) {
  const std::vector<std::pair<O, std::string>> expected{
      {O::Success, "success"},
      {O::ConnectFailed, "connect_failed"},
      {O::ConnectionLost, "connection_lost"},
      {O::Rejected, "rejected"},
      {O::HashMismatch, "hash_mismatch"},
      {O::Denied, "denied"},
      {O::ReceiverFailed, "receiver_failed"},
      {O::ProtocolError, "protocol_error"},
      {O::Interrupted, "interrupted"},
      {O::VersionUnsupported, "version_unsupported"},
      {O::LocalFailure, "local_failure"},
      {O::SomeFailed, "some_failed"},
      {O::AuthFailed, "auth_failed"},
  };
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(O::AuthFailed) + 1);
  for (const auto& [outcome, id] : expected) {
    Command c;
    c.add(file("a", 10), result(outcome == O::Success ? Status::Good : Status::Failed, outcome));
    EXPECT_EQ(c.json()["entries"][0]["outcome"], id);
    if (outcome != O::Success) {
      EXPECT_EQ(c.json()["outcome"], id);
    }
  }
}

TEST(SenderReport, AnEntryNotGoodFailsTheCommandWhateverItsConnectionSaid) {
  Command c;
  c.add(file("a", 10), result(Status::NotSent, O::Success));
  EXPECT_EQ(exit_status(c.plan, c.summary), kExitOther);
}

TEST(SenderReport, JsonKeepsIdenticalNotSentAndLeftOutApart) {
  Command c;
  c.add(file("sent", 100), result(Status::Good, O::Success, 100));
  auto identical = result(Status::Good, O::Success);
  identical.identical = true;
  c.add(file("there", 50), identical);
  c.add(file("cut", 30), result(Status::NotSent, O::Interrupted, 0));
  c.summary.left_out = 2;
  c.summary.bytes = 100;
  c.summary.data_seconds = 2;
  const auto j = c.json();
  ASSERT_EQ(j["entries"].size(), 3u);
  EXPECT_EQ(j["entries"][0]["status"], "good");
  EXPECT_EQ(j["entries"][1]["status"], "identical");
  EXPECT_EQ(j["entries"][1]["verdict"], "good");
  EXPECT_EQ(j["entries"][2]["status"], "not_sent");
  EXPECT_EQ(j["entries"][2]["verdict"], "none");
  EXPECT_EQ(j["entries"][2]["outcome"], "interrupted");
  EXPECT_EQ(j["good"], 2);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["not_sent"], 1);
  EXPECT_EQ(j["identical"], 1);
  EXPECT_EQ(j["left_out"], 2);
  EXPECT_EQ(j["bytes"], 180);  // the files' size: one meaning, for one file or many
  EXPECT_EQ(j["bytes_sent"], 100);
  EXPECT_EQ(j["bytes_not_resent"], 50);
  EXPECT_EQ(j["data_bytes_per_second"], 50.0);
  EXPECT_EQ(j["verdict"], "none");
  EXPECT_EQ(j["exit_code"], kExitOther);
}

TEST(SenderReport, OneFileHasTheSameSchemaWithItsDigestVerdictAndZeroCopy) {
  Command c;
  auto e = file("one.bin", 4096);
  e.digest_from_cache = true;
  auto r = result(Status::Good, O::Success, 4096);
  r.zero_copy = true;
  c.add(e, r);
  c.plan.algorithm = proto::DigestAlgorithm::WholeFileSha256;
  const auto j = c.json("s3cret");
  const auto& entry = j["entries"][0];
  EXPECT_EQ(entry["name"], "one.bin");
  EXPECT_EQ(entry["digest"]["algorithm"], "sha256");
  std::string hex;
  for (std::size_t i = 0; i < e.digest.size(); ++i) hex += "ab";
  EXPECT_EQ(entry["digest"]["value"], hex);
  EXPECT_EQ(entry["digest"]["from_cache"], true);
  EXPECT_EQ(entry["verdict"], "good");
  EXPECT_EQ(entry["zero_copy"], true);
  EXPECT_EQ(j["zero_copy"], true);
  EXPECT_EQ(j["verdict"], "good");
  EXPECT_EQ(j["secret"], "s3cret");
}

// Offered without its digest (7.9): the digest learned at its end is reported; a file
// abandoned before its end has none, and says so with null rather than zeros.
TEST(SenderReport, ADigestLearnedAtTheEndIsReportedAndOneNeverLearnedIsNull) {
  Command c;
  auto learned = file("learned.bin", 8192);
  learned.digest_known = false;
  auto abandoned = file("abandoned.bin", 8192);
  abandoned.digest_known = false;
  abandoned.digest = {};
  c.add(learned, result(Status::Good, O::Success, 8192));
  c.add(abandoned, result(Status::Failed, O::LocalFailure, 4096));
  const auto j = c.json();
  std::string hex;
  for (std::size_t i = 0; i < learned.digest.size(); ++i) hex += "ab";
  EXPECT_EQ(j["entries"][0]["digest"]["value"], hex);
  EXPECT_TRUE(j["entries"][1]["digest"]["value"].is_null()) << j["entries"][1].dump();
  EXPECT_EQ(j["entries"][1]["digest"]["algorithm"], "fsverity-sha256");
}

TEST(SenderReport, ABadVerdictIsBadAndASecretIsNeverPrintedOnFailure) {
  Command c;
  c.add(file("x", 10), result(Status::Failed, O::HashMismatch, 10));
  const auto j = c.json("s3cret");
  EXPECT_EQ(j["entries"][0]["verdict"], "bad");
  EXPECT_EQ(j["verdict"], "bad");
  EXPECT_EQ(j["exit_code"], kExitHashMismatch);
  EXPECT_FALSE(j.contains("secret"));
}

TEST(SenderReport, AFailureBeforeAnyTransferIsStillOneObject) {
  const auto j = nlohmann::json::parse(to_json_failure(kExitUsage, "cannot read x: missing"));
  EXPECT_TRUE(j["entries"].empty());
  EXPECT_EQ(j["exit_code"], kExitUsage);
  EXPECT_EQ(j["error"], "cannot read x: missing");
}

}  // namespace report_test
}  // namespace rdmax::sender
