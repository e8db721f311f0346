// --json-lines (sender/report.hpp, JsonLines): one line per entry as it settles, each the very
// object --json lists, and a summary line that is --json's object without its entries.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sender/exit_codes.hpp"
#include "sender/report.hpp"

namespace rdmax::sender {
namespace {

using Status = EntryResult::Status;
using O = proto::SenderOutcome;
using Json = nlohmann::json;

PlannedEntry entry(std::string name, std::uint64_t size,
                   proto::EntryKind kind = proto::EntryKind::File) {
  PlannedEntry e;
  e.kind = kind;
  e.local_path = "/src/" + name;
  e.remote_path = std::move(name);
  e.size = size;
  e.digest.fill(0x5a);
  return e;
}

EntryResult result(Status status, O outcome, std::string receiver = "192.0.2.1:18515") {
  EntryResult r;
  r.status = status;
  r.outcome = outcome;
  r.receiver = std::move(receiver);
  return r;
}

std::vector<Json> lines_of(const std::string& out) {
  std::vector<Json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

struct Command {
  TransferPlan plan;
  RunSummary summary;
  std::ostringstream out;
  JsonLines lines{out};
  void add(PlannedEntry e) {
    plan.entries.push_back(std::move(e));
    plan.results.emplace_back();
  }
  // What a connection does when it settles entry i.
  void settle(std::size_t i, EntryResult r) {
    plan.results[i] = std::move(r);
    lines.settled(plan, i);
  }
  int finish(const std::string& secret = "") {
    const int rc = exit_status(plan, summary);
    lines.finish(plan, summary, rc, secret);
    return rc;
  }
};

TEST(JsonLines, EachEntryIsOneLineWhenItSettlesAndOnlyOnce) {
  Command c;
  c.add(entry("a", 10));
  c.add(entry("b", 20));
  c.settle(1, result(Status::Good, O::Success));
  ASSERT_EQ(lines_of(c.out.str()).size(), 1u);  // written at once, not at the end
  EXPECT_EQ(lines_of(c.out.str())[0]["entry"]["name"], "b");
  c.lines.settled(c.plan, 1);  // again: nothing more
  EXPECT_EQ(lines_of(c.out.str()).size(), 1u);
  c.settle(0, result(Status::Refused, O::Rejected));
  const auto lines = lines_of(c.out.str());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["entry"]["name"], "a");
  EXPECT_EQ(lines[1]["entry"]["status"], "refused");
  EXPECT_EQ(lines[1]["entry"]["receiver"], "192.0.2.1:18515");
}

TEST(JsonLines, TheEndWritesTheUnsettledThenTheSummary) {
  Command c;
  c.add(entry("sent", 100));
  c.add(entry("cut", 30));
  c.add(entry("dir", 0, proto::EntryKind::Directory));
  c.settle(0, result(Status::Good, O::Success));
  c.plan.results[1].outcome = O::ConnectionLost;  // its connection broke
  c.plan.results[2].outcome = O::ConnectionLost;
  c.summary.bytes = 100;
  const int rc = c.finish("s3cret");
  EXPECT_EQ(rc, kExitConnection);
  const auto lines = lines_of(c.out.str());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1]["entry"]["name"], "cut");
  EXPECT_EQ(lines[1]["entry"]["status"], "not_sent");
  EXPECT_EQ(lines[2]["entry"]["kind"], "directory");
  const Json& summary = lines[3]["summary"];
  EXPECT_EQ(summary["files"], 2);
  EXPECT_EQ(summary["directories"], 1);
  EXPECT_EQ(summary["good"], 1);
  EXPECT_EQ(summary["not_sent"], 2);
  EXPECT_EQ(summary["bytes_sent"], 100);
  EXPECT_EQ(summary["exit_code"], kExitConnection);
  EXPECT_FALSE(summary.contains("secret"));  // only on success, as with --json
  EXPECT_FALSE(summary.contains("entries"));
}

TEST(JsonLines, OneSchemaWithJson) {
  Command c;
  c.add(entry("x y/\xc3\xbc", 7));
  c.add(entry("gone", 0));
  c.settle(0, result(Status::Good, O::Success));
  auto unreadable = result(Status::Failed, O::LocalFailure, "");
  unreadable.detail = "cannot read: No such file or directory";
  c.settle(1, unreadable);
  c.summary.left_out = 1;
  const int rc = c.finish("s3cret");
  EXPECT_EQ(rc, kExitOther);
  const auto lines = lines_of(c.out.str());
  const Json json = Json::parse(to_json(c.plan, c.summary, rc, "s3cret"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["entry"], json["entries"][0]);
  EXPECT_EQ(lines[1]["entry"], json["entries"][1]);
  EXPECT_FALSE(lines[1]["entry"].contains("receiver"));  // it never had a connection
  Json totals = json;
  totals.erase("entries");
  EXPECT_EQ(lines[2]["summary"], totals);
  EXPECT_EQ(lines[2]["summary"]["failed"], 1);
  EXPECT_EQ(lines[2]["summary"]["left_out"], 1);
}

TEST(JsonLines, TheSecretOfASuccessfulRunIsInTheSummaryLine) {
  Command c;
  c.add(entry("a", 1));
  c.settle(0, result(Status::Good, O::Success));
  EXPECT_EQ(c.finish("s3cret"), kExitSuccess);
  const auto lines = lines_of(c.out.str());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["summary"]["secret"], "s3cret");
  EXPECT_EQ(lines[0]["entry"]["digest"]["value"].get<std::string>().substr(0, 4), "5a5a");
}

TEST(JsonLines, AFailureBeforeAnyTransferIsOneSummaryLine) {
  const std::string line = to_json_failure_line(kExitUsage, "--files-from 'x': cannot read");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const Json j = Json::parse(line);
  EXPECT_EQ(j["summary"]["exit_code"], kExitUsage);
  EXPECT_EQ(j["summary"]["error"], "--files-from 'x': cannot read");
  EXPECT_FALSE(j["summary"].contains("entries"));
}

}  // namespace
}  // namespace rdmax::sender
