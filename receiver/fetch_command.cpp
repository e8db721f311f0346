#include "receiver/fetch_command.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/cli/error_hints.hpp"
#include "common/crypto/key_files.hpp"
#include "common/os/event_loop.hpp"
#include "common/rdma/cm_delivery.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/rdma_transport.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/sizes.hpp"
#include "receiver/connection.hpp"
#include "receiver/fetch_intake.hpp"
#include "receiver/fetch_list.hpp"
#include "receiver/fetch_report.hpp"
#include "receiver/metrics.hpp"
#include "receiver/output_tree.hpp"
#include "receiver/partial_store.hpp"
#include "receiver/receiver_input.hpp"
// A fetch exits as a push would (the wish, and one table for scripts to read).
#include "sender/exit_codes.hpp"

namespace rdmax::receiver {

namespace {
constexpr auto kFetchTick = std::chrono::milliseconds(100);
// How long disk work still running at the end may take before the command exits regardless.
constexpr auto kFetchDiskGrace = std::chrono::seconds(10);

std::chrono::milliseconds ms(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(s);
}

// The names what the PATHs name arrives as: each one's last component, or a listed path's
// first (it arrives under its whole path); none where one is "." (all of the export: any
// name).
std::set<std::string> names_asked(const FetchOptions& f) {
  std::set<std::string> names;
  for (std::string path : f.paths) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path == ".") return {};
    names.insert(f.files_from ? path.substr(0, path.find('/')) : path.substr(path.rfind('/') + 1));
  }
  return names;
}

// What connection `link` of `links` asks for: the PATHs, the --shard share, and with -P N
// its part of that share (docs/PROTOCOL.md 7.13, "Shares"): the server cuts the share again
// by the same rule, so the parts together are the share whatever N is, and a job's fetchers
// may each use their own -P (or run again with another).
FetchAsk ask_of(const ReceiverOptions& options, std::uint32_t link, std::uint32_t links) {
  const FetchOptions& f = *options.fetch;
  FetchAsk ask;
  for (const std::string& path : f.paths)
    ask.wants.push_back({false, f.recursive, path, f.files_from.has_value()});
  ask.wants.back().last = true;
  ask.shard_index = f.shard_index;
  ask.shard_count = f.shard_count;
  if (links > 1) ask.part = {link, links};
  ask.timeout = options.timeout;
  return ask;
}

class FetchRun {
 public:
  FetchRun(const ReceiverOptions& options, Fd dest, const proto::SenderKey* key)
      : options_(options),
        fetch_(*options.fetch),
        dest_(std::move(dest)),
        names_(names_asked(*options.fetch)),
        pool_(options.workers),
        context_{options_, dest_.get(), nullptr, pool_, metrics_, 0},
        loop_(kFetchTick) {
    context_.fetched_names = &names_;
    // Several connections make the same directories: each directory's mode and time wait for
    // the end, or one connection's read-only directory would refuse another's files, and its
    // files would change the time one connection set.
    if (fetch_.connections > 1) context_.deferred_directories = &directories_;
    if (fetch_.json || fetch_.json_lines) {
      report_.emplace(std::cout,
                      fetch_.json ? FetchReport::Mode::Json : FetchReport::Mode::JsonLines);
      tell_ = [this](EntryReport entry) { report_->add(std::move(entry)); };
      context_.reports = &tell_;
    }
    if (options_.partials) {
      partials_.emplace(dest_.get(),
                        PartialStore::Limits{options_.partial_ttl, options_.partial_max});
      context_.partials = &*partials_;
    }
    channel_.set_nonblocking();
    loop_.watch(channel_.fd(), [this] { on_cm_events(); });
    loop_.watch(pool_.ready_fd(), [this] { pool_.run_completions(); });
    loop_.on_signal([this](int sig) {
      spdlog::warn("signal {}: stopping (what arrived is kept: the same command continues)", sig);
      interrupted_ = true;
      for (auto& link : links_) link->interrupt(sig);
    });
    loop_.on_tick([this](EventLoop::Clock::time_point now) {
      for (auto& link : links_) link->tick(now);
    });
    for (std::uint32_t i = 0; i < fetch_.connections; ++i)
      links_.push_back(std::make_unique<Link>(*this, i, key));
  }

  ~FetchRun() { links_.clear(); }

  int run() {
    for (auto& link : links_) link->start();
    loop_.run(
        [this] {
          for (const auto& link : links_)
            if (!link->finished()) return false;
          return true;
        },
        [this] {
          for (auto& link : links_) link->first_poll();
        });
    if (!wait_for_disk_work()) {
      // A worker is stuck in the kernel (a hung file system) and still uses the session's
      // memory: leave without destructors, as the daemon does.
      spdlog::shutdown();
      std::_Exit(sender::kExitOther);
    }
    apply_directory_attributes();
    const int code = report();
    if (report_)
      report_->finish(
          {code, links_.size(),
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(),
           error_});
    return code;
  }

 private:
  // One connection: its intake until the server's Open, then the receiver's driver.
  class Link final : public FetchCm {
   public:
    Link(FetchRun& run, std::uint32_t index, const proto::SenderKey* key)
        : run_(run), ask_(ask_of(run.options_, index, run.fetch_.connections)) {
      ask_.key = key;
      intake_ = std::make_unique<FetchIntake>(ask_, static_cast<FetchCm&>(*this),
                                              host_and_port(run.fetch_.host, run.fetch_.port),
                                              [this] { receive(); });
    }
    ~Link() {
      session_.reset();
      intake_.reset();
    }

    void start() {
      id_.emplace(run_.channel_);
      raw_ = id_->get();
      intake_->start();
      try {
        id_->resolve_addr(run_.fetch_.host.c_str(), run_.fetch_.port, ms(run_.options_.timeout));
      } catch (const std::exception& e) {
        intake_->on_connect_failed(e.what());
      }
    }
    void interrupt(int sig) {
      if (session_)
        session_->shut_down();
      else
        intake_->interrupt(sig);
    }
    void tick(EventLoop::Clock::time_point now) {
      if (session_)
        session_->tick(now);
      else
        intake_->tick(now);
    }
    // The session's first poll, out of the intake's: the Open waits in its wire.
    void first_poll() {
      if (first_poll_due_ && session_) {
        first_poll_due_ = false;
        session_->poll();
      }
    }
    bool finished() const { return session_ ? session_->closed() : intake_->finished(); }
    bool owns(rdma_cm_id* id) const { return id == raw_; }
    void on_cm_event(rdma_cm_event_type type, int status, const std::string& said) {
      if (!session_) {
        deliver_cm_event(*intake_, type,
                         {status, id_ ? &*id_ : nullptr, std::nullopt, run_.fetch_.host,
                          run_.fetch_.port, said});
        return;
      }
      if (type == RDMA_CM_EVENT_DISCONNECTED) session_->on_disconnected();
      if (type == RDMA_CM_EVENT_DEVICE_REMOVAL)
        session_->on_cm_failure("the RDMA device was removed");
    }
    Connection* session() const { return session_.get(); }
    const FetchIntake& intake() const { return *intake_; }

   private:
    void resolve_route() override { id_->resolve_route(ms(run_.options_.timeout)); }
    Transport& connect() override {
      // Posted before rdma_connect (docs/PROTOCOL.md 7.13: slot_count + 4 at least).
      const std::uint32_t depth = control_depth(run_.options_.slots);
      transport_ =
          std::make_unique<RdmaTransport>(std::move(*id_), RdmaTransport::Depths{depth, depth, 0});
      id_.reset();
      run_.loop_.watch(transport_->completion_fd(), [this] {
        if (session_)
          session_->poll();
        else
          intake_->poll();
      });
      transport_->connect();
      return *transport_;
    }
    // The server's Open came: the receiver's driver takes the connection.
    void receive() {
      session_ = std::make_unique<Connection>(intake_->wire(), intake_->label(), run_.context_);
      if (const proto::SealKey* key = intake_->chunk_key()) session_->chunks_sealed_with(*key);
      session_->on_established();
      first_poll_due_ = true;
    }

    FetchRun& run_;
    FetchAsk ask_;
    std::optional<CmId> id_;  // until the transport takes it
    rdma_cm_id* raw_ = nullptr;
    std::unique_ptr<RdmaTransport> transport_;
    std::unique_ptr<FetchIntake> intake_;
    std::unique_ptr<Connection> session_;
    bool first_poll_due_ = false;
  };

  void on_cm_events() {
    while (auto event = channel_.try_get()) {
      const rdma_cm_event_type type = event->type();
      const int status = event->status();
      rdma_cm_id* const id = event->id();
      const std::string said = cm_reject_words(event->get());
      event->ack();
      spdlog::debug("cm event {} (status {})", rdma_event_str(type), status);
      for (auto& link : links_)
        if (link->owns(id)) link->on_cm_event(type, status, said);
    }
  }

  bool disk_idle() const {
    for (const auto& link : links_)
      if (link->session() && !link->session()->idle()) return false;
    return true;
  }

  bool wait_for_disk_work() {
    if (disk_idle()) return true;
    for (auto& link : links_)
      if (link->session() && !link->session()->idle()) link->session()->abandon();
    const auto give_up = std::chrono::steady_clock::now() + kFetchDiskGrace;
    while (!disk_idle()) {
      if (std::chrono::steady_clock::now() > give_up) {
        spdlog::error("a disk operation has not finished after {}s; exiting without it",
                      kFetchDiskGrace.count());
        return false;
      }
      pollfd fd{pool_.ready_fd(), POLLIN, 0};
      ::poll(&fd, 1, 1000);
      pool_.run_completions();
    }
    return true;
  }

  // -P N: the directories' modes and times, once no connection writes beneath them.
  void apply_directory_attributes() {
    if (set_deferred_directories(dest_.get(), std::move(directories_)) > 0)
      directory_failed_ = true;
  }

  // The summary line, and the exit status.
  int report() {
    bool any_session = false;
    bool all_settled = true;
    for (const auto& link : links_) {
      if (link->session()) {
        any_session = true;
        if (link->session()->session_end() != proto::SessionEnd::Settled) all_settled = false;
        continue;
      }
      // A connection that ended before a session: refused, failed, or its share was empty.
      if (link->intake().outcome() != proto::SenderOutcome::Success) {
        error_ = link->intake().server_said().empty()
                     ? std::string(proto::to_string(link->intake().outcome()))
                     : link->intake().server_said();
        return sender::exit_code_for(link->intake().outcome());
      }
    }
    if (!any_session) {
      spdlog::info("nothing to fetch");
      return sender::kExitSuccess;
    }
    const auto good = metrics_.files(FileOutcome::Good);
    const auto identical = metrics_.files(FileOutcome::Identical);
    const auto bad = metrics_.files(FileOutcome::BadDigest) + metrics_.files(FileOutcome::BadSize);
    const auto failed =
        bad + metrics_.files(FileOutcome::StorageError) + metrics_.files(FileOutcome::Abandoned);
    const auto refused = metrics_.files_refused();
    spdlog::info("fetched {} file(s), {}; {} already here; {} failed, {} refused", good,
                 proto::format_size(metrics_.written_bytes.load()), identical, failed, refused);
    if (all_settled && failed == 0 && refused == 0 && !directory_failed_)
      return sender::kExitSuccess;
    if (bad > 0) return sender::kExitHashMismatch;
    if (refused > 0) return sender::kExitRejected;
    if (all_settled) return sender::kExitOther;
    if (interrupted_) return sender::kExitOther;
    // A server that failed, or either side finding the other broke the rules, is not fixed
    // by running again (1); a connection lost, a timeout or a server stopping may be (3).
    for (const auto& link : links_) {
      const Connection* session = link->session();
      if (!session || session->session_end()) continue;
      const auto cut = session->cut();
      const bool retry = !cut || cut->code == proto::ErrorCode::Timeout ||
                         cut->code == proto::ErrorCode::ShuttingDown;
      if (retry) continue;
      error_ = cut->by_peer ? std::string("the server aborted: ") + proto::to_string(cut->code)
                            : std::string("the fetch failed: ") + proto::to_string(cut->code);
      spdlog::error("the fetch did not finish: {}",
                    cut->by_peer ? std::string("the server aborted (") +
                                       proto::to_string(cut->code) + "); see its log"
                    : cut->code == proto::ErrorCode::ProtocolViolation
                        ? std::string("the server broke the protocol (see above)")
                        : std::string("this side failed (see above)"));
      return sender::kExitOther;
    }
    spdlog::error(
        "the fetch did not finish: run the same command again to fetch the rest (what arrived "
        "is kept)");
    error_ = "the fetch did not finish (run it again to fetch the rest)";
    return sender::kExitConnection;
  }

  const ReceiverOptions& options_;
  const FetchOptions& fetch_;
  Fd dest_;
  std::set<std::string> names_;  // what the Offers may arrive as (ReceiverContext)
  WorkPool pool_;                // outlives the sessions (their files' queues)
  std::optional<PartialStore> partials_;
  ReceiverMetrics metrics_;
  ReceiverContext context_;
  std::vector<DeferredDirectory> directories_;  // -P N: set at the end
  std::optional<FetchReport> report_;           // --json, --json-lines
  EntryReports tell_;                           // what context_.reports calls
  std::string error_;                           // for the report: why it failed, if it did
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool directory_failed_ = false;
  EventLoop loop_;
  EventChannel channel_;
  std::vector<std::unique_ptr<Link>> links_;  // after the channel: destroyed before it
  bool interrupted_ = false;
};

}  // namespace

int run_fetch(const ReceiverOptions& given, Fd dest) {
  ReceiverOptions options = given;
  FetchOptions& fetch = *options.fetch;
  // A usage error before anything connects, told in the report too.
  const auto usage_error = [&](const std::string& text, const char* remedy) {
    spdlog::error("{}{}", text, remedy);
    if (fetch.json || fetch.json_lines)
      FetchReport(std::cout, fetch.json ? FetchReport::Mode::Json : FetchReport::Mode::JsonLines)
          .finish({sender::kExitUsage, 0, 0, text});
    return sender::kExitUsage;
  };
  // The list and the key are local input.
  // (What is read from `given`, not the copy: GCC 12 takes the copy's optionals for
  // uninitialised.)
  if (given.fetch->files_from) {
    try {
      fetch.paths = fetch_list_paths(
          split_file_list(read_file_list(*given.fetch->files_from), given.fetch->from0));
    } catch (const FileListError& e) {
      return usage_error(e.what(), "");
    }
  }
  std::optional<proto::SenderKey> key;
  if (given.fetch->key_file) {
    try {
      key = load_key_file(*given.fetch->key_file);
    } catch (const std::exception& e) {
      return usage_error(e.what(), "; fix the key file (docs/SECURITY.md)");
    }
  }
  FetchRun run(options, std::move(dest), key ? &*key : nullptr);
  return run.run();
}

}  // namespace rdmax::receiver
