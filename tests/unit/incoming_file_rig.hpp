#pragma once
// What the IncomingFile tests share: a directory of their own with its space reservations and
// partial area, a worker pool, a file's contents cut into chunks, and each step of a file
// (open, create, store chunks, commit) run on the pool until its result is back.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/digest/blake3_tree.hpp"
#include "common/digest/merkle.hpp"
#include "driver_harness.hpp"
#include "receiver/incoming_file.hpp"

namespace rdmax::test {

constexpr auto kWholeFileSha256 = proto::DigestAlgorithm::WholeFileSha256;
constexpr auto kFsVerity = proto::DigestAlgorithm::FsVeritySha256;
constexpr auto kBlake3 = proto::DigestAlgorithm::Blake3;

// The tree digest of `data` by `algorithm` (fs-verity's or BLAKE3's), as a test expects it.
inline Digest tree_digest_of(proto::DigestAlgorithm algorithm, std::span<const std::uint8_t> data) {
  return algorithm == kBlake3 ? blake3::digest_of(data) : merkle::digest_of(data);
}

// An Outcome that is Ok, or a failure that says which it was.
inline ::testing::AssertionResult succeeded(const receiver::IncomingFile::Outcome& outcome) {
  if (outcome.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "outcome " << static_cast<int>(outcome.kind) << ": " << outcome.error;
}

struct IncomingFileRig {
  using IncomingFile = receiver::IncomingFile;
  using Outcome = IncomingFile::Outcome;

  IncomingFileRig(const std::string& prefix, unsigned threads,
                  std::vector<std::uint8_t> contents = {}, std::size_t chunk_size = 4096)
      : dir{prefix}, pool{threads}, bytes(std::move(contents)), chunk(chunk_size) {}

  TempDir dir;
  receiver::SpaceReservations space;
  WorkPool pool;
  receiver::PartialStore partials{dir.fd(), {}};  // touches nothing on disk until used
  std::vector<std::uint8_t> bytes;                // the file's contents
  std::size_t chunk;                              // cut into chunks of this size
  // The chunk indices of the last post()'s stores, in the order their results came back.
  std::vector<std::uint64_t> reported;

  std::uint64_t chunks() const { return (bytes.size() + chunk - 1) / chunk; }
  // The chunk indices [first, last), last at most chunks().
  std::vector<std::uint64_t> range(std::uint64_t first, std::uint64_t last = UINT64_MAX) const {
    std::vector<std::uint64_t> indices;
    for (std::uint64_t i = first; i < std::min(last, chunks()); ++i) indices.push_back(i);
    return indices;
  }
  // Resuming from a partial of the file whose digest is `digest`, at chunk boundaries.
  IncomingFile::Resume resume(const Digest& digest, bool may_have = true) {
    return {&partials, digest, static_cast<std::uint32_t>(chunk), may_have};
  }

  std::unique_ptr<IncomingFile> open(const std::string& name, proto::DigestAlgorithm algorithm,
                                     std::uint32_t lanes = 1,
                                     std::optional<IncomingFile::Resume> resuming = std::nullopt) {
    auto f = std::make_unique<IncomingFile>(pool, dir.fd(), name, false, algorithm);
    f->set_write_lanes(lanes);
    f->set_partial_area(&partials);  // as every receiver's file is (IncomingEntry::create)
    if (resuming) f->set_resume(*resuming);
    return f;
  }
  Outcome create(IncomingFile& f, std::uint64_t size) {
    return wait([&](IncomingFile::Done done) { f.create(size, space, std::move(done)); });
  }
  Outcome create(IncomingFile& f) { return create(f, bytes.size()); }
  Outcome commit(IncomingFile& f) {
    return wait([&](IncomingFile::Done done) { f.commit(std::move(done)); });
  }
  bool until_idle(IncomingFile& f) {
    return run_pool_until(pool, [&] { return f.idle(); });
  }

  // Stores the chunks `indices` of `bytes` (the last chunk may be short), chunk i from slot
  // i % slots, as a full window would; each result must be a success from its own slot, and
  // its chunk index goes to `reported`. Does not wait for them.
  void post(IncomingFile& f, const std::vector<std::uint64_t>& indices,
            std::uint32_t slots = UINT32_MAX) {
    reported.clear();
    for (const std::uint64_t i : indices) {
      const auto slot = static_cast<std::uint32_t>(i % slots);
      const std::size_t at = i * chunk;
      f.store(slot, at, std::span(bytes).subspan(at, std::min(chunk, bytes.size() - at)),
              [this, i, slot](const IncomingFile::Stored& s) {
                EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
                EXPECT_EQ(s.slot, slot);
                reported.push_back(i);
              });
    }
  }
  // post(), then runs the pool until every store has reported.
  bool store(IncomingFile& f, const std::vector<std::uint64_t>& indices,
             std::uint32_t slots = UINT32_MAX) {
    post(f, indices, slots);
    return run_pool_until(pool, [&] { return reported.size() == indices.size(); });
  }
  // Stores `data` at `offset` from `slot` and waits for its result, whatever it is.
  std::optional<IncomingFile::Stored> store_at(IncomingFile& f, std::uint32_t slot,
                                               std::uint64_t offset,
                                               std::span<const std::uint8_t> data) {
    auto result = std::make_shared<std::optional<IncomingFile::Stored>>();
    f.store(slot, offset, data, [result](const IncomingFile::Stored& s) { *result = s; });
    run_pool_until(pool, [&] { return result->has_value(); });
    return *result;
  }

 private:
  template <typename Start>
  Outcome wait(Start start) {
    auto result = std::make_shared<std::optional<Outcome>>();
    start([result](const Outcome& o) { *result = o; });
    EXPECT_TRUE(run_pool_until(pool, [&] { return result->has_value(); }));
    return result->value_or(Outcome{Outcome::Kind::Failed, "no result"});
  }
};

}  // namespace rdmax::test
