#pragma once
// What an entry of a session (receiver/incoming_entry.hpp) needs of the session it is part
// of, and no more: the way back to its connection (send a message, raise the machine's next
// input, run a job's completion while the session is on), what the daemon shares (the
// context), the session's terms for its file, and itself again by number once a job is done
// (settled meanwhile, it is gone). The entries never see the connection or the collection
// that holds them: no circle between them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/work/work_pool.hpp"
#include "protocol/wire.hpp"
#include "receiver/receiver_input.hpp"

namespace rdmax::receiver {

class IncomingEntry;

// What the entries need of their connection.
struct EntryHooks {
  std::function<void(ReceiverInput)> raise;         // the machine's next input
  std::function<void(const proto::Message&)> send;  // a message to the sender
  std::function<void(const char*, std::chrono::steady_clock::duration)> expect;
  std::function<void(const char*)> expect_own_work;  // no deadline while we work
  // Runs a job's completion on the loop under the connection's failure policy, if the
  // session is still on.
  std::function<void(const std::function<void()>&)> in_session;
  std::function<void()> committed;  // a commit finished (a shutdown may wait for it)
};

struct EntryPort {
  ReceiverContext& context;
  const std::string& label;
  const EntryHooks& hooks;
  proto::DigestAlgorithm algorithm{};
  bool offers_metadata = false;   // the Offers carry mode and time (a Hello's does not)
  std::uint32_t write_lanes = 1;  // as many chunks of one file written at once as the window holds
  WorkQueue* directories = nullptr;  // directories made and what is held looked for, in order
  std::function<IncomingEntry*(std::uint32_t)> find;

  // Runs `then` on the entry `id` once a job of it is done, if the session is on and the
  // entry still in flight.
  void after_job(std::uint32_t id, const std::function<void(IncomingEntry&)>& then) const {
    hooks.in_session([&] {
      if (IncomingEntry* entry = find(id)) then(*entry);
    });
  }
  void raise(ReceiverInput next) const { hooks.raise(std::move(next)); }
  // What an entry's work found, as the machine's next input: its verdict, or its refusal.
  void settle(std::uint32_t id, proto::VerdictCode code) const {
    raise(input<proto::WorkResult::EntrySettled>(ReceiverInput::EntryVerdict{id, code}));
  }
  void refuse(std::uint32_t id, proto::RejectReason reason, std::string text) const {
    raise(input<proto::WorkResult::EntryRefused>(
        ReceiverInput::EntryRefusal{id, reason, std::move(text)}));
  }
};

}  // namespace rdmax::receiver
