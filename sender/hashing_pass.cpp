#include "sender/hashing_pass.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/error.hpp"
#include "protocol/sizes.hpp"
#include "sender/interrupt_flag.hpp"

namespace rdmax::sender {
namespace {

Digest compute(InputFile& file, const HashingSettings& settings) {
  ProgressBar bar(settings.progress, "hashing", file.size());
  // Each step of the pass is where SIGINT/SIGTERM stops it (sender/interrupt_flag.hpp).
  const auto show = [&](std::uint64_t done) {
    InterruptFlag::check();
    bar.update(done);
  };
  // Hashing the mapping in place avoids a copy; a file system that cannot map the file
  // still gets hashed, through pread.
  std::span<const std::uint8_t> mapping;
  try {
    mapping = file.map();
  } catch (const SysError& e) {
    spdlog::debug("hashing through pread: {}", e.what());
  }
  const bool mapped = mapping.size() == file.size();
  Digest digest;
  if (settings.algorithm != proto::DigestAlgorithm::WholeFileSha256) {  // a tree: every core
    digest = mapped ? tree_digest_of_mapping(settings.algorithm, mapping, settings.threads, show)
                    : tree_digest_of_file(settings.algorithm, file.fd(), file.size(),
                                          settings.threads, nullptr, show);
  } else {
    digest =
        mapped ? sha256_of_mapping(mapping, show) : sha256_of_file(file.fd(), file.size(), show);
  }
  bar.finish();
  return digest;
}

}  // namespace

std::optional<DigestCache> open_digest_cache(bool enabled) {
  if (!enabled) return std::nullopt;
  auto path = DigestCache::default_path();
  if (!path) {
    spdlog::debug("digest cache: neither XDG_CACHE_HOME nor HOME is set; not caching");
    return std::nullopt;
  }
  return DigestCache(*path);
}

std::optional<DigestCacheBatch> open_digest_cache_batch(DigestCache* cache) {
  if (cache == nullptr) return std::nullopt;
  std::string problem;
  std::optional<DigestCacheBatch> batch(std::in_place, *cache, &problem);
  if (!problem.empty()) spdlog::debug("digest cache: {}", problem);
  return batch;
}

void commit_digest_cache(std::optional<DigestCacheBatch>& batch) {
  if (!batch) return;
  std::string problem;
  batch->commit(&problem);
  if (!problem.empty()) spdlog::debug("digest cache: {}", problem);
}

HashingPass hash_file(InputFile& file, const HashingSettings& settings) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  HashingPass pass;
  pass.digest.algorithm = settings.algorithm;
  const auto algorithm = settings.algorithm;
  std::optional<FileIdentity> before;
  if (settings.cache != nullptr) {
    try {
      before = identity_of(file.fd());
    } catch (const std::exception& e) {
      spdlog::debug("digest cache: {}", e.what());
    }
  }
  if (before) {
    if (auto known = settings.cache->lookup(algorithm, *before)) {
      pass.digest.value = *known;
      pass.from_cache = true;
    }
  }
  // An empty file's digest costs no read: it goes with the file's Offer, so that a receiver
  // that holds the file answers Have (an empty file offered without its digest could only be
  // refused: a Holds is for 1 byte at least, docs/PROTOCOL.md 7.9).
  if (!pass.from_cache && !settings.compute && file.size() > 0) {
    pass.known = false;
    return pass;
  }
  if (!pass.from_cache) {
    pass.digest.value = compute(file, settings);
    // Remembered only if the file did not change while it was read (the cache refuses
    // too-recent times itself: a change within the same timestamp tick would be invisible).
    if (before) {
      try {
        if (identity_of(file.fd()) == *before)
          settings.cache->remember(algorithm, *before, pass.digest.value);
      } catch (const std::exception& e) {
        spdlog::debug("digest cache: {}", e.what());
      }
    }
  }
  pass.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  spdlog::debug("{} digest {} of {}{} in {:.2f}s", proto::to_string(settings.algorithm),
                to_hex(pass.digest.value), proto::format_size(file.size()),
                pass.from_cache ? " (from the digest cache)" : "", pass.seconds);
  return pass;
}

}  // namespace rdmax::sender
