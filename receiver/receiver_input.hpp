#pragma once
// What a receiver's connection is given by the daemon (ReceiverContext), and what its parts
// raise to its machine (ReceiverInput): an event and the data it carries.

#include <cstdint>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/crypto/auth_penalties.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/receiver_machine.hpp"
#include "protocol/receiver_rules.hpp"
#include "protocol/secrets.hpp"
#include "protocol/sender_keys.hpp"
#include "protocol/wire.hpp"
#include "receiver/entry_report.hpp"
#include "receiver/metrics.hpp"
#include "receiver/options.hpp"
#include "receiver/output_tree.hpp"
#include "receiver/partial_store.hpp"
#include "receiver/space_reservations.hpp"
#include "receiver/store_work.hpp"
#include "receiver/stripe_groups.hpp"

namespace rdmax::receiver {

// What every connection shares with the daemon.
struct ReceiverContext {
  const ReceiverOptions& options;
  int dir_fd;
  const proto::SecretStore* secrets;  // null: every id is denied
  WorkPool& pool;
  ReceiverMetrics& metrics;  // what rdma-recv --metrics shows, and the status line's totals
  std::uint64_t window_bytes_in_use = 0;  // registered by all connections, vs --max-memory
  // Bytes of files being received that no preallocation reserved yet on the disk: the
  // free-space check of the next file counts them as taken (receiver/space_reservations.hpp).
  SpaceReservations space{};
  PartialStore* partials = nullptr;  // null: --no-partial (receiver/partial_store.hpp)
  // --senders: null, every sender gets in; else each proves a key first (PROTOCOL.md 7.8).
  const proto::SenderKeyStore* sender_keys = nullptr;
  AuthPenalties* penalties = nullptr;  // where failed authentications are counted
  // One file over several connections (PROTOCOL.md 7.12): null, no connection stripes.
  StripeGroups* stripe_groups = nullptr;
  // A fetch (rdma-recv --from, docs/PROTOCOL.md 7.13): the names its Wants arrive as (the
  // last component of each path); an Offer whose first component is none of them is refused.
  // Empty: any name (the Wants named ".", all of the export). Null: not a fetch.
  const std::set<std::string>* fetched_names = nullptr;
  // Not null (a fetch over several connections): a directory entry is made, and its mode
  // and time recorded here for the owner to set once every connection ended.
  std::vector<DeferredDirectory>* deferred_directories = nullptr;
  // Not null (rdma-recv --from --json, --json-lines): told of every entry as it ends here.
  const EntryReports* reports = nullptr;
  // How each file's chunks are written and hashed (receiver/store_work.hpp). Empty: the real
  // write and digest, rdma-recv's; the pipeline benchmark gives stand-ins.
  StoreWork work{};
};

// An event and the data it carries (docs/PROTOCOL.md 7.5 names the messages). Made by
// input<What>(data), which takes for each event exactly the data proto::carried_by() names;
// an action reads it with data_for<Action>(), whose type proto::needed_by() names. The
// machine's table is checked against both when it compiles (protocol/receiver_machine.hpp).
struct ReceiverInput {
  struct AcceptedOpen {  // an Open that passed its checks, and the window it is granted
    proto::Open open;
    std::uint32_t slots;
    std::uint64_t window_bytes;
    proto::ExtensionsRead extensions;  // what its extensions ask for
  };
  struct Rejection {
    proto::RejectReason reason;
    std::string text;
  };
  struct EntryTaken {
    std::uint32_t entry;
  };
  // The digest at the end (PROTOCOL.md 7.9): what is here of a file offered without its digest.
  struct EntryHeld {
    std::uint32_t entry;
    std::uint64_t length;
    proto::Digest digest;
  };
  // The outcome of an entry's check or verification.
  struct EntryRefusal {
    std::uint32_t entry;
    proto::RejectReason reason;
    std::string text;
  };
  struct StoredSlot {
    std::uint32_t slot;
    std::uint32_t entry;  // whose chunk it held
  };
  struct EntryVerdict {
    std::uint32_t entry;
    proto::VerdictCode code;
  };
  struct Abort {  // why the receiver ends the connection; SendError sends it
    proto::ErrorCode code;
    std::string text;
  };
  // In the order of proto::ReceiverData.
  using Data = std::variant<std::monostate, AcceptedOpen, Rejection, proto::Offer, proto::FileChunk,
                            proto::FileDone, proto::Continue, proto::FileAbort, proto::Join,
                            EntryTaken, EntryHeld, EntryRefusal, StoredSlot, EntryVerdict, Abort>;

  // An event of the connection's machine, or a result of the entries' work (InSession's:
  // proto::session_result).
  std::variant<proto::ReceiverEvent, proto::WorkResult> event;
  Data data;
  proto::ReceiverChecks checks{};  // with GotOpen, GotProof, GotId: what their check found
};

template <proto::ReceiverData Kind>
using ReceiverDataOf =
    std::variant_alternative_t<static_cast<std::size_t>(Kind), ReceiverInput::Data>;

// `What`: a proto::ReceiverEvent or a proto::WorkResult; `Check`: what the check of an Open
// or a Proof found; `id`, `entries`: what looking an Id up found, and where the entries stood
// (with an Id or a Bye).
template <auto What, proto::OpenCheck Check = proto::OpenCheck::NotChecked>
requires(proto::carried_by(What, Check) == proto::ReceiverData::None) ReceiverInput
    input(proto::IdLookup id = proto::IdLookup::NotLookedUp,
          proto::SessionEnd entries = proto::SessionEnd::NotChecked) {
  return {What, {}, {Check, id, entries}};
}
template <auto What, proto::OpenCheck Check = proto::OpenCheck::NotChecked>
requires(proto::carried_by(What, Check) != proto::ReceiverData::None) ReceiverInput
    input(ReceiverDataOf<proto::carried_by(What, Check)> data) {
  return {What, std::move(data), {Check}};
}

template <proto::ReceiverAction Action>
const auto& data_for(const ReceiverInput& cause) {
  return std::get<static_cast<std::size_t>(proto::needed_by(Action))>(cause.data);
}

}  // namespace rdmax::receiver
