#pragma once
// --shard I/N (issue 24): several rdma-send processes, started by a launcher (Slurm, Open MPI,
// MPICH, a Kubernetes Indexed Job) on one tree each send a share of it (the spec itself:
// common/cli/shard_spec.hpp); a fetch server cuts a fetcher's share the same way. The share is
// a pure function of the walked tree: the same tree gives every process the same partition,
// so a re-run of shard I offers exactly its own files again (the receiver skips what it has)
// and never another shard's. Pure code: no RDMA, no file system.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/cli/shard_spec.hpp"
#include "sender/source_tree.hpp"

namespace rdmax::sender {

// The shard (0 .. count-1) of each file of `files`, by position. Files are taken largest
// first (equal sizes in bytewise order of remote_path, so the order depends on nothing but
// the tree), each to the shard with the least load so far (ties: the lowest index), a load
// being the bytes plus kShardFileCost per file. The result does not depend on the order of
// `files`; no shard's load exceeds another's by more than the largest file's.
[[nodiscard]] std::vector<std::uint32_t> assign_shards(const std::vector<SourceEntry>& files,
                                                       std::uint32_t count);

// What a file costs beyond its bytes when balancing: a round trip of its own (Offer, Take,
// FileDone, FileVerdict), as a 4 KiB chunk would; it keeps shards of many tiny files from
// getting all of them.
inline constexpr std::uint64_t kShardFileCost = 4096;

// Shard spec.index of `tree`: its files (in walk order), and the directories that those
// files lie beneath (so that the shard's tree is whole on its own); the directories with no
// file of the tree beneath them (empty ones) go to shard 0, as do `skipped` (reported once,
// not N times).
[[nodiscard]] SourceTree select_shard(const SourceTree& tree, ShardSpec spec);

}  // namespace rdmax::sender
