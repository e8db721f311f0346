#pragma once
// rdma-send's wiring for version-2 sessions (one file is a session of one entry): the process's
// event loop (common/os/event_loop.hpp) over one CM event channel and every connection's completion
// fd, driving N SessionConnections at once
// (-P/--parallel, on one device or several: -d DEV1,DEV2; to one receiver or several:
// -H HOST1,HOST2, connection i to receiver i mod their number). The first connection is the
// lead: it carries the directories, which it offers only once the files of every
// connection are settled (so that their times stick), and the id, which it presents only
// when every entry of the command is good. The others say Bye after their last entry.
//
// Lifecycle: made by sender/transfer_command.cpp once the plan is hashed (or, with the
// digest at the end, only walked); run() starts every connection's address resolution and
// turns the loop until each connection is Done, then returns the lead's outcome, and the
// caller reads the figures and the plan's results for the report. A run is used once. The
// command makes another when the receiver refused a term this one asked (refused(): BLAKE3,
// the digest at the end, or version 2, whose run then carries the one file over a transport
// that speaks version 1).

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/os/event_loop.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/rdma_transport.hpp"
#include "protocol/stripe_plan.hpp"
#include "protocol/transfer_rules.hpp"
#include "sender/connection.hpp"
#include "sender/options.hpp"
#include "sender/progress_bar.hpp"
#include "sender/rate_limit.hpp"
#include "sender/report.hpp"
#include "sender/stripe_link.hpp"
#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

class TransferRun {
 public:
  // shares[i]: the plan's entries for connection i (the lead's directories last).
  TransferRun(const SenderOptions& options, const SenderSettings& settings, TransferPlan& plan,
              std::vector<std::vector<std::uint32_t>> shares, ProgressMode progress);
  ~TransferRun();
  // Runs every connection to its end. Returns the lead's outcome: VersionUnsupported when
  // the receiver speaks only version 1 (nothing was sent), else what the entries' results
  // say.
  proto::SenderOutcome run();
  const std::string& secret() const;
  double connect_seconds() const;
  // The data phase over every connection: the first Accept to the last FileDone (0: no
  // data was sent).
  double data_seconds() const;
  std::uint64_t bytes() const;  // written in this run
  std::vector<ConnectionShare> connection_shares() const;
  // What a receiver refused of the terms the run asked (BLAKE3, 7.10; the digest at the end,
  // 7.9; version 2 itself, 7.1), before any file: the command connects again without it
  // (proto::fall_back). None: the run went as asked, for better or worse.
  std::optional<proto::TermRefused> refused() const;

 private:
  std::uint64_t bytes_there() const;  // and what the receiver had before (resume)
  struct Link;
  // One file over several connections (docs/PROTOCOL.md 7.12): the files of the lead's share
  // of at least --stripe-min, each one's plan once the lead's entry is taken, and which
  // members joined it. Connections with no share of their own connect only once the lead's
  // receiver said it stripes (their Open has no entry, which only such a receiver takes).
  struct Striped {
    std::shared_ptr<proto::StripePlan> plan;
    std::uint32_t lead_entry = 0;
    std::set<std::size_t> joined;  // members whose joined entry is not settled
  };
  struct LinkStripes;
  std::optional<bool> offer_striped(std::uint32_t index);
  void striped_taken(std::uint32_t index, std::uint32_t entry, std::uint64_t from,
                     std::uint32_t slot_size);
  void joined_settled(std::size_t member, std::uint32_t index, bool good);
  void member_gone(std::size_t member);
  void start_link(Link& link);
  void update_stripes();
  bool link_done(const Link& link) const;
  void on_cm_events();
  void on_tick(EventLoop::Clock::time_point now);
  void update_lead();
  void wake_for_bwlimit();
  // Files whose entry is settled (good, refused or failed), for the progress bar.
  std::size_t files_settled() const;
  void show_files_settled();

  const SenderOptions& options_;
  std::vector<Receiver> receivers_;  // -H: the links refer to these
  TransferPlan& plan_;
  std::uint64_t total_bytes_ = 0;
  std::size_t total_files_ = 0;
  EventLoop loop_;
  // The workers: they read the chunks copied for sending and hash; before the links, whose
  // reads and hashers use it.
  std::optional<WorkPool> pool_;
  std::vector<SenderSettings> settings_;                    // per link (only the lead has the id)
  std::vector<std::unique_ptr<LinkStripes>> link_stripes_;  // each link's StripeLink (7.12)
  EventChannel channel_;
  std::vector<std::unique_ptr<Link>> links_;  // after the channel: destroyed before it
  std::optional<ProgressBar> progress_;
  std::optional<SharedBwlimit> bwlimit_;       // --bwlimit, shared by every connection
  std::size_t first_ticked_ = 0;               // on_tick: the link that asks first this time
  std::set<std::uint32_t> stripe_candidates_;  // plan indices
  std::map<std::uint32_t, Striped> striped_;   // by plan index
  proto::StripeToken stripe_token_{};
  bool stripes_waiting_ = false;  // the lead holds a file back for the members' answers
  bool joins_over_ = false;       // every file to stripe is settled: members may end
};

}  // namespace rdmax::sender
