// -H HOST1,HOST2,... (sender/receivers.hpp): the receivers a command spreads its connections
// over, and (sender/report.hpp) what the report says each of them got.

#include "sender/receivers.hpp"

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "sender/exit_codes.hpp"
#include "sender/report.hpp"

namespace rdmax::sender {
namespace {

using Receivers = std::vector<Receiver>;

Receivers parsed(std::string_view text, std::uint16_t port = 18515) {
  auto result = parse_receivers(text, port);
  if (const auto* error = std::get_if<std::string>(&result)) {
    ADD_FAILURE() << text << ": " << *error;
    return {};
  }
  return std::get<Receivers>(result);
}

std::string refused(std::string_view text) {
  auto result = parse_receivers(text, 18515);
  if (std::holds_alternative<Receivers>(result)) {
    ADD_FAILURE() << text << " was accepted";
    return {};
  }
  return std::get<std::string>(result);
}

TEST(Receivers, OneHostIsOneReceiverOnThePortOfP) {
  EXPECT_EQ(parsed("recv.example.org", 18600), (Receivers{{"recv.example.org", 18600}}));
  EXPECT_EQ(parsed("192.0.2.1"), (Receivers{{"192.0.2.1", 18515}}));
  // An IPv6 address as it always was: its colons are not a port.
  EXPECT_EQ(parsed("fd00::2"), (Receivers{{"fd00::2", 18515}}));
  EXPECT_EQ(parsed("[fd00::2]"), (Receivers{{"[fd00::2]", 18515}}));
}

TEST(Receivers, SeveralWithTheirOwnPortsOrP) {
  EXPECT_EQ(parsed("a,b:18600,[fd00::3]:18700,fd00::4", 18515),
            (Receivers{{"a", 18515}, {"b", 18600}, {"fd00::3", 18700}, {"fd00::4", 18515}}));
  // One host twice on two ports: two daemons.
  EXPECT_EQ(parsed("192.0.2.1:18515,192.0.2.1:18516").size(), 2u);
}

TEST(Receivers, PlusJoinsTheAddressesOfOneReceiver) {
  // Multi-rail: one daemon reached over its two ports, the port written once or on each.
  EXPECT_EQ(parsed("192.0.2.2+198.51.100.2"), (Receivers{{"192.0.2.2", 18515, {"198.51.100.2"}}}));
  EXPECT_EQ(parsed("a+b:18600,c"), (Receivers{{"a", 18600, {"b"}}, {"c", 18515}}));
  EXPECT_EQ(parsed("a:18600+b:18600"), (Receivers{{"a", 18600, {"b"}}}));
  EXPECT_EQ(parsed("[fd00::2]:18700+fd00::3"), (Receivers{{"fd00::2", 18700, {"fd00::3"}}}));
  // Its connections take its addresses in turn; reports name it once.
  const Receiver r = parsed("a+b+[fd00::9]:18600").front();
  EXPECT_EQ(r.addresses(), 3u);
  EXPECT_EQ(r.address(0), "a");
  EXPECT_EQ(r.address(2), "fd00::9");
  EXPECT_EQ(r.address(4), "b");
  EXPECT_EQ(r.name(), "a+b+[fd00::9]:18600");
  EXPECT_EQ(parsed("a").front().name(), "a:18515");
}

TEST(Receivers, MistakesAreRefusedSayingWhy) {
  EXPECT_NE(refused("a+").find("empty HOST"), std::string::npos);
  EXPECT_NE(refused("a+b,a").find("named twice"), std::string::npos);
  EXPECT_NE(refused("a+a").find("named twice"), std::string::npos);
  EXPECT_NE(refused("a:18600+b:18601").find("share its port"), std::string::npos);
  EXPECT_NE(refused("a,,b").find("empty HOST"), std::string::npos);
  EXPECT_NE(refused("a,").find("empty HOST"), std::string::npos);
  EXPECT_NE(refused(",a").find("empty HOST"), std::string::npos);
  EXPECT_NE(refused("a:0").find("not a port number"), std::string::npos);
  EXPECT_NE(refused("a:65536").find("not a port number"), std::string::npos);
  EXPECT_NE(refused("a:x").find("not a port number"), std::string::npos);
  EXPECT_NE(refused("a:").find("not a port number"), std::string::npos);
  EXPECT_NE(refused(":18515").find("no host"), std::string::npos);
  EXPECT_NE(refused("[fd00::2").find("[ADDRESS]:PORT"), std::string::npos);
  EXPECT_NE(refused("[fd00::2]x").find("[ADDRESS]:PORT"), std::string::npos);
  EXPECT_NE(refused("[fd00::2]:").find("not a port number"), std::string::npos);
  EXPECT_NE(refused("a,b,a").find("named twice"), std::string::npos);
  EXPECT_NE(refused("a:18515,a").find("named twice"), std::string::npos);
}

PlannedEntry file(std::string name, std::uint64_t size) {
  PlannedEntry e;
  e.local_path = "/src/" + name;
  e.remote_path = std::move(name);
  e.size = size;
  return e;
}

EntryResult went_to(std::string receiver, EntryResult::Status status) {
  EntryResult r;
  r.receiver = std::move(receiver);
  r.status = status;
  r.outcome = status == EntryResult::Status::Good ? proto::SenderOutcome::Success
                                                  : proto::SenderOutcome::ConnectionLost;
  return r;
}

TEST(Receivers, TheReportSaysWhatEachReceiverGot) {
  TransferPlan plan;
  for (const char* name : {"a", "b", "c"}) plan.entries.push_back(file(name, 10));
  plan.results = {went_to("192.0.2.1:18515", EntryResult::Status::Good),
                  went_to("192.0.2.2:18515", EntryResult::Status::NotSent),
                  went_to("192.0.2.1:18515", EntryResult::Status::Good)};
  RunSummary summary;
  const int rc = exit_status(plan, summary);
  EXPECT_EQ(rc, kExitConnection);  // the one that failed decides
  const auto j = nlohmann::json::parse(to_json(plan, summary, rc, ""));
  ASSERT_EQ(j["receivers"].size(), 2u);
  EXPECT_EQ(j["receivers"][0]["receiver"], "192.0.2.1:18515");
  EXPECT_EQ(j["receivers"][0]["files"], 2);
  EXPECT_EQ(j["receivers"][0]["good"], 2);
  EXPECT_EQ(j["receivers"][0]["bytes"], 20);
  EXPECT_EQ(j["receivers"][1]["receiver"], "192.0.2.2:18515");
  EXPECT_EQ(j["receivers"][1]["not_sent"], 1);
  EXPECT_EQ(j["entries"][1]["receiver"], "192.0.2.2:18515");
  // And the closing lines name the failed receiver.
  std::ostringstream log;
  const auto saved = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
  summarize(plan, summary, rc);
  spdlog::set_default_logger(saved);
  const std::string said = log.str();
  EXPECT_NE(said.find("192.0.2.2:18515: 1 files and 0 directories: 0 good, 0 failed, 1 not sent"),
            std::string::npos)
      << said;
}

}  // namespace
}  // namespace rdmax::sender
