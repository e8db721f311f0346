#include "sender/version1_send.hpp"

#include <spdlog/spdlog.h>

#include "sender/digest_cache.hpp"
#include "sender/hashing_pass.hpp"
#include "sender/input_file.hpp"
#include "sender/memlock.hpp"
#include "sender/transfer_run.hpp"

namespace rdmax::sender {

bool version1_can_send(const TransferPlan& plan) {
  return plan.entries.size() == 1 && plan.entries.front().kind == proto::EntryKind::File;
}

void send_with_version1(const SenderOptions& options, TransferPlan& plan, RunSummary& summary,
                        std::string& secret, ProgressMode progress) {
  PlannedEntry& entry = plan.entries.front();
  if (plan.algorithm != proto::DigestAlgorithm::WholeFileSha256) {
    spdlog::warn(
        "the receiver speaks only protocol version 1: connecting again with version 1 (and the "
        "whole-file SHA-256 digest it knows)");
    auto cache = open_digest_cache(options.digest_cache);
    auto batch = open_digest_cache_batch(cache ? &*cache : nullptr);
    InputFile file(entry.local_path);
    const HashingPass pass =
        hash_file(file, {proto::DigestAlgorithm::WholeFileSha256, options.hash_threads, progress,
                         batch ? &*batch : nullptr});
    commit_digest_cache(batch);
    plan.algorithm = proto::DigestAlgorithm::WholeFileSha256;
    entry.digest = pass.digest.value;
    entry.digest_known = true;  // a Hello carries it: version 1 has no digest at the end
    entry.digest_from_cache = pass.from_cache;
    summary.hash_seconds += pass.seconds;
  } else {
    spdlog::warn("the receiver speaks only protocol version 1: connecting again with version 1");
  }
  plan.results.front() = {};
  // The one session driver, its transport speaking version 1 (sender/version1_transport.hpp).
  SenderSettings settings{options.id,      proto::kVersion1,  options.connect_timeout,
                          options.timeout, options.zero_copy, options.inject_corruption,
                          progress,        options.bwlimit};
  MemlockBudget memlock(preflight::current_memlock_limit(), 1, kSessionDepths);
  settings.memlock = &memlock;
  TransferRun run(options, settings, plan, {{0}}, progress);
  summary.lead = run.run();
  summary.bytes = run.bytes();
  summary.connect_seconds = run.connect_seconds();
  summary.data_seconds = run.data_seconds();
  secret = run.secret();
}

}  // namespace rdmax::sender
