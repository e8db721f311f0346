#pragma once
// rdma-send's pass over the file before the Hello: its digest by the chosen algorithm, from
// the digest cache when the file is unchanged since it was last hashed, else computed
// (the fs-verity digest on --hash-threads threads, the whole-file SHA-256 on one) and
// remembered. The cache is a command's DigestCacheBatch: read once however many files the
// command hashes, and written once when the caller commits it (commit_digest_cache).

#include <optional>

#include "common/digest/file_digest.hpp"
#include "sender/digest_cache.hpp"
#include "sender/input_file.hpp"
#include "sender/progress_bar.hpp"

namespace rdmax::sender {

struct HashingPass {
  FileDigest digest;
  double seconds = 0;       // wall time of the pass
  bool from_cache = false;  // the digest cache knew the file: nothing was read
  bool known = true;        // false: not computed (HashingSettings::compute off, not cached)
};

struct HashingSettings {
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256;
  unsigned threads = 1;
  ProgressMode progress = ProgressMode::Off;
  DigestCacheBatch* cache = nullptr;  // none: always hash, remember nothing
  // false: only the cache is asked; a file it does not know is not read (its digest is
  // computed as it is sent: the digest at the end). An empty file's is computed all the same.
  bool compute = true;
};

// The digest cache, unless `enabled` is false (--no-digest-cache) or there is no home to
// keep it in.
std::optional<DigestCache> open_digest_cache(bool enabled);

// The batch of a command that hashes files with `cache` (none: none), read now; a problem
// is logged at debug level and leaves it empty.
std::optional<DigestCacheBatch> open_digest_cache_batch(DigestCache* cache);
// Writes what the batch remembered (if any); a problem is logged at debug level.
void commit_digest_cache(std::optional<DigestCacheBatch>& batch);

// Throws when the file cannot be read to its end (it shrank, an I/O error).
HashingPass hash_file(InputFile& file, const HashingSettings& settings);

}  // namespace rdmax::sender
