#include "sender/transfer_run.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/cli/error_hints.hpp"
#include "common/rdma/devices.hpp"
#include "sender/cm_delivery.hpp"
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

// One connection: its cm_id (until its transport takes it), transport and driver.
struct TransferRun::Link final : SenderCm {
  TransferRun& run;
  std::size_t index;
  const Receiver& receiver;           // the rdma-recv it connects to (-H)
  std::optional<std::string> device;  // -d: the device it must use
  std::optional<std::string> source;  // and the address it connects from
  std::optional<CmId> id;
  rdma_cm_id* raw = nullptr;
  std::unique_ptr<RdmaTransport> transport;
  // A receiver of protocol version 1: the wire speaks it, the driver a session of one entry.
  std::unique_ptr<Version1Transport> version1;
  std::unique_ptr<Connection> driver;

  Link(TransferRun& r, std::size_t i, const Receiver& to) : run(r), index(i), receiver(to) {}
  void resolve_route() override { id->resolve_route(ms(run.options_.connect_timeout)); }
  Transport& connect() override {
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
  // -H HOST1,HOST2: connection i goes to receiver i mod their number (the command's
  // connections were raised to one per receiver at least).
  receivers_ = options.receivers;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    const Receiver& to = receivers_[i % receivers_.size()];
    const std::string peer = host_and_port(to.host, to.port);
    auto link = std::make_unique<Link>(*this, i, to);
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
    link->driver =
        std::make_unique<Connection>(settings_[i], plan_, std::move(shares[i]), *link,
                                     shares.size() > 1 ? peer + "#" + std::to_string(i + 1) : peer);
    links_.push_back(std::move(link));
  }
  if (progress != ProgressMode::Off) {
    progress_.emplace(progress, "sending", total_bytes_);
    show_files_settled();
  }
}

TransferRun::~TransferRun() = default;

proto::SenderOutcome TransferRun::run() {
  for (auto& link : links_) {
    link->driver->start();
    try {
      link->id->resolve_addr(link->receiver.host.c_str(), link->receiver.port,
                             ms(options_.connect_timeout),
                             link->source ? link->source->c_str() : nullptr);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      link->driver->on_connect_failed(e.what());
    }
  }
  update_lead();
  loop_.run(
      [this] {
        return std::all_of(links_.begin(), links_.end(),
                           [](const auto& l) { return l->driver->finished(); });
      },
      [this] {
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
    if (link->driver->finished()) continue;
    if (const auto at = link->driver->resume_at(); at && (!first || *at < *first)) first = at;
  }
  if (first) loop_.wake_at(*first);
}

void TransferRun::update_lead() {
  // The lead's directories and its end wait for every other connection.
  std::uint32_t failures = 0;
  for (std::size_t i = 1; i < links_.size(); ++i) {
    if (!links_[i]->driver->finished()) return;
    failures += links_[i]->driver->figures().failures;
  }
  links_.front()->driver->others_finished(failures);
}

void TransferRun::on_tick(EventLoop::Clock::time_point now) {
  for (auto& link : links_) link->driver->tick(now);
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
                     {status, link.id ? &*link.id : nullptr, link.device, link.receiver.host,
                      link.receiver.port, said});
  }
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

// For the progress bar: what is on the receiver, including what it had before this run
// (files it had whole, the prefixes it resumed from).
std::uint64_t TransferRun::bytes_there() const {
  std::uint64_t sum = bytes();
  for (std::size_t i = 0; i < plan_.entries.size(); ++i)
    sum += plan_.results[i].identical ? plan_.entries[i].size : plan_.results[i].resumed_from;
  return sum;
}

}  // namespace rdmax::sender
