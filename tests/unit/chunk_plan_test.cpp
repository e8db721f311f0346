#include "protocol/chunk_plan.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace {

using rdmax::proto::ChunkPlan;

constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();

// Usable at compile time, e.g. for static buffer sizing.
static_assert(ChunkPlan{10, 4}.chunk_count() == 3);
static_assert(ChunkPlan{10, 4}.length(2) == 2);

TEST(ChunkPlan, EmptyFileHasNoChunks) {
  const ChunkPlan plan{0, 4096};
  EXPECT_EQ(plan.chunk_count(), 0U);
  EXPECT_EQ(plan.length(0), 0U);
}

TEST(ChunkPlan, ExactMultiple) {
  const ChunkPlan plan{3 * 4096, 4096};
  ASSERT_EQ(plan.chunk_count(), 3U);
  for (std::uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(plan.offset(i), i * 4096);
    EXPECT_EQ(plan.length(i), 4096U);
  }
  EXPECT_EQ(plan.length(3), 0U);
}

TEST(ChunkPlan, RemainderMakesAShortLastChunk) {
  const ChunkPlan plan{3 * 4096 + 5, 4096};
  ASSERT_EQ(plan.chunk_count(), 4U);
  EXPECT_EQ(plan.offset(3), 3U * 4096);
  EXPECT_EQ(plan.length(3), 5U);
  EXPECT_EQ(plan.length(2), 4096U);
}

TEST(ChunkPlan, FileSmallerThanOneChunk) {
  const ChunkPlan plan{1, 1 << 20};
  ASSERT_EQ(plan.chunk_count(), 1U);
  EXPECT_EQ(plan.offset(0), 0U);
  EXPECT_EQ(plan.length(0), 1U);
}

TEST(ChunkPlan, ChunksTileTheFile) {
  for (std::uint64_t size : {1ULL, 4095ULL, 4096ULL, 4097ULL, 100000ULL}) {
    const ChunkPlan plan{size, 4096};
    std::uint64_t next = 0;
    for (std::uint64_t i = 0; i < plan.chunk_count(); ++i) {
      EXPECT_EQ(plan.offset(i), next);
      EXPECT_GT(plan.length(i), 0U);
      next += plan.length(i);
    }
    EXPECT_EQ(next, size);
  }
}

TEST(ChunkPlan, HugeSizesDoNotOverflow) {
  const ChunkPlan plan{UINT64_MAX, kU32Max};
  const std::uint64_t full = UINT64_MAX / kU32Max;  // 2^32 + 1 full chunks, no remainder
  ASSERT_EQ(plan.chunk_count(), full);
  EXPECT_EQ(plan.offset(full - 1), (full - 1) * kU32Max);
  EXPECT_EQ(plan.length(full - 1), kU32Max);

  const ChunkPlan odd{UINT64_MAX, 1 << 20};
  ASSERT_EQ(odd.chunk_count(), (UINT64_MAX >> 20) + 1);
  const std::uint64_t last = odd.chunk_count() - 1;
  EXPECT_EQ(odd.offset(last), last << 20);
  EXPECT_EQ(odd.length(last), (1U << 20) - 1);
  EXPECT_EQ(odd.offset(last) + odd.length(last), UINT64_MAX);
}

TEST(ChunkPlan, ZeroChunkSizeIsAnEmptyPlan) {
  const ChunkPlan plan{100, 0};
  EXPECT_EQ(plan.chunk_count(), 0U);
  EXPECT_EQ(plan.length(0), 0U);
}

}  // namespace
