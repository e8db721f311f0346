#pragma once
// What the sender's connection (sender/connection.hpp) and its parts raise to its machines:
// an event and the data it carries, and the hooks the parts reach the connection through.

#include <cstdint>
#include <functional>
#include <string>
#include <variant>

#include "protocol/sender_machine.hpp"
#include "protocol/wire.hpp"

namespace rdmax::sender {

struct SenderInput {
  struct Abort {  // why the sender ends the connection; SendError sends it
    proto::ErrorCode code;
    std::string text;
  };
  // Every entry of the session is settled (proto::session_settled).
  struct Settled {
    bool all_good;
  };
  // GotAnswer's message: an answer about the session's entries or window.
  using Answer = std::variant<proto::Credit, proto::Take, proto::Resume, proto::Have, proto::Holds,
                              proto::Refuse, proto::FileVerdict>;
  // rdma_cm's look-ups go to the set-up machine, the rest to the connection's; pump() says
  // when the session's entries are all settled.
  std::variant<proto::SenderEvent, proto::SetupEvent, Settled> event;
  // In the order of proto::SenderData.
  using Data =
      std::variant<std::monostate, proto::Accept, proto::Reject, Answer, proto::Secret, Abort>;
  Data data;
  proto::ReceiverProof proof = proto::ReceiverProof::NotDue;  // with a GotProof or GotAccept
};

template <proto::SenderData Kind>
using SenderDataOf = std::variant_alternative_t<static_cast<std::size_t>(Kind), SenderInput::Data>;

// An event of the connection's machine with exactly the data proto::carried_by() names for it
// (and for what the check of the receiver's Proof found); an action reads it with
// data_for<Action>(). The machine's table is checked against both when it compiles.
template <proto::SenderEvent Event, proto::ReceiverProof Proof = proto::ReceiverProof::NotDue>
requires(proto::carried_by(Event, Proof) == proto::SenderData::None) SenderInput input() {
  return {Event, {}, Proof};
}
template <proto::SenderEvent Event, proto::ReceiverProof Proof = proto::ReceiverProof::NotDue>
requires(proto::carried_by(Event, Proof) != proto::SenderData::None) SenderInput
    input(SenderDataOf<proto::carried_by(Event, Proof)> data) {
  return {Event, std::move(data), Proof};
}

template <proto::SenderAction Action>
auto& data_for(SenderInput& cause) {
  return std::get<static_cast<std::size_t>(proto::needed_by(Action))>(cause.data);
}

// What the connection's parts (its entries, its window) need of it.
struct SenderHooks {
  std::function<void(const std::string&)> violation;  // the receiver broke the rules
  std::function<void(SenderInput)> raise;             // the machine's next input
  // A message to the receiver; a FileChunk's `tag` is its slot + 1 (0: a control message).
  std::function<void(const proto::Message&, std::uint64_t tag)> send;
  std::function<void()> pump;  // send what is due now (only InSession)
  // Runs a job's completion on the loop under the connection's failure policy, if the
  // session is still on.
  std::function<void(const std::function<void()>&)> in_session;
};

}  // namespace rdmax::sender
