#pragma once
// --shard I/N (issue 24): several rdma-send processes, started by a launcher (Slurm, Open MPI,
// MPICH, a Kubernetes Indexed Job) on one tree each send a share of it. The share is a pure
// function of the walked tree: the same tree gives every process the same partition, so a
// re-run of shard I offers exactly its own files again (the receiver skips what it has) and
// never another shard's. Pure code: no RDMA, no file system, the environment injected.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/wire.hpp"
#include "sender/source_tree.hpp"

namespace rdmax::sender {

struct ShardSpec {
  std::uint32_t index = 0;  // I: 0 <= index < count
  std::uint32_t count = 1;  // N: 1 is the whole tree
  bool operator==(const ShardSpec&) const = default;
};

// The largest N accepted: more processes than this is surely a typo (a fetch names as many).
inline constexpr std::uint32_t kMaxShards = proto::kMaxShards;

// An environment variable's value, or nullopt when it is not set (tests pass a map).
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process's own environment (getenv).
[[nodiscard]] EnvironmentLookup process_environment();

// The value of --shard: "I/N", "auto" (I and N from the launcher's environment) or "auto/N"
// (N given, I from the environment, e.g. a Kubernetes Indexed Job's JOB_COMPLETION_INDEX).
// A string is a usage error, its message for the user as it stands (after "--shard: ").
// "auto" reads, and every launcher found must agree:
//   Slurm     SLURM_PROCID, SLURM_NTASKS
//   Open MPI  OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//   PMI       PMI_RANK, PMI_SIZE (MPICH, Intel MPI, srun --mpi=pmi2)
//   Kubernetes JOB_COMPLETION_INDEX (only with auto/N: the Job's completions are N)
// A pair set by half, a value that is not a number, I >= N, N = 0, or two launchers that
// disagree is an error; none set is an error naming every variable looked for.
[[nodiscard]] std::variant<ShardSpec, std::string> parse_shard(std::string_view text,
                                                               const EnvironmentLookup& env);

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
