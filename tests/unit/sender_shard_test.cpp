// --shard (sender/shard.hpp): the partition of a tree's files among N processes, and I and N
// from the command line or a launcher's environment.

#include "sender/shard.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace rdmax::sender {
namespace shard_test {

using Kind = SourceEntry::Kind;

SourceEntry file(std::string path, std::uint64_t size) {
  SourceEntry e;
  e.kind = Kind::File;
  e.local_path = "/src/" + path;
  e.remote_path = std::move(path);
  e.size = size;
  return e;
}

SourceEntry directory(std::string path) {
  SourceEntry e;
  e.kind = Kind::Directory;
  e.local_path = "/src/" + path;
  e.remote_path = std::move(path);
  return e;
}

// A skewed tree: a few large files, many small ones, sizes from a seeded generator.
std::vector<SourceEntry> skewed_files(unsigned seed, std::size_t count) {
  std::mt19937_64 random(seed);
  std::vector<SourceEntry> files;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t size = random() % 4096;
    if (i % 50 == 0) size = 1 + random() % (64ull << 20);  // 2% large
    if (i % 7 == 0) size = 0;                              // and empty ones
    files.push_back(file("d" + std::to_string(i % 13) + "/f" + std::to_string(i), size));
  }
  return files;
}

std::vector<std::uint64_t> loads(const std::vector<SourceEntry>& files,
                                 const std::vector<std::uint32_t>& shard, std::uint32_t count) {
  std::vector<std::uint64_t> bytes(count, 0);
  for (std::size_t i = 0; i < files.size(); ++i) bytes.at(shard[i]) += files[i].size;
  return bytes;
}

// --- the partition ---

TEST(Shard, EveryFileGoesToExactlyOneShardInRange) {
  const auto files = skewed_files(1, 1000);
  for (std::uint32_t n : {1u, 2u, 3u, 4u, 7u, 64u, 2000u}) {
    SCOPED_TRACE(n);
    const auto shard = assign_shards(files, n);
    ASSERT_EQ(shard.size(), files.size());
    for (auto s : shard) EXPECT_LT(s, n);
    // select_shard over every I gives each file once.
    SourceTree tree;
    tree.files = files;
    std::multiset<std::string> seen;
    for (std::uint32_t i = 0; i < n; ++i)
      for (const auto& f : select_shard(tree, {i, n}).files) seen.insert(f.remote_path);
    EXPECT_EQ(seen.size(), files.size());
    for (const auto& f : files) EXPECT_EQ(seen.count(f.remote_path), 1u) << f.remote_path;
  }
}

TEST(Shard, ThePartitionDependsOnTheTreeNotOnTheOrderItWasFound) {
  auto files = skewed_files(2, 500);
  const auto first = assign_shards(files, 5);
  EXPECT_EQ(assign_shards(files, 5), first);  // the same run again
  std::map<std::string, std::uint32_t> by_path;
  for (std::size_t i = 0; i < files.size(); ++i) by_path[files[i].remote_path] = first[i];
  std::mt19937 random(3);
  std::shuffle(files.begin(), files.end(), random);
  const auto shuffled = assign_shards(files, 5);
  for (std::size_t i = 0; i < files.size(); ++i)
    EXPECT_EQ(shuffled[i], by_path[files[i].remote_path]) << files[i].remote_path;
}

TEST(Shard, EqualSizesAreSettledByThePathNotByPosition) {
  // Four files of one size over two shards: by path order a, b, c, d -> 0, 1, 0, 1.
  std::vector<SourceEntry> files{file("d", 10), file("b", 10), file("a", 10), file("c", 10)};
  EXPECT_EQ(assign_shards(files, 2), (std::vector<std::uint32_t>{1, 1, 0, 0}));
}

TEST(Shard, BytesAreBalancedOnSkewedTrees) {
  for (unsigned seed : {4u, 5u, 6u}) {
    const auto files = skewed_files(seed, 2000);
    std::uint64_t largest = 0;
    for (const auto& f : files) largest = std::max(largest, f.size);
    for (std::uint32_t n : {2u, 4u, 8u}) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << ", " << n << " shards");
      const auto bytes = loads(files, assign_shards(files, n), n);
      const auto [low, high] = std::minmax_element(bytes.begin(), bytes.end());
      // Greedy largest-first: no shard is ahead of another by more than its last file, the
      // per-file cost included.
      EXPECT_LE(*high - *low, largest + files.size() * kShardFileCost);
      // And on these trees, within 20% of each other (issue 24's measure).
      EXPECT_LE(static_cast<double>(*high), 1.2 * static_cast<double>(*low));
    }
  }
}

TEST(Shard, OneHugeFileIsAShardOfItsOwn) {
  std::vector<SourceEntry> files{file("huge", 1'000'000'000), file("a", 1'000'000),
                                 file("b", 1'000'000), file("c", 1'000'000)};
  const auto shard = assign_shards(files, 2);
  EXPECT_EQ(shard[0], 0u);
  EXPECT_EQ(shard[1], 1u);
  EXPECT_EQ(shard[2], 1u);
  EXPECT_EQ(shard[3], 1u);
}

TEST(Shard, ManyEmptyFilesAreSpreadByTheirCount) {
  std::vector<SourceEntry> files;
  for (int i = 0; i < 100; ++i) files.push_back(file("e" + std::to_string(i), 0));
  const auto shard = assign_shards(files, 4);
  std::vector<int> count(4, 0);
  for (auto s : shard) ++count[s];
  EXPECT_EQ(count, (std::vector<int>{25, 25, 25, 25}));
}

TEST(Shard, OneShardIsTheWholeTree) {
  SourceTree tree;
  tree.files = skewed_files(7, 50);
  tree.directories = {directory("d1"), directory("empty")};
  tree.skipped = {{"/src/link", "symbolic link"}};
  tree.total_bytes = 1234;
  const SourceTree all = select_shard(tree, {0, 1});
  EXPECT_EQ(all.files.size(), tree.files.size());
  EXPECT_EQ(all.directories.size(), 2u);
  EXPECT_EQ(all.skipped.size(), 1u);
  EXPECT_EQ(all.total_bytes, 1234u);
}

TEST(Shard, EachShardCarriesTheDirectoriesItsFilesNeedAndShardZeroTheEmptyOnes) {
  SourceTree tree;
  tree.files = {file("top/a/big", 1000), file("top/b/small", 10), file("top/b/c/tiny", 5)};
  // Deepest first, as the walk gives them.
  tree.directories = {directory("top/b/c"), directory("top/a"), directory("top/b"),
                      directory("top/empty"), directory("top")};
  tree.skipped = {{"/src/top/link", "symbolic link"}};
  const SourceTree zero = select_shard(tree, {0, 2});
  const SourceTree one = select_shard(tree, {1, 2});
  auto paths = [](const std::vector<SourceEntry>& entries) {
    std::vector<std::string> out;
    for (const auto& e : entries) out.push_back(e.remote_path);
    return out;
  };
  EXPECT_EQ(paths(zero.files), (std::vector<std::string>{"top/a/big"}));
  EXPECT_EQ(paths(zero.directories), (std::vector<std::string>{"top/a", "top/empty", "top"}));
  EXPECT_EQ(zero.total_bytes, 1000u);
  EXPECT_EQ(zero.skipped.size(), 1u);
  EXPECT_EQ(paths(one.files), (std::vector<std::string>{"top/b/small", "top/b/c/tiny"}));
  EXPECT_EQ(paths(one.directories), (std::vector<std::string>{"top/b/c", "top/b", "top"}));
  EXPECT_EQ(one.total_bytes, 15u);
  EXPECT_TRUE(one.skipped.empty());  // said once, by shard 0
}

TEST(Shard, AShardWithNoFileIsEmptyNotAnError) {
  SourceTree tree;
  tree.files = {file("only", 10)};
  const SourceTree other = select_shard(tree, {2, 3});
  EXPECT_TRUE(other.files.empty());
  EXPECT_TRUE(other.directories.empty());
}

// --- I and N ---

EnvironmentLookup env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

ShardSpec parsed(std::string_view text, const EnvironmentLookup& e = env({})) {
  auto result = parse_shard(text, e);
  if (const auto* error = std::get_if<std::string>(&result)) {
    ADD_FAILURE() << text << ": " << *error;
    return {};
  }
  return std::get<ShardSpec>(result);
}

std::string error_of(std::string_view text, const EnvironmentLookup& e = env({})) {
  auto result = parse_shard(text, e);
  if (std::holds_alternative<ShardSpec>(result)) {
    ADD_FAILURE() << text << " parsed";
    return {};
  }
  return std::get<std::string>(result);
}

TEST(ShardSpecParse, IOverN) {
  EXPECT_EQ(parsed("0/1"), (ShardSpec{0, 1}));
  EXPECT_EQ(parsed("3/4"), (ShardSpec{3, 4}));
  EXPECT_EQ(parsed("999999/1000000"), (ShardSpec{999999, 1000000}));
}

TEST(ShardSpecParse, BadIOverNIsAUsageErrorSayingWhy) {
  EXPECT_NE(error_of("4/4").find("there is no shard 4 of 4"), std::string::npos);
  EXPECT_NE(error_of("5/4").find("I counts from 0 to N-1"), std::string::npos);
  EXPECT_NE(error_of("0/0").find("N is 0"), std::string::npos);
  EXPECT_NE(error_of("0/1000001").find("more than"), std::string::npos);
  for (const char* bad : {"", "1", "/4", "1/", "-1/4", "1/+4", " 1/4", "1/4 ", "0x1/4", "a/b",
                          "1/2/3", "99999999999/4", "auto/", "auto/x", "autox", "AUTO"}) {
    EXPECT_FALSE(error_of(bad).empty()) << bad;
  }
}

TEST(ShardSpecParse, AutoReadsEachLauncher) {
  EXPECT_EQ(parsed("auto", env({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "8"}})), (ShardSpec{2, 8}));
  EXPECT_EQ(parsed("auto", env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}})),
            (ShardSpec{1, 4}));
  EXPECT_EQ(parsed("auto", env({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}})), (ShardSpec{0, 2}));
  EXPECT_EQ(parsed("auto/6", env({{"JOB_COMPLETION_INDEX", "5"}})), (ShardSpec{5, 6}));
}

TEST(ShardSpecParse, LaunchersThatAgreeAreFine) {
  // srun --mpi=pmi2 sets both Slurm's and PMI's.
  EXPECT_EQ(parsed("auto", env({{"SLURM_PROCID", "3"},
                                {"SLURM_NTASKS", "4"},
                                {"PMI_RANK", "3"},
                                {"PMI_SIZE", "4"}})),
            (ShardSpec{3, 4}));
  EXPECT_EQ(parsed("auto/4", env({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}})),
            (ShardSpec{3, 4}));
}

TEST(ShardSpecParse, AMissingEnvironmentNamesEveryVariableLookedFor) {
  const std::string error = error_of("auto", env({{"HOME", "/root"}}));
  for (const char* var : {"SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "JOB_COMPLETION_INDEX"}) {
    EXPECT_NE(error.find(var), std::string::npos) << var << " in: " << error;
  }
  EXPECT_NE(error_of("auto/4").find("JOB_COMPLETION_INDEX"), std::string::npos);
}

TEST(ShardSpecParse, AContradictoryEnvironmentIsAnError) {
  // Half a pair.
  EXPECT_NE(error_of("auto", env({{"SLURM_PROCID", "0"}})).find("SLURM_NTASKS is not"),
            std::string::npos);
  EXPECT_NE(
      error_of("auto", env({{"OMPI_COMM_WORLD_SIZE", "4"}})).find("OMPI_COMM_WORLD_RANK is not"),
      std::string::npos);
  // Two launchers disagreeing (mpirun inside a Slurm job step: rank 0 of Slurm's 1 task).
  const std::string disagree = error_of("auto", env({{"SLURM_PROCID", "0"},
                                                     {"SLURM_NTASKS", "1"},
                                                     {"OMPI_COMM_WORLD_RANK", "2"},
                                                     {"OMPI_COMM_WORLD_SIZE", "4"}}));
  EXPECT_NE(disagree.find("disagree"), std::string::npos) << disagree;
  EXPECT_NE(disagree.find("OMPI_COMM_WORLD_RANK=2"), std::string::npos) << disagree;
  // Not numbers, rank >= size, size 0.
  EXPECT_NE(error_of("auto", env({{"PMI_RANK", "x"}, {"PMI_SIZE", "4"}})).find("not a whole"),
            std::string::npos);
  EXPECT_NE(error_of("auto", env({{"PMI_RANK", ""}, {"PMI_SIZE", "4"}})).find("not a whole"),
            std::string::npos);
  EXPECT_NE(error_of("auto", env({{"PMI_RANK", "4"}, {"PMI_SIZE", "4"}})).find("no shard 4"),
            std::string::npos);
  EXPECT_NE(error_of("auto", env({{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}})).find("N is 0"),
            std::string::npos);
  // The index of an Indexed Job without N, or beyond it; N given and a launcher's other N.
  EXPECT_NE(error_of("auto", env({{"JOB_COMPLETION_INDEX", "1"}})).find("auto/N"),
            std::string::npos);
  EXPECT_NE(error_of("auto/2", env({{"JOB_COMPLETION_INDEX", "2"}})).find("no shard 2 of 2"),
            std::string::npos);
  EXPECT_NE(
      error_of("auto/4", env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}})).find("says 1/2"),
      std::string::npos);
  EXPECT_NE(error_of("auto/0", env({{"JOB_COMPLETION_INDEX", "0"}})).find("N is 0"),
            std::string::npos);
}

}  // namespace shard_test
}  // namespace rdmax::sender
