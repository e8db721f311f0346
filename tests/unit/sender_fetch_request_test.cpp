// A fetch server's side of a request (PROTOCOL.md 7.13): the Wants gathered, the key's
// subdirectory kept to, the share cut as --shard cuts a push, and every refusal's reason.

#include "sender/fetch_request.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/os/beneath.hpp"
#include "tests/unit/temp_dir.hpp"

namespace rdmax::sender {
namespace {

namespace fs = std::filesystem;
using proto::RejectReason;

std::vector<std::string> arrivals_of(const std::vector<SourceEntry>& entries) {
  std::vector<std::string> paths;
  for (const SourceEntry& e : entries) paths.push_back(e.remote_path);
  return paths;
}

class FetchRequestTest : public ::testing::Test {
 protected:
  // export/: alice/data/{a.bin (3 bytes), b.bin (5)}  alice/notes.txt  bob/x.bin  fifo  top.txt
  void SetUp() override {
    const fs::path root = export_.path();
    fs::create_directories(root / "alice" / "data");
    fs::create_directories(root / "bob");
    put(root / "alice" / "data" / "a.bin", "abc");
    put(root / "alice" / "data" / "b.bin", "hello");
    put(root / "alice" / "notes.txt", "n");
    put(root / "bob" / "x.bin", "x");
    put(root / "top.txt", "top");
    ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0600), 0);
  }
  static void put(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  // A request of `paths` (each recursive), the last one marked so; the first refusal, if any.
  static std::optional<proto::Reject> ask(FetchRequest& request,
                                          const std::vector<std::string>& paths) {
    for (std::size_t i = 0; i < paths.size(); ++i)
      if (auto refused = request.add(proto::Want{i + 1 == paths.size(), true, paths[i]}))
        return refused;
    return std::nullopt;
  }
  ServedTree served(const FetchRequest& request) {
    auto result = request.resolve(export_.fd());
    if (auto* reject = std::get_if<proto::Reject>(&result)) {
      ADD_FAILURE() << "refused: " << reject->text;
      return {};
    }
    return std::move(std::get<ServedTree>(result));
  }
  proto::Reject refusal(const FetchRequest& request) {
    auto result = request.resolve(export_.fd());
    if (auto* reject = std::get_if<proto::Reject>(&result)) return *reject;
    ADD_FAILURE() << "served";
    return {};
  }

  TempDir export_{"rdmax-export"};
};

TEST_F(FetchRequestTest, TheWantsAreGatheredUntilTheLastAndWalked) {
  FetchRequest request(proto::Fetch{}, "");
  EXPECT_EQ(request.add(proto::Want{false, false, "top.txt"}), std::nullopt);
  EXPECT_FALSE(request.whole());
  EXPECT_EQ(request.add(proto::Want{true, true, "alice/data/"}), std::nullopt);
  EXPECT_TRUE(request.whole());
  const ServedTree got = served(request);
  EXPECT_EQ(arrivals_of(got.tree.files),
            (std::vector<std::string>{"top.txt", "data/a.bin", "data/b.bin"}));
  EXPECT_EQ(arrivals_of(got.tree.directories), (std::vector<std::string>{"data"}));
  EXPECT_EQ(got.tree.total_bytes, 11U);
  // The entries are read beneath the root the answer names.
  EXPECT_TRUE(open_file_beneath(got.root.get(), got.tree.files[1].local_path, O_RDONLY));
}

TEST_F(FetchRequestTest, SharesCutTheRequestSoThatEachFileGoesOnce) {
  std::multiset<std::string> fetched;
  std::set<std::string> directories;
  for (std::uint32_t index = 0; index < 3; ++index) {
    FetchRequest request(proto::Fetch{0, index, 3, {}}, "");
    ASSERT_EQ(ask(request, {"."}), std::nullopt);
    const ServedTree got = served(request);
    for (const auto& path : arrivals_of(got.tree.files)) fetched.insert(path);
    for (const auto& path : arrivals_of(got.tree.directories)) directories.insert(path);
  }
  EXPECT_EQ(fetched, (std::multiset<std::string>{"alice/data/a.bin", "alice/data/b.bin",
                                                 "alice/notes.txt", "bob/x.bin", "top.txt"}));
  EXPECT_EQ(directories, (std::set<std::string>{"alice", "alice/data", "bob"}));
}

TEST_F(FetchRequestTest, AKeysSubdirectoryIsAllItMayFetch) {
  FetchRequest outside(proto::Fetch{}, "alice");
  const auto refused = outside.add(proto::Want{true, true, "bob/x.bin"});
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->reason, RejectReason::AuthFailed);
  // The same answer whether or not the path exists, and for a name that only starts alike.
  FetchRequest absent(proto::Fetch{}, "alice");
  EXPECT_EQ(absent.add(proto::Want{true, true, "nobody/none"})->reason, RejectReason::AuthFailed);
  FetchRequest alike(proto::Fetch{}, "alice");
  EXPECT_EQ(alike.add(proto::Want{true, true, "alicex/y"})->reason, RejectReason::AuthFailed);

  FetchRequest beneath(proto::Fetch{}, "alice");
  ASSERT_EQ(ask(beneath, {"alice/data"}), std::nullopt);
  EXPECT_EQ(arrivals_of(served(beneath).tree.files),
            (std::vector<std::string>{"data/a.bin", "data/b.bin"}));

  // "." is the subdirectory, whose entries arrive as their own names, read beneath it.
  FetchRequest all(proto::Fetch{}, "alice");
  ASSERT_EQ(ask(all, {"."}), std::nullopt);
  const ServedTree got = served(all);
  EXPECT_EQ(arrivals_of(got.tree.files),
            (std::vector<std::string>{"data/a.bin", "data/b.bin", "notes.txt"}));
  EXPECT_TRUE(open_file_beneath(got.root.get(), "notes.txt", O_RDONLY));

  // ".." cannot climb out of it either: the walk refuses the name.
  FetchRequest climbing(proto::Fetch{}, "alice");
  ASSERT_EQ(ask(climbing, {"alice/../bob/x.bin"}), std::nullopt);
  EXPECT_EQ(refusal(climbing).reason, RejectReason::BadName);

  FetchRequest missing(proto::Fetch{}, "carol");
  ASSERT_EQ(ask(missing, {"."}), std::nullopt);
  EXPECT_EQ(refusal(missing).reason, RejectReason::BadName);
}

TEST_F(FetchRequestTest, WhatCannotBeServedIsRefusedByName) {
  const auto refused_for = [&](const std::vector<std::string>& paths) {
    FetchRequest request(proto::Fetch{}, "");
    EXPECT_EQ(ask(request, paths), std::nullopt);
    return refusal(request);
  };
  for (const auto& [paths, text] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"none.bin"}, "no such file or directory in the export"},
           {{"fifo"}, "not a regular file or a directory"},
           {{"../etc/passwd"}, "not a name within the export"},
           {{"/etc/passwd"}, "not a name within the export"},
           {{".", "top.txt"}, "name it alone"},
       }) {
    const proto::Reject reject = refused_for(paths);
    EXPECT_EQ(reject.reason, RejectReason::BadName) << paths[0];
    EXPECT_NE(reject.text.find(text), std::string::npos) << reject.text;
  }
  FetchRequest flat(proto::Fetch{}, "");
  ASSERT_EQ(flat.add(proto::Want{true, false, "bob"}), std::nullopt);
  EXPECT_NE(refusal(flat).text.find("fetch directories with -r"), std::string::npos);
  // A text never outgrows a Reject.
  const proto::Reject long_name = refused_for({std::string(2000, 'n')});
  EXPECT_EQ(long_name.text.size(), proto::kMaxTextBytes);
  EXPECT_FALSE(proto::encode(long_name, proto::kVersion2).empty());
}

TEST_F(FetchRequestTest, MoreWantsThanTheLimitAreRefused) {
  FetchRequest request(proto::Fetch{}, "");
  for (std::uint32_t i = 0; i < proto::kMaxWants; ++i)
    ASSERT_EQ(request.add(proto::Want{false, false, "f"}), std::nullopt);
  const auto refused = request.add(proto::Want{true, false, "f"});
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->reason, RejectReason::TooLarge);
}

TEST(FetchChecks, AMustUnderstandExtensionInAFetchIsRefused) {
  proto::Fetch fetch;
  fetch.extensions.push_back({proto::kExtensionSeal, std::string(1, '\x01')});
  EXPECT_EQ(check_fetch(fetch), std::nullopt);
  fetch.extensions.push_back({proto::kExtensionDigestAtEnd, ""});
  const auto refused = check_fetch(fetch);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->reason, RejectReason::UnsupportedVersion);
}

}  // namespace
}  // namespace rdmax::sender
