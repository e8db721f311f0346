#include "sender/transfer_command.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "common/error.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "sender/digest_cache.hpp"
#include "sender/exit_codes.hpp"
#include "sender/file_list.hpp"
#include "sender/hashing_pass.hpp"
#include "sender/input_file.hpp"
#include "sender/interrupt_flag.hpp"
#include "sender/memlock.hpp"
#include "sender/report.hpp"
#include "sender/shard.hpp"
#include "sender/source_tree.hpp"
#include "sender/transfer_run.hpp"

namespace rdmax::sender {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Whether version 1 can carry the plan: one file and nothing else.
bool version1_can_send(const TransferPlan& plan) {
  return plan.entries.size() == 1 && plan.entries.front().kind == proto::EntryKind::File;
}

// What the command tells before it connects again with fewer terms (the digest at the end's
// refusal is told by the connection that met it).
void say_falling_back(const proto::SessionTerms& from, const proto::SessionTerms& to,
                      bool digest_chosen) {
  if (to.version != from.version) {
    spdlog::warn(from.algorithm == proto::DigestAlgorithm::WholeFileSha256
                     ? "the receiver speaks only protocol version 1: connecting again with "
                       "version 1"
                     : "the receiver speaks only protocol version 1: connecting again with "
                       "version 1 (and the whole-file SHA-256 digest it knows)");
  } else if (to.algorithm != from.algorithm) {
    // The default needs no word beyond a note; a BLAKE3 asked for is worth a warning.
    spdlog::log(digest_chosen ? spdlog::level::warn : spdlog::level::info,
                "the receiver does not take BLAKE3: the fs-verity digest instead");
  }
}

// Files over `connections` connections in plan order (largest first when there are several:
// sort_largest_first), each to the least loaded one (by bytes); the directories go last on
// the first (the lead), deepest first. A file of at least `stripe_min` bytes (0: none) goes
// to the lead, which offers it over every connection at once (docs/PROTOCOL.md 7.12): then
// every connection is kept, with or without a share of its own.
std::vector<std::vector<std::uint32_t>> share_out(const TransferPlan& plan, unsigned connections,
                                                  std::uint64_t stripe_min) {
  std::vector<std::uint32_t> files, directories, striped;
  for (std::uint32_t i = 0; i < plan.entries.size(); ++i) {
    if (plan.results[i].status != EntryResult::Status::NotSent) continue;  // settled before
    const bool file = plan.entries[i].kind == proto::EntryKind::File;
    if (file && stripe_min > 0 && connections > 1 && plan.entries[i].size >= stripe_min)
      striped.push_back(i);
    else
      (file ? files : directories).push_back(i);
  }
  const std::size_t n =
      striped.empty() ? std::max<std::size_t>(1, std::min<std::size_t>(connections, files.size()))
                      : connections;
  std::vector<std::vector<std::uint32_t>> shares(n);
  shares[0] = striped;
  if (n > 1) {
    std::vector<std::uint64_t> load(n, 0);
    for (std::uint32_t f : striped) load[0] += plan.entries[f].size / n;  // spread over all
    for (std::uint32_t f : files) {
      const auto least =
          static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      shares[least].push_back(f);
      load[least] += plan.entries[f].size + 4096;  // a file costs a round trip of its own
    }
  } else {
    shares[0].insert(shares[0].end(), files.begin(), files.end());
  }
  shares[0].insert(shares[0].end(), directories.begin(), directories.end());
  return shares;
}

// The digest of every file, from the cache where it knows the file. A file that cannot be
// read is reported, marked failed, and not offered. The cache is read once and written once
// for all the files: a read and rewrite of it per file cost more than hashing small files.
// `progress`: a bar per file (for a command of one file).
// `compute` off (the digest at the end): only the cache is asked; the files it does not know
// are offered without their digest (PlannedEntry::digest_known) and hashed as they are sent.
void hash_files(const SenderOptions& options, TransferPlan& plan, ProgressMode progress,
                double& seconds, std::size_t& from_cache, bool compute = true) {
  auto cache = open_digest_cache(options.digest_cache);
  const auto t0 = Clock::now();
  auto batch = open_digest_cache_batch(cache ? &*cache : nullptr);
  HashingSettings settings{plan.algorithm, options.hash_threads, progress,
                           batch ? &*batch : nullptr, compute};
  for (std::size_t i = 0; i < plan.entries.size(); ++i) {
    PlannedEntry& e = plan.entries[i];
    if (e.kind != proto::EntryKind::File) continue;
    if (plan.results[i].status != EntryResult::Status::NotSent) continue;  // unreadable
    if (e.digest_known && e.digest_from_cache) continue;                   // hashed before
    try {
      InterruptFlag::check();
      InputFile file(e.local_path);
      if (file.size() != e.size) throw std::runtime_error("it changed size during the walk");
      const HashingPass pass = hash_file(file, settings);
      e.digest = pass.digest.value;
      e.digest_from_cache = pass.from_cache;
      e.digest_known = pass.known;
      if (pass.from_cache) ++from_cache;
    } catch (const Interrupted&) {
      commit_digest_cache(batch);  // what was hashed need not be hashed again
      throw;
    } catch (const std::exception& ex) {
      spdlog::error("cannot read '{}': {}", proto::escape_for_log(e.local_path), ex.what());
      plan.results[i] = {.status = EntryResult::Status::Failed,
                         .outcome = proto::SenderOutcome::LocalFailure,
                         .detail = std::string("cannot read: ") + ex.what()};
    }
  }
  commit_digest_cache(batch);
  if (cache) {
    spdlog::debug("digest cache: {} read(s), {} write(s)", cache->stats().reads,
                  cache->stats().writes);
  }
  seconds = seconds_since(t0);
}

// What the connections hashed as they sent (the digest at the end) goes into the digest
// cache, for the next send of the same files.
void remember_learned(const SenderOptions& options, const TransferPlan& plan) {
  if (plan.learned.empty()) return;
  auto cache = open_digest_cache(options.digest_cache);
  if (!cache) return;
  std::string problem;
  cache->remember_all(plan.learned, &problem);
  if (!problem.empty()) spdlog::debug("digest cache: {}", problem);
}

// The command's whole tree: the walk of its PATHs, or the entries --files-from lists.
SourceTree find_sources(const SenderOptions& options) {
  if (!options.files_from) return walk_sources(options.files, options.recursive, options.rename);
  const std::string list = read_file_list(*options.files_from);
  return walk_file_list(split_file_list(list, options.from0), absolute_base(options.base));
}

// Files that could not be read when they were found (--files-from entries) are failed now,
// each said once; the others go on.
void fail_unreadable(const SourceTree& tree, TransferPlan& plan) {
  for (std::size_t i = 0; i < tree.files.size(); ++i) {
    const SourceEntry& f = tree.files[i];
    if (f.unreadable.empty()) continue;
    spdlog::error("'{}': {}", proto::escape_for_log(f.local_path), f.unreadable);
    plan.results[i] = {.status = EntryResult::Status::Failed,
                       .outcome = proto::SenderOutcome::LocalFailure,
                       .detail = f.unreadable};
  }
}
}  // namespace

std::optional<SourceTree> walk_local_input(const SenderOptions& options, std::string& error) {
  SourceTree tree;
  try {
    tree = find_sources(options);
  } catch (const std::exception& e) {  // SourceError: the message is for the user as it is
    error = e.what();
    spdlog::error("{}", error);
    return std::nullopt;
  }
  if (tree.files.empty() && tree.directories.empty()) {
    for (const auto& s : tree.skipped)
      spdlog::warn("skipping '{}': {}", proto::escape_for_log(s.local_path), s.reason);
    error = options.files_from ? "nothing to send: the list names no file or directory to send"
                               : "nothing to send: every PATH was skipped";
    spdlog::error("{}", error);
    return std::nullopt;
  }
  if (options.shard.count > 1) {
    const std::size_t files = tree.files.size();
    const std::uint64_t bytes = tree.total_bytes;
    tree = select_shard(tree, options.shard);
    spdlog::info("shard {} of {}: {} of {} files ({} of {}), {} directories", options.shard.index,
                 options.shard.count, tree.files.size(), files,
                 proto::format_size(tree.total_bytes), proto::format_size(bytes),
                 tree.directories.size());
  }
  for (const auto& s : tree.skipped)
    spdlog::warn("skipping '{}': {}", proto::escape_for_log(s.local_path), s.reason);
  return tree;
}

int run_transfer(const SenderOptions& options, SourceTree tree, ProgressMode progress,
                 const proto::SenderKey* key) {
  const auto t0 = Clock::now();
  // One connection takes the files in walk order; several share them out largest first, so
  // that no big file starts last.
  if (options.parallel > 1 || options.receivers.size() > 1) sort_largest_first(tree.files);

  TransferPlan plan = plan_of(tree, options.digest);
  fail_unreadable(tree, plan);  // the plan's first entries are tree.files, in order
  std::optional<JsonLines> lines;
  if (options.json_lines) lines.emplace(std::cout);

  RunSummary summary;
  summary.left_out = tree.skipped.size();
  std::size_t from_cache = 0;
  const bool one_file = version1_can_send(plan);
  // --digest-at-end (docs/PROTOCOL.md 7.9): nothing is read before the connection but the
  // digest cache. Not with --inject-corruption, whose flipped byte the digest must miss.
  const bool at_end = options.digest_at_end &&
                      plan.algorithm != proto::DigestAlgorithm::WholeFileSha256 &&
                      !options.inject_corruption;
  hash_files(options, plan, one_file ? progress : ProgressMode::Off, summary.hash_seconds,
             from_cache, !at_end);
  if (!one_file && !at_end) {
    spdlog::info("{} files ({}) hashed in {:.2f}s, {} from the digest cache", tree.files.size(),
                 proto::format_size(tree.total_bytes), summary.hash_seconds, from_cache);
  }
  // Files that could not be read are not offered; --json-lines says so now.
  if (lines) {
    for (std::size_t i = 0; i < plan.entries.size(); ++i)
      if (plan.results[i].status != EntryResult::Status::NotSent) lines->settled(plan, i);
  }
  TransferPlan sendable;
  sendable.algorithm = plan.algorithm;
  std::vector<std::size_t> origin;
  for (std::size_t i = 0; i < plan.entries.size(); ++i) {
    if (plan.results[i].status != EntryResult::Status::NotSent) continue;
    sendable.entries.push_back(plan.entries[i]);
    origin.push_back(i);
  }
  sendable.results.resize(sendable.entries.size());
  if (lines) {
    // Copied back as each entry settles (a version-1 fallback re-hashes, hence the entry too).
    sendable.on_settled = [&](std::size_t j) {
      plan.algorithm = sendable.algorithm;
      plan.entries[origin[j]] = sendable.entries[j];
      plan.results[origin[j]] = sendable.results[j];
      lines->settled(plan, origin[j]);
    };
  }

  std::string secret;
  if (!sendable.entries.empty()) {
    SenderSettings settings{options.id,      proto::kVersion2,  options.connect_timeout,
                            options.timeout, options.zero_copy, options.inject_corruption,
                            progress,        options.bwlimit};
    // Every connection pins its buffers: as many as RLIMIT_MEMLOCK holds, each with one
    // slot of a default receiver at least (sender/memlock.hpp).
    const auto limit = preflight::current_memlock_limit();
    std::uint32_t files = 0;
    for (const auto& e : sendable.entries) files += e.kind == proto::EntryKind::File ? 1 : 0;
    // -H HOST1,HOST2: a connection to each receiver at least, and to each address of one
    // (HOST+HOST2, its rails). Connection i goes to receiver i mod R and takes that one's
    // addresses in turn (sender/transfer_run.hpp): R times the most addresses reach all.
    std::size_t most_addresses = 1;
    for (const Receiver& r : options.receivers)
      most_addresses = std::max(most_addresses, r.addresses());
    const auto wanted = std::max<std::uint32_t>(
        options.parallel, static_cast<std::uint32_t>(options.receivers.size() * most_addresses));
    // A file to stripe (docs/PROTOCOL.md 7.12) keeps every connection asked for.
    const bool stripes =
        options.receivers.size() == 1 && wanted > 1 &&
        std::any_of(sendable.entries.begin(), sendable.entries.end(), [&](const PlannedEntry& e) {
          return e.kind == proto::EntryKind::File && e.size >= options.stripe_min && e.size > 0;
        });
    const std::uint32_t asked =
        std::max<std::uint32_t>(1, std::min<std::uint32_t>(wanted, stripes ? wanted : files));
    const std::uint32_t fit = proto::connections_that_fit(
        MemlockBudget(limit, 1, kSessionDepths).pins(), asked, kDefaultReceiverSlotSize);
    // Not even one: one connection tries (the receiver's slots may be smaller), and fails at
    // its Accept, with the remedy, if they are not.
    const std::uint32_t fitting = std::max<std::uint32_t>(1, fit);
    MemlockBudget memlock(limit, fitting, kSessionDepths);
    if (fit > 0 && fit < asked) memlock.fewer_connections(asked, fit);
    settings.memlock = &memlock;
    settings.key = key;
    settings.seal = options.seal;
    // The one ladder of fall-backs (proto::fall_back): a receiver that lacks a term of our
    // first message refuses it before any file, and the command connects again without it,
    // the newest first: BLAKE3 (7.10: the fs-verity digest instead), the digest at the end
    // (7.9: each file hashed first), version 2 itself (7.1: the one file over version 1).
    proto::SessionTerms terms{proto::kVersion2, sendable.algorithm, at_end};
    for (;;) {
      settings.version = terms.version;
      settings.digest_at_end = terms.digest_at_end;
      // Striping needs version 2 and one receiver (7.12); a fall-back to version 1 sends on one.
      const std::uint64_t stripe_min =
          stripes && terms.version == proto::kVersion2 ? options.stripe_min : 0;
      TransferRun run(options, settings, sendable, share_out(sendable, fitting, stripe_min),
                      progress);
      summary.lead = run.run();
      summary.data_seconds += run.data_seconds();
      summary.connect_seconds = run.connect_seconds();
      summary.bytes += run.bytes();
      summary.connections = run.connection_shares();
      secret = run.secret();
      const auto refused = run.refused();
      if (!refused) break;
      const auto next =
          proto::fall_back(terms, *refused, version1_can_send(sendable), key != nullptr);
      if (!next) break;
      say_falling_back(terms, *next, options.digest_chosen);
      for (auto& r : sendable.results)
        if (r.status != EntryResult::Status::Good) r = EntryResult{.receiver = r.receiver};
      if (next->algorithm != terms.algorithm) {
        sendable.algorithm = next->algorithm;
        plan.algorithm = sendable.algorithm;
        for (auto& entry : sendable.entries) {  // one algorithm's digests say nothing of another's
          entry.digest = {};
          entry.digest_known = false;
          entry.digest_from_cache = false;
        }
      }
      terms = *next;
      double seconds = 0;
      std::size_t cached = 0;
      hash_files(options, sendable,
                 terms.version == proto::kVersion1 ? progress : ProgressMode::Off, seconds, cached,
                 !terms.digest_at_end);
      summary.hash_seconds += seconds;
    }
    remember_learned(options, sendable);
    // Version 1 cannot authenticate: a sender with a key sends nothing to such a receiver.
    if (summary.lead == proto::SenderOutcome::VersionUnsupported && key != nullptr) {
      spdlog::error(
          "the receiver speaks only protocol version 1, which cannot prove that it holds our "
          "key (--key-file): nothing was sent");
      summary.lead = proto::SenderOutcome::AuthFailed;
    }
    // The entries too: a digest learned at the end of its file (7.9) is reported.
    for (std::size_t j = 0; j < origin.size(); ++j) {
      plan.entries[origin[j]] = sendable.entries[j];
      plan.results[origin[j]] = sendable.results[j];
    }
  }
  if (summary.lead == proto::SenderOutcome::VersionUnsupported) {
    spdlog::error(
        "the receiver speaks only protocol version 1, which carries one file per connection "
        "and no directories: send the files one by one");
    for (auto& r : plan.results)
      if (r.status == EntryResult::Status::NotSent) r.outcome = summary.lead;
  }
  summary.total_seconds = seconds_since(t0);
  const int rc = exit_status(plan, summary);
  summarize(plan, summary, rc);
  if (options.json) {
    std::puts(to_json(plan, summary, rc, secret).c_str());
  } else if (lines) {
    lines->finish(plan, summary, rc, secret);
  } else if (rc == kExitSuccess && !secret.empty()) {
    std::fwrite(secret.data(), 1, secret.size(), stdout);
    std::fputc('\n', stdout);
  }
  return rc;
}

}  // namespace rdmax::sender
