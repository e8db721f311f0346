// A fetch through the transport seam (docs/PROTOCOL.md 7.13): the server's intake and its
// sender driver on one fake transport, the fetcher's intake and its receiver driver on
// another, linked message by message and WRITE by WRITE. The role swap: who connects asks,
// and the session that follows is a push's with the server sending.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/crypto/auth_penalties.hpp"
#include "fake_transport.hpp"
#include "protocol/auth.hpp"
#include "protocol/seal.hpp"
#include "protocol/sender_keys.hpp"
#include "receiver/connection.hpp"
#include "receiver/fetch_intake.hpp"
#include "receiver/fetch_report.hpp"
#include "receiver/output_file.hpp"
#include "sender/serve_intake.hpp"
#include "sender/serve_metrics.hpp"
#include "sender/served_session.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

namespace rdmax::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class FetchCmStandIn final : public receiver::FetchCm {
 public:
  explicit FetchCmStandIn(FakeTransport& wire) : wire_(wire) {}
  void resolve_route() override {}
  Transport& connect() override { return wire_; }

 private:
  FakeTransport& wire_;
};

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}
std::string read_back(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
std::string pattern(std::size_t n, char seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i * 7));
  return s;
}

// The export, the destination and the pools, which outlive every fetch over them.
struct FetchBench {
  TempDir exported{"rdmax-export"};
  TempDir dest{"rdmax-fetched"};
  WorkPool server_pool{2};
  WorkPool pool{2};
  sender::ServeContext serve_context{exported.fd(), server_pool, std::chrono::seconds(5)};
  sender::ServeSettings serve_settings{proto::DigestAlgorithm::Blake3, std::chrono::seconds(5),
                                       nullptr, &server_pool};
  receiver::ReceiverOptions options = [] {
    receiver::ReceiverOptions o;
    o.slot_size = 4096;
    o.slots = 4;
    o.direct_io = false;
    o.timeout = std::chrono::seconds(5);
    o.overwrite = true;  // as --from sets them
    o.keep_identical = true;
    return o;
  }();
  receiver::ReceiverMetrics metrics{dest.fd()};
  receiver::ReceiverContext context{options, dest.fd(), nullptr, pool, metrics, 0};

  FetchBench() {
    write_file(exported.path() / "data/a.bin", pattern(10000, 'a'));
    write_file(exported.path() / "data/sub/b.txt", "bee\n");
    write_file(exported.path() / "data/empty", "");
    fs::create_directories(exported.path() / "data/hollow");
  }
  // Runs both pools' finished jobs until `done` (bounded).
  bool run_until(const std::function<bool()>& done) {
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      pollfd fds[2] = {{server_pool.ready_fd(), POLLIN, 0}, {pool.ready_fd(), POLLIN, 0}};
      ::poll(fds, 2, 5);
      server_pool.run_completions();
      pool.run_completions();
    }
    return true;
  }
};

// One fetch: both sides' drivers over their fakes, linked.
struct FetchLink {
  FetchBench& bench;
  FakeTransport server_wire;
  FakeTransport fetcher_wire;
  FetchCmStandIn cm{fetcher_wire};
  receiver::FetchAsk ask;
  std::optional<sender::ServeIntake> intake;
  std::unique_ptr<sender::ServedSession> served;
  std::optional<receiver::FetchIntake> fetching;
  std::optional<receiver::Connection> receiving;
  std::size_t from_server = 0, writes = 0, from_fetcher = 0;

  explicit FetchLink(FetchBench& b) : bench(b) {
    intake.emplace(server_wire, "fetcher", bench.serve_context, [this](sender::ServedTree share) {
      served = std::make_unique<sender::ServedSession>(
          std::move(share), intake->wire(), bench.serve_settings, "fetcher", intake->chunk_key());
      served->start();
    });
    intake->on_established();
  }
  ~FetchLink() {
    if (receiving) {
      receiving->abandon();
      bench.run_until([&] { return receiving->idle(); });
    }
    receiving.reset();
    served.reset();
  }
  FetchLink(const FetchLink&) = delete;
  FetchLink& operator=(const FetchLink&) = delete;

  // The fetcher connects and asks for `paths`.
  void fetch(const std::vector<std::string>& paths, bool recursive, bool keep_path = false) {
    for (const auto& p : paths) ask.wants.push_back({false, recursive, p, keep_path});
    ask.wants.back().last = true;
    ask.timeout = std::chrono::seconds(5);
    fetching.emplace(ask, cm, "server", [this] {
      receiving.emplace(fetching->wire(), "server", bench.context);
      if (const proto::SealKey* key = fetching->chunk_key()) receiving->chunks_sealed_with(*key);
      receiving->on_established();
    });
    fetching->start();
    fetching->on_setup(proto::SetupEvent::AddressResolved);
    fetching->on_setup(proto::SetupEvent::RouteResolved);
    fetching->on_established();
  }
  DriverCore& server() {
    if (served) return served->connection();
    return *intake;
  }
  DriverCore& fetcher() {
    if (receiving) return *receiving;
    return *fetching;
  }
  bool server_done() const { return served ? served->connection().finished() : intake->closed(); }
  bool fetcher_done() const { return receiving ? receiving->closed() : fetching->finished(); }

  void step() {
    for (; from_server < server_wire.sent.size(); ++from_server) {
      for (; writes < server_wire.writes.size() && server_wire.writes[writes].before <= from_server;
           ++writes) {
        const auto& w = server_wire.writes[writes];
        ASSERT_TRUE(fetcher_wire.write_remote(w.remote_addr, w.rkey, w.bytes));
      }
      const auto& sent = server_wire.sent[from_server];
      fetcher_wire.deliver(sent.message, sent.version);
      server_wire.complete_sends(1);
    }
    for (; from_fetcher < fetcher_wire.sent.size(); ++from_fetcher) {
      const auto& sent = fetcher_wire.sent[from_fetcher];
      server_wire.deliver(sent.message, sent.version);
      fetcher_wire.complete_sends(1);
    }
    // rdma_cm tells both sides once either disconnected.
    if (server_wire.disconnected || fetcher_wire.disconnected) {
      if (!server_done()) server().on_disconnected();
      if (!fetcher_done()) fetcher().on_disconnected();
    }
    server().poll();
    fetcher().poll();
    // As the server's loop does: a session that ended settles on a tick once its jobs stop.
    if (served && served->connection().state() == proto::SenderState::Done)
      served->connection().tick(std::chrono::steady_clock::now());
  }
  bool run() {
    return bench.run_until([&] {
      step();
      return server_done() && fetcher_done();
    });
  }
  // Whether any byte run of `needle` crossed the wire: a message's encoding or a WRITE.
  bool wire_holds(const std::string& needle) const {
    auto in = [&](const std::vector<std::uint8_t>& bytes) {
      return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
    };
    for (const auto* w : {&server_wire, &fetcher_wire}) {
      for (const auto& s : w->sent)
        if (in(proto::encode(s.message, proto::kVersion2))) return true;
      for (const auto& write : w->writes)
        if (in(write.bytes)) return true;
    }
    return false;
  }
  template <typename M>
  std::vector<M> server_sent() const {
    std::vector<M> out;
    for (const auto& s : server_wire.sent)
      if (const auto* m = std::get_if<M>(&s.message)) out.push_back(*m);
    return out;
  }
};

TEST(FetchLink, ATreeArrivesWholeAndTheServersByeEndsIt) {
  FetchBench bench;
  FetchLink link(bench);
  link.fetch({"data"}, true);
  ASSERT_TRUE(link.run());
  ASSERT_TRUE(link.receiving) << "the server's Open handed the connection over";
  EXPECT_EQ(link.receiving->session_end(), proto::SessionEnd::Settled);
  const fs::path got = bench.dest.path() / "data";
  EXPECT_EQ(read_back(got / "a.bin"), pattern(10000, 'a'));
  EXPECT_EQ(read_back(got / "sub/b.txt"), "bee\n");
  EXPECT_TRUE(fs::is_regular_file(got / "empty"));
  EXPECT_TRUE(fs::is_directory(got / "hollow"));
  EXPECT_EQ(bench.metrics.files(receiver::FileOutcome::Good), 3U);
  ASSERT_TRUE(link.served);
  EXPECT_EQ(link.served->good(), link.served->plan().entries.size());
  // The server's first message was its Open: no Want, no Fetch goes back.
  ASSERT_FALSE(link.server_wire.sent.empty());
  EXPECT_TRUE(std::holds_alternative<proto::Open>(link.server_wire.sent.front().message));
  EXPECT_TRUE(std::holds_alternative<proto::Fetch>(link.fetcher_wire.sent.front().message));
}

TEST(FetchLink, FetchedAgainNothingMovesButWhatChanged) {
  FetchBench bench;
  {
    FetchLink first(bench);
    first.fetch({"data"}, true);
    ASSERT_TRUE(first.run());
  }
  write_file(bench.exported.path() / "data/sub/b.txt", "changed\n");
  FetchLink again(bench);
  again.fetch({"data"}, true);
  ASSERT_TRUE(again.run());
  EXPECT_EQ(again.receiving->session_end(), proto::SessionEnd::Settled);
  EXPECT_EQ(bench.metrics.files(receiver::FileOutcome::Identical), 1U) << "a.bin was here";
  EXPECT_EQ(read_back(bench.dest.path() / "data/sub/b.txt"), "changed\n");
  std::uint64_t chunk_bytes = 0;
  for (const auto& c : again.server_sent<proto::FileChunk>()) chunk_bytes += c.length;
  EXPECT_EQ(chunk_bytes, 8U) << "only the changed file moved";
}

TEST(FetchLink, APathTheServerDoesNotHaveIsRefusedAndNothingIsWritten) {
  FetchBench bench;
  FetchLink link(bench);
  link.fetch({"data/a.bin", "data/nothing"}, false);
  ASSERT_TRUE(link.run());
  EXPECT_FALSE(link.receiving);
  EXPECT_EQ(link.fetching->outcome(), proto::SenderOutcome::Rejected);
  EXPECT_TRUE(contains(link.fetching->server_said(), "data/nothing"))
      << link.fetching->server_said();
  EXPECT_TRUE(fs::is_empty(bench.dest.path()));
  const auto rejects = link.server_sent<proto::Reject>();
  ASSERT_EQ(rejects.size(), 1U);
  EXPECT_EQ(rejects[0].reason, proto::RejectReason::BadName);
}

// rdma-send --serve --metrics: a refused request is counted by its reason, on a page that
// Prometheus reads.
TEST(FetchLink, ARefusedRequestIsCountedOnTheServersMetricsPage) {
  FetchBench bench;
  sender::ServeMetrics metrics;
  bench.serve_context.metrics = &metrics;
  FetchLink link(bench);
  link.fetch({"../outside"}, false);
  ASSERT_TRUE(link.run());
  EXPECT_EQ(metrics.requests_refused(proto::RejectReason::BadName), 1U);
  EXPECT_EQ(metrics.requests_refused(proto::RejectReason::AuthFailed), 0U);
  metrics.sent_bytes = 12345;
  metrics.count(sender::FetcherRefusal::Address);
  const std::string page = metrics.render();
  EXPECT_TRUE(contains(page, "rdmax_serve_requests_refused_total{reason=\"bad_name\"} 1\n"))
      << page;
  EXPECT_TRUE(contains(page, "rdmax_serve_sent_bytes_total 12345\n"));
  EXPECT_TRUE(contains(page, "rdmax_serve_fetchers_refused_total{reason=\"address\"} 1\n"));
  EXPECT_TRUE(contains(page, "# TYPE rdmax_serve_connections gauge\n"));
  EXPECT_TRUE(contains(page, "rdmax_build_info{version="));
}

// rdma-recv --from --json: every entry that ends here is told once, as it ended, and the
// report's totals are counted from them.
TEST(FetchLink, EveryEntryIsReportedOnceAsItEndedAndTheJsonCountsThem) {
  FetchBench bench;
  std::vector<receiver::EntryReport> told;
  const receiver::EntryReports tell = [&](receiver::EntryReport r) { told.push_back(r); };
  bench.context.reports = &tell;
  {
    FetchLink first(bench);
    first.fetch({"data"}, true);
    ASSERT_TRUE(first.run());
  }
  std::map<std::string, receiver::EntryReport> by_path;
  for (const auto& r : told) EXPECT_TRUE(by_path.emplace(r.path, r).second) << r.path << " twice";
  ASSERT_EQ(by_path.size(), 6U) << "3 files, 3 directories";
  const auto& a = by_path.at("data/a.bin");
  EXPECT_EQ(a.status, receiver::EntryReport::Status::Good);
  EXPECT_EQ(a.bytes_received, 10000U);
  ASSERT_TRUE(a.digest.has_value());
  EXPECT_EQ(by_path.at("data/hollow").kind, proto::EntryKind::Directory);
  EXPECT_EQ(by_path.at("data/hollow").status, receiver::EntryReport::Status::Good);
  told.clear();
  write_file(bench.exported.path() / "data/sub/b.txt", "changed\n");
  FetchLink again(bench);
  again.fetch({"data"}, true);
  ASSERT_TRUE(again.run());
  std::set<std::string> paths;
  for (const auto& r : told) EXPECT_TRUE(paths.insert(r.path).second) << r.path << " twice";
  std::ostringstream out;
  receiver::FetchReport report(out, receiver::FetchReport::Mode::Json);
  for (const auto& r : told) report.add(r);
  report.finish({0, 1, 1.5, ""});
  const auto json = nlohmann::json::parse(out.str());
  ASSERT_EQ(json["entries"].size(), 6U) << out.str();
  EXPECT_EQ(json["files"], 3);
  EXPECT_EQ(json["directories"], 3);
  EXPECT_EQ(json["identical"], 1) << "a.bin was here: " << out.str();
  EXPECT_EQ(json["good"], 5) << "b.txt, the empty file (made again), the directories";
  EXPECT_EQ(json["bytes_received"], 8) << "only the changed file moved";
  EXPECT_EQ(json["exit_code"], 0);
  EXPECT_FALSE(json.contains("error"));
  for (const auto& e : json["entries"])
    if (e["name"] == "data/sub/b.txt") {
      EXPECT_EQ(e["status"], "good");
      EXPECT_EQ(e["digest"]["algorithm"], "blake3");
      EXPECT_EQ(e["digest"]["value"].get<std::string>().size(), 64U);
    }
  // --json-lines: the entries as they come, then the summary alone.
  std::ostringstream lines;
  receiver::FetchReport streamed(lines, receiver::FetchReport::Mode::JsonLines);
  streamed.add(told.front());
  EXPECT_EQ(nlohmann::json::parse(lines.str())["entry"]["name"], told.front().path);
  streamed.finish({4, 2, 0, "refused"});
  std::istringstream read(lines.str());
  std::string line, last;
  while (std::getline(read, line)) last = line;
  const auto summary = nlohmann::json::parse(last)["summary"];
  EXPECT_EQ(summary["exit_code"], 4);
  EXPECT_EQ(summary["error"], "refused");
  EXPECT_EQ(summary["connections"], 2);
  EXPECT_FALSE(summary.contains("entries"));
}

TEST(FetchLink, AnEmptyShareIsAByeAndTheFetchSucceeds) {
  FetchBench bench;
  FetchLink link(bench);
  link.ask.shard_index = 1;
  link.ask.shard_count = 2;
  link.fetch({"data/empty"}, false);  // one file: share 1 of 2 is empty
  ASSERT_TRUE(link.run());
  EXPECT_FALSE(link.receiving);
  EXPECT_EQ(link.fetching->outcome(), proto::SenderOutcome::Success);
  EXPECT_EQ(link.server_sent<proto::Bye>().size(), 1U);
}

TEST(FetchLink, AnOfferOfANameNotAskedForIsRefusedAndNothingIsWritten) {
  FetchBench bench;
  // As if the server sent another tree than the one asked for (a server that proves nothing).
  const std::set<std::string> asked{"other"};
  bench.context.fetched_names = &asked;
  FetchLink link(bench);
  link.fetch({"data"}, true);
  ASSERT_TRUE(link.run());
  EXPECT_GT(bench.metrics.files_refused(), 0U);
  EXPECT_EQ(bench.metrics.files(receiver::FileOutcome::Good), 0U);
  EXPECT_TRUE(fs::is_empty(bench.dest.path()));
}

// --files-from: each listed path arrives under its whole path (keep_path), the directories
// above it with the export's modes and times, a listed directory without its contents.
TEST(FetchLink, ListedPathsArriveWholeWithTheDirectoriesAboveThem) {
  FetchBench bench;
  const fs::path from = bench.exported.path();
  fs::permissions(from / "data/sub",
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);  // 0750
  const timespec old_times[2] = {{0, UTIME_OMIT}, {1000000000, 5}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (from / "data/sub").c_str(), old_times, 0), 0);
  const std::set<std::string> asked{"data"};  // as the fetcher computes it: first components
  bench.context.fetched_names = &asked;
  FetchLink link(bench);
  link.fetch({"data/sub/b.txt", "data/hollow"}, false, true);
  ASSERT_TRUE(link.run());
  ASSERT_TRUE(link.receiving);
  EXPECT_EQ(link.receiving->session_end(), proto::SessionEnd::Settled);
  const fs::path got = bench.dest.path() / "data";
  EXPECT_EQ(read_back(got / "sub/b.txt"), "bee\n");
  EXPECT_TRUE(fs::is_directory(got / "hollow"));
  EXPECT_FALSE(fs::exists(got / "a.bin")) << "not listed";
  EXPECT_EQ(bench.metrics.files(receiver::FileOutcome::Good), 1U);
  struct stat st {};
  ASSERT_EQ(::stat((got / "sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750U);
  EXPECT_EQ(st.st_mtim.tv_sec, 1000000000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 5);
}

TEST(FetchLink, MoreWantsThanTheSendQueueHoldsGoAsTheServerTakesThem) {
  FetchBench bench;
  std::vector<std::string> paths;
  for (int i = 0; i < 60; ++i) {
    const std::string name = "many/f" + std::to_string(i);
    write_file(bench.exported.path() / name, name);
    paths.push_back(name);
  }
  FetchLink link(bench);
  link.fetcher_wire.send_capacity = 20;  // a post beyond it throws, as a full queue does
  link.fetch(paths, false);
  ASSERT_TRUE(link.run());
  EXPECT_EQ(link.receiving->session_end(), proto::SessionEnd::Settled);
  EXPECT_EQ(bench.metrics.files(receiver::FileOutcome::Good), 60U);
  EXPECT_EQ(read_back(bench.dest.path() / "f59"), "many/f59");
}

// -P N: each connection asks for its part of the same request (0x8008), the parts together
// are the whole tree, and the directories' modes and times wait for the end (set deepest first).
TEST(FetchLink, SharesOverTwoConnectionsMakeTheTreeAndDirectoriesWaitForTheEnd) {
  FetchBench bench;
  write_file(bench.exported.path() / "data/sub/c.bin", pattern(5000, 'c'));
  const timespec old_times[2] = {{0, UTIME_OMIT}, {1000000000, 5}};
  for (const char* dir : {"data", "data/sub", "data/hollow"})
    ASSERT_EQ(::utimensat(AT_FDCWD, (bench.exported.path() / dir).c_str(), old_times, 0), 0);
  ASSERT_EQ(::chmod((bench.exported.path() / "data/sub").c_str(), 0750), 0);
  std::vector<receiver::DeferredDirectory> later;
  bench.context.deferred_directories = &later;
  FetchLink first(bench), second(bench);
  first.ask.part = {0, 2};
  second.ask.part = {1, 2};
  first.fetch({"data"}, true);
  second.fetch({"data"}, true);
  ASSERT_TRUE(bench.run_until([&] {
    first.step();
    second.step();
    return first.server_done() && first.fetcher_done() && second.server_done() &&
           second.fetcher_done();
  }));
  for (const FetchLink* link : {&first, &second}) {
    ASSERT_TRUE(link->receiving);
    EXPECT_EQ(link->receiving->session_end(), proto::SessionEnd::Settled);
    EXPECT_GT(link->served->plan().entries.size(), 0U) << "each share holds files";
  }
  const fs::path got = bench.dest.path() / "data";
  EXPECT_EQ(read_back(got / "a.bin"), pattern(10000, 'a'));
  EXPECT_EQ(read_back(got / "sub/c.bin"), pattern(5000, 'c'));
  EXPECT_EQ(read_back(got / "sub/b.txt"), "bee\n");
  EXPECT_TRUE(fs::is_directory(got / "hollow"));
  EXPECT_EQ(bench.metrics.files(receiver::FileOutcome::Good), 4U) << "each file came once";
  std::set<std::string> recorded;
  for (const auto& d : later) recorded.insert(d.path);
  EXPECT_EQ(recorded, (std::set<std::string>{"data", "data/sub", "data/hollow"}));
  struct stat st {};
  ASSERT_EQ(::stat((got / "sub").c_str(), &st), 0);
  EXPECT_NE(st.st_mtim.tv_sec, 1000000000) << "not set while connections still write";
  EXPECT_EQ(receiver::set_deferred_directories(bench.dest.fd(), std::move(later)), 0U);
  for (const char* dir : {"data", "data/sub", "data/hollow"}) {
    ASSERT_EQ(::stat((bench.dest.path() / dir).c_str(), &st), 0) << dir;
    EXPECT_EQ(st.st_mtim.tv_sec, 1000000000) << dir;
    EXPECT_EQ(st.st_mtim.tv_nsec, 5) << dir;
  }
  ASSERT_EQ(::stat((got / "sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750U & ~rdmax::current_umask());
}

// The other role, and what a server of this release takes before the session.
TEST(ServeIntake, APushIsToldItReachedAFetchServer) {
  FetchBench bench;
  FakeTransport wire;
  bool served = false;
  sender::ServeIntake intake(wire, "pusher", bench.serve_context,
                             [&](sender::ServedTree) { served = true; });
  intake.on_established();
  proto::Open open;
  open.entry_count = 1;
  wire.deliver(open, proto::kVersion2);
  intake.poll();
  ASSERT_EQ(wire.sent.size(), 1U);
  const auto* error = std::get_if<proto::Error>(&wire.sent[0].message);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code, proto::ErrorCode::ProtocolViolation);
  EXPECT_TRUE(contains(error->text, "rdma-recv --from")) << error->text;
  EXPECT_TRUE(wire.disconnected || intake.state() == proto::ServeState::Closing);
  EXPECT_FALSE(served);
}

TEST(ServeIntake, AFirstMessageOfAVersionItDoesNotSpeakIsRefusedInVersionOne) {
  FetchBench bench;
  FakeTransport wire;
  sender::ServeIntake intake(wire, "future", bench.serve_context, [](sender::ServedTree) {});
  intake.on_established();
  auto bytes = proto::encode(proto::Fetch{}, proto::kVersion2);
  bytes[4] = 3;  // the header's version (PROTOCOL.md 2): one from a later release
  wire.deliver_bytes(bytes);
  intake.poll();
  ASSERT_EQ(wire.sent.size(), 1U);
  EXPECT_EQ(wire.sent[0].version, proto::kVersion1);
  const auto* reject = std::get_if<proto::Reject>(&wire.sent[0].message);
  ASSERT_NE(reject, nullptr);
  EXPECT_EQ(reject->reason, proto::RejectReason::UnsupportedVersion);
}

TEST(ServeIntake, AKeyedFetchIsRefusedByAServerWithoutKeysWithWords) {
  FetchBench bench;
  FakeTransport wire;
  sender::ServeIntake intake(wire, "fetcher", bench.serve_context, [](sender::ServedTree) {});
  intake.on_established();
  proto::Fetch fetch;
  fetch.extensions.push_back(proto::sender_key_extension(proto::Nonce{}, "reader"));
  wire.deliver(fetch, proto::kVersion2);
  intake.poll();
  ASSERT_EQ(wire.sent.size(), 1U);
  const auto* reject = std::get_if<proto::Reject>(&wire.sent[0].message);
  ASSERT_NE(reject, nullptr);
  EXPECT_EQ(reject->reason, proto::RejectReason::AuthFailed);
  EXPECT_TRUE(contains(reject->text, "lists no keys")) << reject->text;
}

TEST(ServeIntake, AFetcherThatLeavesWhileItsRequestIsWalkedIsReleased) {
  FetchBench bench;
  FakeTransport wire;
  bool served = false;
  sender::ServeIntake intake(wire, "fetcher", bench.serve_context,
                             [&](sender::ServedTree) { served = true; });
  intake.on_established();
  wire.deliver(proto::Fetch{}, proto::kVersion2);
  wire.deliver(proto::Want{true, true, "data"}, proto::kVersion2);
  intake.poll();
  EXPECT_EQ(intake.state(), proto::ServeState::Walking);
  intake.on_disconnected();
  EXPECT_TRUE(intake.closed());
  ASSERT_TRUE(bench.run_until([&] { return intake.reapable(); }));
  EXPECT_FALSE(served) << "a walk that ends after the fetcher left serves nobody";
}

// A session cut short says who cut it and why (rdma-recv --from's exit status: 3 where running
// again may help, 1 where it will not).
TEST(FetchLink, ASessionCutShortSaysWhoCutItAndWhy) {
  FetchBench bench;
  {
    FetchLink stopped(bench);
    stopped.fetch({"data"}, true);
    ASSERT_TRUE(bench.run_until([&] {
      stopped.step();
      return stopped.receiving.has_value();
    }));
    stopped.served->connection().interrupt(SIGTERM);  // the server stops
    ASSERT_TRUE(stopped.run());
    EXPECT_FALSE(stopped.receiving->session_end());
    ASSERT_TRUE(stopped.receiving->cut());
    EXPECT_TRUE(stopped.receiving->cut()->by_peer);
    EXPECT_EQ(stopped.receiving->cut()->code, proto::ErrorCode::ShuttingDown);
  }
  FetchLink broken(bench);
  broken.fetch({"data"}, true);
  ASSERT_TRUE(bench.run_until([&] {
    broken.step();
    return broken.receiving.has_value();
  }));
  broken.fetcher_wire.deliver(proto::Take{0}, proto::kVersion2);  // only a receiver sends it
  ASSERT_TRUE(broken.run());
  ASSERT_TRUE(broken.receiving->cut());
  EXPECT_FALSE(broken.receiving->cut()->by_peer);
  EXPECT_EQ(broken.receiving->cut()->code, proto::ErrorCode::ProtocolViolation);
}

// --- Keys (7.13): the fetcher proves, the server proves back, everything after is sealed ---

constexpr const char* kAliceHex =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
constexpr const char* kBobHex = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

proto::SenderKeyStore readers(const std::string& text) {
  return std::get<proto::SenderKeyStore>(proto::SenderKeyStore::parse(text));
}
proto::SenderKey key_of(const std::string& id, const std::string& hex) {
  return std::get<proto::SenderKey>(proto::parse_key_file(id + " " + hex + "\n"));
}

struct KeyedBench : FetchBench {
  proto::SenderKeyStore store =
      readers(std::string("alice ") + kAliceHex + "\nbob " + kBobHex + " data/sub\n");
  AuthPenalties penalties;
  KeyedBench() {
    serve_context.readers = &store;
    serve_context.penalties = &penalties;
  }
};

TEST(FetchLink, AKeyedFetchIsProvenBothWaysAndNoNameNorByteCrossesInClear) {
  KeyedBench bench;
  FetchLink link(bench);
  const proto::SenderKey alice = key_of("alice", kAliceHex);
  link.ask.key = &alice;
  link.fetch({"data"}, true);
  ASSERT_TRUE(link.run());
  ASSERT_TRUE(link.receiving);
  EXPECT_EQ(link.receiving->session_end(), proto::SessionEnd::Settled);
  EXPECT_EQ(read_back(bench.dest.path() / "data/a.bin"), pattern(10000, 'a'));
  EXPECT_EQ(read_back(bench.dest.path() / "data/sub/b.txt"), "bee\n");
  // In clear: the Fetch and the Proof one way, the Challenge and the Proof the other; then
  // nothing but Sealed messages, the Wants among them.
  const auto& up = link.fetcher_wire.sent;
  ASSERT_GE(up.size(), 3U);
  EXPECT_TRUE(std::holds_alternative<proto::Fetch>(up[0].message));
  EXPECT_TRUE(std::holds_alternative<proto::Proof>(up[1].message));
  for (std::size_t i = 2; i < up.size(); ++i)
    EXPECT_TRUE(std::holds_alternative<proto::Sealed>(up[i].message)) << "message " << i;
  const auto& down = link.server_wire.sent;
  ASSERT_GE(down.size(), 3U);
  EXPECT_TRUE(std::holds_alternative<proto::Challenge>(down[0].message));
  EXPECT_TRUE(std::holds_alternative<proto::Proof>(down[1].message));
  for (std::size_t i = 2; i < down.size(); ++i)
    EXPECT_TRUE(std::holds_alternative<proto::Sealed>(down[i].message)) << "message " << i;
  EXPECT_FALSE(link.wire_holds("data")) << "a path crossed in clear";
  EXPECT_FALSE(link.wire_holds("b.txt")) << "a name crossed in clear";
  EXPECT_FALSE(link.wire_holds(pattern(10000, 'a').substr(4000, 64))) << "file bytes in clear";
  EXPECT_FALSE(link.wire_holds("bee")) << "file bytes in clear";
}

TEST(FetchLink, AFetcherWithoutAKeyIsRefusedBeforeAnyNameIsTaken) {
  KeyedBench bench;
  FetchLink link(bench);
  link.fetch({"data"}, true);
  ASSERT_TRUE(link.run());
  EXPECT_FALSE(link.served);
  EXPECT_EQ(link.fetching->outcome(), proto::SenderOutcome::AuthFailed);
  const auto rejects = link.server_sent<proto::Reject>();
  ASSERT_EQ(rejects.size(), 1U);
  EXPECT_EQ(rejects[0].reason, proto::RejectReason::AuthRequired);
  EXPECT_EQ(link.server_wire.sent.size(), 1U) << "no Challenge, no listing";
  EXPECT_TRUE(fs::is_empty(bench.dest.path()));
}

TEST(FetchLink, AWrongKeyIsRefusedAndItsAddressPenalised) {
  KeyedBench bench;
  FetchLink link(bench);
  const proto::SenderKey forged = key_of("alice", kBobHex);
  link.ask.key = &forged;
  link.fetch({"data"}, true);
  ASSERT_TRUE(link.run());
  EXPECT_FALSE(link.served);
  EXPECT_EQ(link.fetching->outcome(), proto::SenderOutcome::AuthFailed);
  const auto rejects = link.server_sent<proto::Reject>();
  ASSERT_EQ(rejects.size(), 1U);
  EXPECT_EQ(rejects[0].reason, proto::RejectReason::AuthFailed);
  // The fetcher sent its Fetch and its Proof, and not one Want.
  EXPECT_EQ(link.fetcher_wire.sent_of<proto::Want>().size(), 0U);
  EXPECT_EQ(link.fetcher_wire.sent_of<proto::Sealed>().size(), 0U);
  EXPECT_TRUE(fs::is_empty(bench.dest.path()));
}

TEST(FetchLink, AKeyForASubdirectoryFetchesOnlyBeneathIt) {
  KeyedBench bench;
  const proto::SenderKey bob = key_of("bob", kBobHex);
  {
    FetchLink outside(bench);
    outside.ask.key = &bob;
    outside.fetch({"data"}, true);
    ASSERT_TRUE(outside.run());
    EXPECT_FALSE(outside.served);
    EXPECT_EQ(outside.fetching->outcome(), proto::SenderOutcome::AuthFailed);
    EXPECT_TRUE(fs::is_empty(bench.dest.path()));
  }
  FetchLink all_of_it(bench);
  all_of_it.ask.key = &bob;
  all_of_it.fetch({"."}, true);
  ASSERT_TRUE(all_of_it.run());
  ASSERT_TRUE(all_of_it.receiving);
  EXPECT_EQ(read_back(bench.dest.path() / "b.txt"), "bee\n");
  EXPECT_FALSE(fs::exists(bench.dest.path() / "a.bin"));
  EXPECT_FALSE(fs::exists(bench.dest.path() / "data"));
}

TEST(FetchIntake, AServerThatCannotProveOurKeyLearnsNoName) {
  FakeTransport wire;
  FetchCmStandIn cm(wire);
  const proto::SenderKey alice = key_of("alice", kAliceHex);
  receiver::FetchAsk ask;
  ask.wants.push_back({true, true, "secret-project"});
  ask.key = &alice;
  bool received = false;
  receiver::FetchIntake intake(ask, cm, "server", [&] { received = true; });
  intake.start();
  intake.on_setup(proto::SetupEvent::AddressResolved);
  intake.on_setup(proto::SetupEvent::RouteResolved);
  intake.on_established();
  ASSERT_EQ(wire.sent.size(), 1U);
  const auto* fetch = std::get_if<proto::Fetch>(&wire.sent[0].message);
  ASSERT_NE(fetch, nullptr);
  ASSERT_TRUE(proto::sender_key_claim(*fetch));
  EXPECT_EQ(proto::sender_key_claim(*fetch)->id, "alice");
  EXPECT_TRUE(proto::asks_to_seal(*fetch));
  wire.deliver(proto::Challenge{proto::Nonce{1, 2, 3}}, proto::kVersion2);
  intake.poll();
  ASSERT_EQ(wire.sent.size(), 2U);
  EXPECT_TRUE(std::holds_alternative<proto::Proof>(wire.sent[1].message));
  wire.deliver(proto::Proof{proto::Digest{9}}, proto::kVersion2);  // a key it does not hold
  intake.poll();
  EXPECT_EQ(intake.outcome(), proto::SenderOutcome::AuthFailed);
  EXPECT_FALSE(received);
  const auto errors = wire.sent_of<proto::Error>();
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].code, proto::ErrorCode::AuthFailed);
  EXPECT_EQ(wire.sent_of<proto::Want>().size(), 0U);
  EXPECT_EQ(wire.sent_of<proto::Sealed>().size(), 0U);
}

TEST(ServeIntake, AKeyedFetchThatWillNotSealIsRefusedBeforeAnyChallenge) {
  KeyedBench bench;
  FakeTransport wire;
  sender::ServeIntake intake(wire, "fetcher", bench.serve_context, [](sender::ServedTree) {});
  intake.on_established();
  proto::Fetch fetch;
  fetch.extensions.push_back(proto::sender_key_extension(proto::Nonce{}, "alice"));
  wire.deliver(fetch, proto::kVersion2);
  intake.poll();
  ASSERT_EQ(wire.sent.size(), 1U);
  const auto* reject = std::get_if<proto::Reject>(&wire.sent[0].message);
  ASSERT_NE(reject, nullptr);
  EXPECT_EQ(reject->reason, proto::RejectReason::SealRequired);
}

}  // namespace
}  // namespace rdmax::test
