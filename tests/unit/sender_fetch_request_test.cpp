// A fetch server's side of a request (PROTOCOL.md 7.13): the Wants gathered, the key's
// subdirectory kept to, the share cut as --shard cuts a push, and every refusal's reason.

#include "protocol/fetch_part.hpp"
#include "sender/fetch_request.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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
  // The refusal of `paths` under `subdir`, whether at a Want (a name's form, the key) or at
  // the walk.
  proto::Reject refused(const std::vector<std::string>& paths, const std::string& subdir = "") {
    FetchRequest request(proto::Fetch{}, subdir);
    if (auto at_want = ask(request, paths)) return *at_want;
    return refusal(request);
  }
  // Reads the file `path` beneath `root`: its bytes.
  static std::string read_beneath(int root, const std::string& path) {
    const Fd fd = open_file_beneath(root, path, O_RDONLY);
    char bytes[16] = {};
    const ssize_t got = ::read(fd.get(), bytes, sizeof bytes);
    return std::string(bytes, got > 0 ? static_cast<std::size_t>(got) : 0);
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
  EXPECT_EQ(read_beneath(got.root.get(), got.tree.files[1].local_path), "abc");
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

// -P N (0x8008): a connection's part is cut from its share by the same rule, so the parts of
// one share are that share, file for file, whatever N is.
TEST_F(FetchRequestTest, APartOfAShareIsCutFromThatShare) {
  const auto files_of = [&](std::uint32_t index, std::uint32_t count, proto::FetchPart part) {
    proto::Fetch fetch{0, index, count, {}};
    if (part.count > 1) fetch.extensions.push_back(proto::fetch_part_extension(part));
    FetchRequest request(fetch, "");
    EXPECT_EQ(ask(request, {"."}), std::nullopt);
    const auto files = arrivals_of(served(request).tree.files);
    return std::multiset<std::string>(files.begin(), files.end());
  };
  for (std::uint32_t share = 0; share < 2; ++share) {
    const auto whole = files_of(share, 2, {});
    ASSERT_FALSE(whole.empty());
    for (std::uint32_t parts : {2U, 3U}) {
      std::multiset<std::string> together;
      for (std::uint32_t part = 0; part < parts; ++part)
        together.merge(files_of(share, 2, {part, parts}));
      EXPECT_EQ(together, whole) << "share " << share << " in " << parts << " parts";
    }
  }
  EXPECT_EQ(files_of(0, 1, {0, 2}).size() + files_of(0, 1, {1, 2}).size(), 5U);
}

TEST_F(FetchRequestTest, AKeysSubdirectoryIsAllItMayFetch) {
  FetchRequest outside(proto::Fetch{}, "alice");
  const auto at_want = outside.add(proto::Want{true, true, "bob/x.bin"});
  ASSERT_TRUE(at_want.has_value());
  EXPECT_EQ(at_want->reason, RejectReason::AuthFailed);
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
  EXPECT_EQ(read_beneath(got.root.get(), "notes.txt"), "n");

  // The subdirectory itself, with or without its slash, arrives under its own name.
  for (const std::string path : {"alice", "alice/"}) {
    FetchRequest itself(proto::Fetch{}, "alice");
    ASSERT_EQ(ask(itself, {path}), std::nullopt) << path;
    EXPECT_EQ(served(itself).tree.files.size(), 3U) << path;
  }

  // No name climbs out of it or stays in place, and "." stands alone there too.
  EXPECT_EQ(refused({"alice/../bob/x.bin"}, "alice").reason, RejectReason::BadName);
  EXPECT_EQ(refused({"alice/./notes.txt"}, "alice").reason, RejectReason::BadName);
  EXPECT_EQ(refused({".", "alice/notes.txt"}, "alice").reason, RejectReason::BadName);
  EXPECT_EQ(refused({"."}, "carol").reason, RejectReason::BadName);  // not in the export
}

TEST_F(FetchRequestTest, WhatCannotBeServedIsRefusedByName) {
  for (const auto& [paths, text] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"none.bin"}, "no such file or directory in the export"},
           {{"fifo"}, "not a regular file or a directory"},
           {{"../etc/passwd"}, "not a name within the export"},
           {{"/etc/passwd"}, "not a name within the export"},
           {{"top.txt", "a//b"}, "not a name within the export"},
           {{".", "top.txt"}, "name it alone"},
       }) {
    const proto::Reject reject = refused(paths);
    EXPECT_EQ(reject.reason, RejectReason::BadName) << paths[0];
    EXPECT_NE(reject.text.find(text), std::string::npos) << reject.text;
  }
  FetchRequest flat(proto::Fetch{}, "");
  ASSERT_EQ(flat.add(proto::Want{true, false, "bob"}), std::nullopt);
  EXPECT_NE(refusal(flat).text.find("fetch directories with -r"), std::string::npos);
  // A text never outgrows a Reject.
  const proto::Reject long_name = refused({std::string(2000, 'n')});
  EXPECT_EQ(long_name.text.size(), proto::kMaxTextBytes);
  EXPECT_FALSE(proto::encode(long_name, proto::kVersion2).empty());
}

TEST_F(FetchRequestTest, MoreWantsThanTheLimitAreRefused) {
  FetchRequest request(proto::Fetch{}, "");
  for (std::uint32_t i = 0; i < proto::kMaxWants; ++i)
    ASSERT_EQ(request.add(proto::Want{false, false, "f"}), std::nullopt);
  const auto too_many = request.add(proto::Want{true, false, "f"});
  ASSERT_TRUE(too_many.has_value());
  EXPECT_EQ(too_many->reason, RejectReason::TooLarge);
  // And their bytes: what the server holds until the last Want stays bounded.
  FetchRequest long_paths(proto::Fetch{}, "");
  std::string path(200, 'p');  // ten names of 200 bytes: 2009, a long path by the rules
  for (int i = 1; i < 10; ++i) path += "/" + std::string(200, 'p');
  for (std::uint64_t held = 0; held + path.size() <= proto::kMaxWantBytes; held += path.size())
    ASSERT_EQ(long_paths.add(proto::Want{false, false, path}), std::nullopt);
  const auto too_big = long_paths.add(proto::Want{true, false, path});
  ASSERT_TRUE(too_big.has_value());
  EXPECT_EQ(too_big->reason, RejectReason::TooLarge);
}

TEST(FetchChecks, AMustUnderstandExtensionInAFetchIsRefused) {
  proto::Fetch fetch;
  fetch.extensions.push_back({proto::kExtensionSeal, std::string(1, '\x01')});
  EXPECT_EQ(check_fetch(fetch), std::nullopt);
  fetch.extensions.push_back(proto::fetch_part_extension({1, 2}));  // known: applied
  EXPECT_EQ(check_fetch(fetch), std::nullopt);
  fetch.extensions.push_back({proto::kExtensionDigestAtEnd, ""});
  const auto refused = check_fetch(fetch);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->reason, RejectReason::UnsupportedVersion);
}

}  // namespace
}  // namespace rdmax::sender
