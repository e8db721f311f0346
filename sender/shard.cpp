#include "sender/shard.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <queue>
#include <unordered_set>
#include <utility>

namespace rdmax::sender {
namespace {

// "a/b/c" -> "a", "a/b": the directories a file needs.
template <typename Set>
void add_parents(const std::string& path, Set& into) {
  for (std::size_t slash = path.find('/'); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    into.insert(path.substr(0, slash));
  }
}

}  // namespace

std::vector<std::uint32_t> assign_shards(const std::vector<SourceEntry>& files,
                                         std::uint32_t count) {
  std::vector<std::uint32_t> shard(files.size(), 0);
  if (count <= 1) return shard;
  std::vector<std::size_t> order(files.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // remote_path is unique within a tree; local_path only settles a list naming one twice.
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const SourceEntry& x = files[a];
    const SourceEntry& y = files[b];
    if (x.size != y.size) return x.size > y.size;
    if (x.remote_path != y.remote_path) return x.remote_path < y.remote_path;
    return x.local_path < y.local_path;
  });
  // (load, shard), least first: equal loads go to the lowest shard.
  using Load = std::pair<std::uint64_t, std::uint32_t>;
  std::priority_queue<Load, std::vector<Load>, std::greater<>> least;
  for (std::uint32_t s = 0; s < count; ++s) least.push({0, s});
  for (const std::size_t f : order) {
    const auto [load, s] = least.top();
    least.pop();
    shard[f] = s;
    least.push({load + files[f].size + kShardFileCost, s});
  }
  return shard;
}

SourceTree select_shard(const SourceTree& tree, ShardSpec spec) {
  if (spec.count <= 1) return tree;
  const std::vector<std::uint32_t> shard = assign_shards(tree.files, spec.count);
  SourceTree mine;
  std::unordered_set<std::string> needed_by_mine, needed_by_any;
  for (std::size_t i = 0; i < tree.files.size(); ++i) {
    // Only shard 0 takes the directories no file needs: only it must know which those are.
    if (spec.index == 0) add_parents(tree.files[i].remote_path, needed_by_any);
    if (shard[i] != spec.index) continue;
    add_parents(tree.files[i].remote_path, needed_by_mine);
    mine.files.push_back(tree.files[i]);
    mine.total_bytes += tree.files[i].size;
  }
  for (const SourceEntry& d : tree.directories) {
    if (needed_by_mine.contains(d.remote_path) ||
        (spec.index == 0 && !needed_by_any.contains(d.remote_path)))
      mine.directories.push_back(d);
  }
  if (spec.index == 0) mine.skipped = tree.skipped;
  return mine;
}

}  // namespace rdmax::sender
