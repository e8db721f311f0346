#include "sender/transfer_run.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/cli/error_hints.hpp"
#include "common/crypto/auth_proof.hpp"
#include "common/rdma/cm_delivery.hpp"
#include "common/rdma/devices.hpp"
#include "sender/memlock.hpp"
#include "sender/report.hpp"
#include "sender/version1_transport.hpp"

namespace rdmax::sender {

namespace {
constexpr auto kTick = std::chrono::milliseconds(100);

std::chrono::milliseconds ms(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(s);
}
}  // namespace

// What link `index` asks of the run's stripe group (sender/stripe_link.hpp).
struct TransferRun::LinkStripes final : StripeLink {
  TransferRun& run;
  std::size_t index;
  LinkStripes(TransferRun& r, std::size_t i) : run(r), index(i) {}
  proto::StripeGroup group() const override {
    return {run.stripe_token_, static_cast<std::uint16_t>(index),
            static_cast<std::uint16_t>(run.link_stripes_.size())};
  }
  std::optional<bool> offer_striped(std::uint32_t plan_index) override {
    return run.offer_striped(plan_index);
  }
  void striped_taken(std::uint32_t plan_index, std::uint32_t entry, std::uint64_t from,
                     std::uint32_t slot_size) override {
    run.striped_taken(plan_index, entry, from, slot_size);
  }
  void joined_settled(std::uint32_t plan_index, bool good) override {
    run.joined_settled(index, plan_index, good);
  }
};

// One connection: its cm_id (until its transport takes it), transport and driver.
struct TransferRun::Link final : SenderCm {
  TransferRun& run;
  std::size_t index;
  const Receiver& receiver;           // the rdma-recv it connects to (-H)
  std::string address;                // and which of its addresses (HOST+HOST2: rails)
  std::optional<std::string> device;  // -d: the device it must use
  std::optional<std::string> source;  // and the address it connects from
  std::string used_device;            // the device its route went through, once connected
  std::optional<CmId> id;
  rdma_cm_id* raw = nullptr;
  std::unique_ptr<RdmaTransport> transport;
  // A receiver of protocol version 1: the wire speaks it, the driver a session of one entry.
  std::unique_ptr<Version1Transport> version1;
  std::unique_ptr<Connection> driver;
  // A member with no share of its own (7.12): it connects only once the lead's receiver said
  // it stripes, and not at all otherwise.
  bool deferred = false;
  bool started = false;

  Link(TransferRun& r, std::size_t i, const Receiver& to, std::string at)
      : run(r), index(i), receiver(to), address(std::move(at)) {}
  void resolve_route() override { id->resolve_route(ms(run.options_.connect_timeout)); }
  Transport& connect() override {
    if (id->verbs() != nullptr) used_device = ibv_get_device_name(id->verbs()->device);
    transport = std::make_unique<RdmaTransport>(
        std::move(*id),
        RdmaTransport::Depths{kSessionDepths.recv, kSessionDepths.send, kSessionDepths.writes});
    id.reset();
    run.loop_.watch(transport->completion_fd(), [this] { driver->poll(); });
    transport->connect();
    if (run.settings_[index].version != proto::kVersion1) return *transport;
    // Version 1 carries one file, named in its first message.
    version1 =
        std::make_unique<Version1Transport>(*transport, offer_of(0, run.plan_.entries.front()));
    return *version1;
  }
};

TransferRun::TransferRun(const SenderOptions& options, const SenderSettings& settings,
                         TransferPlan& plan, std::vector<std::vector<std::uint32_t>> shares,
                         ProgressMode progress)
    : options_(options), plan_(plan), loop_(kTick) {
  for (const auto& e : plan_.entries) {
    total_bytes_ += e.size;
    if (e.kind == proto::EntryKind::File) ++total_files_;
  }
  channel_.set_nonblocking();
  loop_.watch(channel_.fd(), [this] { on_cm_events(); });
  loop_.on_signal([this](int sig) {
    say_interrupted(sig);
    for (auto& link : links_) link->driver->interrupt(sig);
  });
  loop_.on_tick([this](EventLoop::Clock::time_point now) { on_tick(now); });
  settings_.assign(shares.size(), settings);
  // The workers read the chunks copied for sending (sender/chunk_reads.hpp) and hash the
  // files sent with the digest at the end.
  pool_.emplace(std::max(1U, options.hash_threads));
  loop_.watch(pool_->ready_fd(), [this] { pool_->run_completions(); });
  if (settings.bwlimit) bwlimit_.emplace(*settings.bwlimit);
  for (auto& s : settings_) {
    s.pool = &*pool_;
    s.shared_bwlimit = bwlimit_ ? &*bwlimit_ : nullptr;
  }
  for (std::size_t i = 1; i < settings_.size(); ++i) settings_[i].id.reset();  // the lead's
  // One file over several connections (docs/PROTOCOL.md 7.12): the lead's files of at least
  // --stripe-min, over version 2 to one receiver. The connections form a stripe group even
  // with no such file: the receiver then waits for the group as one (the lead holds its
  // directories and its end until the others are done, however long they take).
  if (shares.size() > 1 && options.receivers.size() == 1 && settings.version == proto::kVersion2) {
    std::uint64_t striped_bytes = 0;
    for (const std::uint32_t index : shares[0]) {
      const PlannedEntry& e = plan_.entries[index];
      if (e.kind == proto::EntryKind::File && e.size >= options.stripe_min && e.size > 0) {
        stripe_candidates_.insert(index);
        striped_bytes += e.size;
      }
    }
    const proto::Nonce random = fresh_nonce();
    std::copy_n(random.begin(), stripe_token_.size(), stripe_token_.begin());
    for (std::size_t i = 0; i < shares.size(); ++i) {
      link_stripes_.push_back(std::make_unique<LinkStripes>(*this, i));
      settings_[i].stripes = link_stripes_.back().get();
      if (i > 0) settings_[i].striped_bytes = striped_bytes;
    }
  }
  // -H HOST1,HOST2: connection i goes to receiver i mod their number, and to that receiver's
  // addresses in turn (HOST+HOST2, its rails); the command's connections were raised to one
  // per address at least.
  receivers_ = options.receivers;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    const Receiver& to = receivers_[i % receivers_.size()];
    const std::string peer = to.name();
    auto link = std::make_unique<Link>(*this, i, to, to.address(i / receivers_.size()));
    // Logs name the address a connection went to (a receiver of several: its rails).
    const std::string label = to.addresses() > 1 ? host_and_port(link->address, to.port) : peer;
    if (!options.devices.empty()) {
      link->device = options.devices[i % options.devices.size()];
      // Connecting from the device's own address makes rdma_cm route through it.
      if (options.devices.size() > 1) link->source = first_ipv4_address(*link->device);
    }
    link->id.emplace(channel_);
    link->raw = link->id->get();
    // Which receiver each entry went to, for the report (settled or not).
    for (const std::uint32_t index : shares[i]) plan_.results[index].receiver = peer;
    settings_[i].hold_for_others = i == 0 && shares.size() > 1;
    link->driver = std::make_unique<Connection>(
        settings_[i], plan_, std::move(shares[i]), *link,
        shares.size() > 1 ? label + "#" + std::to_string(i + 1) : label);
    link->deferred = !link_stripes_.empty() && i > 0 && link->driver->entries().count() == 0;
    links_.push_back(std::move(link));
  }
  if (progress != ProgressMode::Off) {
    progress_.emplace(progress, "sending", total_bytes_);
    show_files_settled();
  }
}

TransferRun::~TransferRun() = default;

void TransferRun::start_link(Link& link) {
  link.started = true;
  link.driver->start();
  try {
    link.id->resolve_addr(link.address.c_str(), link.receiver.port, ms(options_.connect_timeout),
                          link.source ? link.source->c_str() : nullptr);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    link.driver->on_connect_failed(e.what());
  }
}

bool TransferRun::link_done(const Link& link) const {
  return (link.deferred && !link.started) || link.driver->finished();
}

proto::SenderOutcome TransferRun::run() {
  for (auto& link : links_)
    if (!link->deferred) start_link(*link);
  update_lead();
  loop_.run(
      [this] {
        return std::all_of(links_.begin(), links_.end(),
                           [this](const auto& l) { return link_done(*l); });
      },
      [this] {
        update_stripes();
        update_lead();
        wake_for_bwlimit();
      });
  if (progress_) {
    show_files_settled();
    progress_->update(bytes_there());  // the summary line counts what arrived
    if (bytes_there() == total_bytes_)
      progress_->finish();
    else
      progress_->abandon();
  }
  return links_.front()->driver->outcome();
}

// --bwlimit: the next held chunk is due at an exact time, finer than the tick.
void TransferRun::wake_for_bwlimit() {
  std::optional<EventLoop::Clock::time_point> first;
  for (const auto& link : links_) {
    if (link_done(*link)) continue;
    if (const auto at = link->driver->resume_at(); at && (!first || *at < *first)) first = at;
  }
  if (first) loop_.wake_at(*first);
}

void TransferRun::update_lead() {
  // The lead's directories and its end wait for every other connection.
  std::uint32_t failures = 0;
  for (std::size_t i = 1; i < links_.size(); ++i) {
    if (!link_done(*links_[i])) return;
    failures += links_[i]->driver->figures().failures;
  }
  links_.front()->driver->others_finished(failures);
}

void TransferRun::on_tick(EventLoop::Clock::time_point now) {
  // --bwlimit's bucket, refilled, goes to the first connection that asks: they take turns at
  // asking first (each tick starts one further on). Else the lead, ticked first every time,
  // took every chunk's worth and the others sent nothing until its files were done.
  const std::size_t n = links_.size();
  for (std::size_t k = 0; k < n; ++k) links_[(first_ticked_ + k) % n]->driver->tick(now);
  first_ticked_ = (first_ticked_ + 1) % n;
  if (progress_) {
    show_files_settled();
    progress_->update(bytes_there());
  }
}

// A command of several files shows how many are settled beside the bytes; one file, its
// bytes only.
void TransferRun::show_files_settled() {
  if (total_files_ > 1) progress_->set_files(files_settled(), total_files_);
}

std::size_t TransferRun::files_settled() const {
  std::size_t settled = 0;
  for (std::size_t i = 0; i < plan_.entries.size(); ++i) {
    if (plan_.entries[i].kind == proto::EntryKind::File &&
        plan_.results[i].status != EntryResult::Status::NotSent)
      ++settled;
  }
  return settled;
}

void TransferRun::on_cm_events() {
  while (auto event = channel_.try_get()) {
    const rdma_cm_event_type type = event->type();
    const int status = event->status();
    rdma_cm_id* const id = event->id();
    const std::string said = cm_reject_words(event->get());
    event->ack();  // before anything that might destroy the id
    spdlog::debug("cm event {} (status {})", rdma_event_str(type), status);
    auto it =
        std::find_if(links_.begin(), links_.end(), [&](const auto& l) { return l->raw == id; });
    if (it == links_.end()) continue;
    Link& link = **it;
    deliver_cm_event(*link.driver, type,
                     {status, link.id ? &*link.id : nullptr, link.device, link.address,
                      link.receiver.port, said});
  }
}

// --- One file over several connections (docs/PROTOCOL.md 7.12) ---

std::optional<bool> TransferRun::offer_striped(std::uint32_t index) {
  if (!stripe_candidates_.contains(index)) return false;
  Connection& lead = *links_.front()->driver;
  if (!lead.striping()) return false;  // the receiver does not stripe: one connection
  bool waiting = false;
  bool member = false;
  for (std::size_t i = 1; i < links_.size(); ++i) {
    Link& link = *links_[i];
    if (link.deferred && !link.started) {
      start_link(link);  // its Open has no entry: only now that the receiver stripes
      waiting = true;
      continue;
    }
    if (link_done(link)) continue;
    if (link.driver->state() != proto::SenderState::InSession) {
      waiting = true;  // its answer to the Open is not in yet
      continue;
    }
    member = member || (link.driver->striping() && link.driver->slot_size() == lead.slot_size());
  }
  stripes_waiting_ = waiting;
  if (waiting) return std::nullopt;
  return member;
}

void TransferRun::striped_taken(std::uint32_t index, std::uint32_t entry, std::uint64_t from,
                                std::uint32_t slot_size) {
  Connection& lead = *links_.front()->driver;
  Striped& s = striped_[index];
  s.plan = std::make_shared<proto::StripePlan>(plan_.entries[index].size, slot_size, from,
                                               static_cast<std::uint16_t>(links_.size()));
  s.lead_entry = entry;
  if (!lead.entries().ledger().stripe(entry, s.plan)) return;
  for (std::size_t i = 1; i < links_.size(); ++i) {
    Connection& member = *links_[i]->driver;
    if (link_done(*links_[i]) || !member.striping() || member.slot_size() != slot_size) continue;
    member.entries().join(index, lead.entries(), entry, s.plan, static_cast<std::uint16_t>(i));
    s.joined.insert(i);
    member.poke();
  }
  if (auto* e = lead.entries().ledger().entry(entry))
    e->members_pending = static_cast<std::uint32_t>(s.joined.size());
}

void TransferRun::joined_settled(std::size_t member, std::uint32_t index, bool) {
  auto it = striped_.find(index);
  if (it == striped_.end() || it->second.joined.erase(member) == 0) return;
  Connection& lead = *links_.front()->driver;
  if (auto* e = lead.entries().ledger().entry(it->second.lead_entry); e && e->members_pending > 0)
    --e->members_pending;
  lead.poke();  // its FileDone may be due
}

void TransferRun::member_gone(std::size_t member) {
  for (auto& [index, s] : striped_) {
    if (!s.joined.contains(member)) continue;
    (void)s.plan->lose(static_cast<std::uint16_t>(member));  // the receiver interrupts the file
    joined_settled(member, index, false);
  }
}

void TransferRun::update_stripes() {
  if (link_stripes_.empty()) return;
  for (std::size_t i = 1; i < links_.size(); ++i)
    if (link_done(*links_[i])) member_gone(i);
  if (stripes_waiting_ && !links_.front()->driver->finished()) links_.front()->driver->poke();
  // Once every file to stripe is settled (or the lead is gone) no Join can come: the members
  // may say Bye after their own entries.
  if (joins_over_) return;
  const bool over =
      link_done(*links_.front()) ||
      std::all_of(stripe_candidates_.begin(), stripe_candidates_.end(),
                  [this](std::uint32_t index) {
                    return plan_.results[index].status != EntryResult::Status::NotSent;
                  });
  if (!over) return;
  joins_over_ = true;
  for (std::size_t i = 1; i < links_.size(); ++i)
    if (!link_done(*links_[i])) links_[i]->driver->joins_over();
}

std::optional<proto::TermRefused> TransferRun::refused() const {
  // A term any connection was refused (the newer first), or version 2 by the lead's receiver.
  for (const auto term : {proto::TermRefused::Algorithm, proto::TermRefused::DigestAtEnd}) {
    if (std::any_of(links_.begin(), links_.end(),
                    [&](const auto& l) { return l->driver->refused() == term; }))
      return term;
  }
  if (links_.front()->driver->refused() == proto::TermRefused::Version)
    return proto::TermRefused::Version;
  return std::nullopt;
}

const std::string& TransferRun::secret() const {
  return links_.front()->driver->secret();
}

double TransferRun::data_seconds() const {
  std::optional<EventLoop::Clock::time_point> first, last;
  for (const auto& link : links_) {
    const auto span = link->driver->figures().data_span;
    if (!span) continue;
    if (!first || span->first < *first) first = span->first;
    if (!last || span->second > *last) last = span->second;
  }
  return first ? std::chrono::duration<double>(*last - *first).count() : 0;
}

double TransferRun::connect_seconds() const {
  return links_.front()->driver->figures().connect_seconds;
}

std::uint64_t TransferRun::bytes() const {
  std::uint64_t sum = 0;
  for (const auto& link : links_) sum += link->driver->figures().bytes_completed;
  return sum;
}

std::vector<ConnectionShare> TransferRun::connection_shares() const {
  std::vector<ConnectionShare> out;
  for (const auto& link : links_)
    out.push_back({host_and_port(link->address, link->receiver.port), link->used_device,
                   link->driver->figures().bytes_completed});
  return out;
}

// For the progress bar: what is on the receiver, including what it had before this run
// (files it had whole, the prefixes it resumed from).
std::uint64_t TransferRun::bytes_there() const {
  std::uint64_t sum = bytes();
  for (std::size_t i = 0; i < plan_.entries.size(); ++i)
    sum += plan_.results[i].identical ? plan_.entries[i].size : plan_.results[i].resumed_from;
  return sum;
}

}  // namespace rdmax::sender
