#include "common/cli/shard_spec.hpp"

#include <cstdlib>
#include <utility>

namespace rdmax {
namespace {

// Decimal digits only, as launchers write them: no sign, no spaces, no hex.
std::optional<std::uint32_t> parse_count(std::string_view text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value > UINT32_MAX) return std::nullopt;
  return static_cast<std::uint32_t>(value);
}

std::string spec_text(ShardSpec s) {
  return std::to_string(s.index) + "/" + std::to_string(s.count);
}

// N's bounds and I < N, in the words of `where` ("--shard 5/4", "SLURM_PROCID=5, ...").
std::optional<std::string> check_spec(ShardSpec s, const std::string& where) {
  if (s.count == 0) return where + ": N is 0; there must be at least one shard";
  if (s.count > kMaxShards)
    return where + ": N is " + std::to_string(s.count) + ", more than the " +
           std::to_string(kMaxShards) + " shards accepted";
  if (s.index >= s.count)
    return where + ": there is no shard " + std::to_string(s.index) + " of " +
           std::to_string(s.count) + " (I counts from 0 to N-1)";
  return std::nullopt;
}

struct Launcher {
  const char* name;
  const char* rank;
  const char* size;
};
constexpr Launcher kLaunchers[] = {
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE"},
};
constexpr const char* kIndexedJob = "JOB_COMPLETION_INDEX";

std::string looked_for() {
  std::string text = "looked for";
  for (const Launcher& l : kLaunchers)
    text += std::string(" ") + l.rank + " and " + l.size + " (" + l.name + "),";
  return text + " " + kIndexedJob + " (Kubernetes Indexed Job, with --shard auto/N)";
}

// What one launcher's variables say.
struct Found {
  std::string source;  // "Slurm (SLURM_PROCID=1, SLURM_NTASKS=4)"
  ShardSpec spec;
};

std::variant<ShardSpec, std::string> from_environment(std::optional<std::uint32_t> given_count,
                                                      const EnvironmentLookup& env) {
  std::vector<Found> found;
  for (const Launcher& l : kLaunchers) {
    const auto rank = env(l.rank);
    const auto size = env(l.size);
    if (!rank && !size) continue;
    if (!rank || !size) {
      return std::string("auto: ") + (rank ? l.rank : l.size) + " is set but " +
             (rank ? l.size : l.rank) + " is not; " + looked_for();
    }
    const std::string where =
        std::string("auto: ") + l.rank + "='" + *rank + "', " + l.size + "='" + *size + "'";
    const auto i = parse_count(*rank);
    const auto n = parse_count(*size);
    if (!i || !n) return where + ": not a whole number";
    const ShardSpec spec{*i, *n};
    if (auto problem = check_spec(spec, where)) return *problem;
    found.push_back(
        {std::string(l.name) + " (" + l.rank + "=" + *rank + ", " + l.size + "=" + *size + ")",
         spec});
  }
  if (const auto index = env(kIndexedJob)) {
    const std::string where = std::string("auto: ") + kIndexedJob + "='" + *index + "'";
    if (!given_count) {
      return where + " gives I but not N: give N as --shard auto/N (the Job's completions)";
    }
    const auto i = parse_count(*index);
    if (!i) return where + ": not a whole number";
    const ShardSpec spec{*i, *given_count};
    if (auto problem = check_spec(spec, where)) return *problem;
    found.push_back({std::string("Kubernetes (") + kIndexedJob + "=" + *index + ")", spec});
  }
  if (found.empty()) {
    return "auto: no launcher's environment: " + looked_for() +
           "; outside a launcher give --shard I/N";
  }
  for (const Found& f : found) {
    if (given_count && f.spec.count != *given_count) {
      return "auto/" + std::to_string(*given_count) + ": but " + f.source + " says " +
             spec_text(f.spec) + "; give the right N, or --shard I/N";
    }
    if (f.spec != found.front().spec) {
      return "auto: the launchers disagree: " + found.front().source + " says " +
             spec_text(found.front().spec) + ", " + f.source + " says " + spec_text(f.spec) +
             "; give --shard I/N from the launcher that started rdma-send";
    }
  }
  return found.front().spec;
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::variant<ShardSpec, std::string> parse_shard(std::string_view text,
                                                 const EnvironmentLookup& env) {
  const std::string quoted = "'" + std::string(text) + "'";
  if (text.starts_with("auto")) {
    const std::string_view rest = text.substr(4);
    if (rest.empty()) return from_environment(std::nullopt, env);
    const auto n = rest.starts_with('/') ? parse_count(rest.substr(1)) : std::nullopt;
    if (!n) return quoted + " is not auto or auto/N (N a whole number)";
    if (auto problem = check_spec({0, *n}, "auto/" + std::string(rest.substr(1)))) return *problem;
    return from_environment(n, env);
  }
  const std::size_t slash = text.find('/');
  const auto i =
      slash == std::string_view::npos ? std::nullopt : parse_count(text.substr(0, slash));
  const auto n =
      slash == std::string_view::npos ? std::nullopt : parse_count(text.substr(slash + 1));
  if (!i || !n) return quoted + " is not I/N (whole numbers, e.g. 0/4), auto or auto/N";
  const ShardSpec spec{*i, *n};
  if (auto problem = check_spec(spec, std::string(text))) return *problem;
  return spec;
}

}  // namespace rdmax
