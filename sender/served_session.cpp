#include "sender/served_session.hpp"

#include <algorithm>

namespace rdmax::sender {

ServedSession::ServedSession(ServedTree share, Transport& wire, const ServeSettings& settings,
                             std::string label, const proto::SealKey* chunk_key)
    : share_(std::move(share)), plan_(plan_of(share_.tree, settings.algorithm)), wire_(wire) {
  plan_.source_dir = share_.root.get();
  for (PlannedEntry& e : plan_.entries) e.digest_known = e.kind != proto::EntryKind::File;
  settings_.timeout = settings.timeout;
  settings_.shared_bwlimit = settings.bwlimit;
  settings_.seal = false;  // sealed below the session where the fetch's proofs asked (7.13)
  settings_.proven_chunk_key = chunk_key;
  settings_.digest_at_end = true;
  settings_.pool = settings.pool;
  settings_.memlock = settings.memlock;
  std::vector<std::uint32_t> entries(plan_.entries.size());
  for (std::uint32_t i = 0; i < entries.size(); ++i) entries[i] = i;  // directories last
  connection_ = std::make_unique<Connection>(settings_, plan_, std::move(entries),
                                             static_cast<SenderCm&>(*this), std::move(label));
}

std::size_t ServedSession::good() const {
  return static_cast<std::size_t>(
      std::count_if(plan_.results.begin(), plan_.results.end(),
                    [](const EntryResult& r) { return r.status == EntryResult::Status::Good; }));
}

std::size_t ServedSession::files_sent() const {
  std::size_t files = 0;
  for (std::size_t i = 0; i < plan_.results.size(); ++i) {
    const EntryResult& r = plan_.results[i];
    if (r.status == EntryResult::Status::Good && !r.identical &&
        plan_.entries[i].kind == proto::EntryKind::File)
      ++files;
  }
  return files;
}

std::uint64_t ServedSession::bytes_sent() const {
  std::uint64_t bytes = 0;
  for (const EntryResult& r : plan_.results) bytes += r.bytes;
  return bytes;
}

}  // namespace rdmax::sender
