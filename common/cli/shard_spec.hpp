#pragma once
// --shard I/N (issue 24): which share of a tree this process moves, where a launcher (Slurm,
// Open MPI, MPICH, a Kubernetes Indexed Job) starts several: rdma-send --shard pushes its
// share, rdma-recv --from --shard fetches it (the server cuts it). The spec as the user
// gives it, or as the launcher's environment says it. Pure code: the environment injected.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "protocol/wire.hpp"

namespace rdmax {

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

}  // namespace rdmax
