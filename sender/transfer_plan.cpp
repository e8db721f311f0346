#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

namespace {
PlannedEntry planned(const SourceEntry& s, proto::EntryKind kind) {
  PlannedEntry p;
  p.kind = kind;
  p.local_path = s.local_path;
  p.remote_path = s.remote_path;
  p.size = kind == proto::EntryKind::File ? s.size : 0;
  p.mode = s.mode;
  p.mtime_sec = static_cast<std::int64_t>(s.mtime.tv_sec);
  p.mtime_nsec = static_cast<std::uint32_t>(s.mtime.tv_nsec);
  return p;
}
}  // namespace

TransferPlan plan_of(const SourceTree& tree, proto::DigestAlgorithm algorithm) {
  TransferPlan plan;
  plan.algorithm = algorithm;
  for (const auto& f : tree.files) plan.entries.push_back(planned(f, proto::EntryKind::File));
  for (const auto& d : tree.directories)
    plan.entries.push_back(planned(d, proto::EntryKind::Directory));
  plan.results.resize(plan.entries.size());
  return plan;
}

}  // namespace rdmax::sender
