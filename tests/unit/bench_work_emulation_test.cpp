// rdmax-pipeline-bench --emulate-cores (tests/bench/work_emulation.hpp): a job's work becomes
// a wait of its measured length, on at most N emulated cores at once; the stand-in hashing
// waits per chunk on the real tree's queues and gives a digest both sides agree on.
#include "tests/bench/work_emulation.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string_view>
#include <thread>
#include <vector>

#include "common/digest/sha256.hpp"
#include "driver_harness.hpp"

namespace rdmax::bench {
namespace work_emulation_test {

using Clock = std::chrono::steady_clock;
using test::run_pool_until;

TEST(WorkEmulation, AJobWaitsItsLengthOnOneOfTheCores) {
  // 1 ns per byte: 20 MB is a wait of 20 ms. Four jobs on two cores take two rounds.
  EmulatedCores cores(2, {1e-9, 2e-9, 0});
  const auto begin = Clock::now();
  std::vector<std::thread> jobs;
  for (int i = 0; i < 4; ++i) jobs.emplace_back([&] { cores.work(Work::Hash, 20'000'000); });
  for (auto& j : jobs) j.join();
  const auto took = Clock::now() - begin;
  EXPECT_GE(took, std::chrono::milliseconds(40)) << "two rounds of 20 ms on two cores";
  EXPECT_LT(took, std::chrono::milliseconds(2000));
  // Each kind has its own cost: a read of 10 MB at 2 ns per byte waits 20 ms, and the
  // stand-in read is that wait.
  EmulatedCores one(1, {0, 2e-9, 0});
  std::vector<std::uint8_t> into(10'000'000, 0x5a);
  const auto read_begin = Clock::now();
  one.read()(-1, into, 0);
  EXPECT_GE(Clock::now() - read_begin, std::chrono::milliseconds(20));
  EXPECT_EQ(into.front(), 0x5a) << "nothing is read";
}

// Each chunk's hash is a wait on one of the pool's "hashing: a file's tree" queues, so that
// the stage's CPU is counted where the real tree's is; the digest is the size's, whatever the
// algorithm and the bytes, on both sides alike, and all zero after a gap.
TEST(WorkEmulation, TheStandInHasherWaitsOnTheTreesQueuesAndAgreesOnADigest) {
  EmulatedCores cores(2, {1e-9, 0, 0});
  const FileHashing hashing = cores.hashing();
  WorkPool pool{2};
  const std::vector<std::uint8_t> a(3 << 20, 1), b(3 << 20, 2);
  auto hash_all = [&](proto::DigestAlgorithm algorithm, const std::vector<std::uint8_t>& bytes) {
    auto hasher = hashing.make(pool, algorithm, bytes.size());
    std::size_t done = 0;
    constexpr std::size_t kChunk = 1 << 20;
    for (std::size_t offset = 0; offset < bytes.size(); offset += kChunk) {
      hasher->hash(offset, std::span(bytes).subspan(offset, kChunk),
                   [&](std::vector<merkle::Node> nodes, const std::string& error) {
                     EXPECT_TRUE(nodes.empty());
                     EXPECT_EQ(error, "");
                     ++done;
                   });
    }
    EXPECT_TRUE(run_pool_until(pool, [&] { return done == 3 && hasher->idle(); }));
    hasher->fold({});
    return hasher->finish(bytes.size());
  };
  const std::uint64_t size = a.size();
  Sha256 of_size;
  of_size.update({reinterpret_cast<const std::uint8_t*>(&size), sizeof size});
  const Digest expected = of_size.finish();
  EXPECT_EQ(hash_all(proto::DigestAlgorithm::FsVeritySha256, a), expected);
  EXPECT_EQ(hash_all(proto::DigestAlgorithm::Blake3, b), expected);
  EXPECT_EQ(hash_all(proto::DigestAlgorithm::WholeFileSha256, a), expected);
  std::map<std::string_view, std::size_t> queues;
  for (const auto& stage : pool.stage_costs()) queues[stage.stage] = stage.queues;
  EXPECT_EQ(queues, (std::map<std::string_view, std::size_t>{{"hashing: a file's tree", 6}}))
      << "one queue per pool thread, for each of the three files";

  auto gapped = hashing.make(pool, proto::DigestAlgorithm::FsVeritySha256, size);
  gapped->gap();
  EXPECT_EQ(gapped->finish(size), Digest{});
  // A job that has the chunk anyway (the sender's sealed read) gets a wait, and no nodes.
  std::vector<merkle::Node> nodes;
  hashing.chunk_nodes(proto::DigestAlgorithm::Blake3, size)(0, a, nodes);
  EXPECT_TRUE(nodes.empty());
}

}  // namespace work_emulation_test
}  // namespace rdmax::bench
