// Sender keys (docs/PROTOCOL.md 7.8), the sender's side: the Challenge answered with our
// Proof, the receiver's Proof checked, and an Accept that comes before it refused: not a byte
// of data goes to a receiver that did not prove it holds our key. The machine is told what
// the check found (proto::ReceiverProof) with the GotProof or the GotAccept.

#include <spdlog/spdlog.h>

#include "common/crypto/auth_proof.hpp"
#include "sender/connection.hpp"

namespace rdmax::sender {

// The Challenge, the Proof and an Accept, where a key is at stake: true if handled here.
bool Connection::handle_key_message(proto::Message& message) {
  const bool authenticating = settings_.key != nullptr && state_ == State::AwaitAccept;
  if (const auto* challenge = std::get_if<proto::Challenge>(&message)) {
    // Out of its place the machine names it; in AwaitAccept only a sender that claimed a
    // key is challenged, once: otherwise it is unexpected (handle()).
    if (state_ != State::AwaitAccept || (authenticating && !challenge_)) {
      if (state_ == State::AwaitAccept) challenge_ = *challenge;
      dispatch({Event::GotChallenge, {}});
      return true;
    }
    return false;
  }
  if (const auto* proof = std::get_if<proto::Proof>(&message)) {
    // Due once, after the Challenge; else the machine finds it illegal (NotDue).
    if (authenticating && challenge_ && !receiver_proven_)
      check_receiver_proof(*proof);
    else
      dispatch({Event::GotProof, {}});
    return true;
  }
  if (std::holds_alternative<proto::Accept>(message) && authenticating && !receiver_proven_) {
    not_proven(Event::GotAccept, proto::ReceiverProof::Missing,
               "it answered without proving that it holds our key (is rdma-recv started with "
               "--senders, listing our id?)");
    return true;
  }
  return false;
}

void Connection::send_proof() {
  post(proto::Proof{
      auth_proof(proto::ProofRole::Sender, settings_.key->key, open_sent_, *challenge_)});
}

void Connection::check_receiver_proof(const proto::Proof& proof) {
  const proto::Digest expected =
      auth_proof(proto::ProofRole::Receiver, settings_.key->key, open_sent_, *challenge_);
  if (!same_proof(expected, proof.mac))
    return not_proven(Event::GotProof, proto::ReceiverProof::Wrong,
                      "its proof is wrong: it holds another key for our id");
  receiver_proven_ = true;
  spdlog::debug("[{}] the receiver proved that it holds our key", label());
  dispatch({Event::GotProof, {}, proto::ReceiverProof::Good});
}

void Connection::not_proven(Event event, proto::ReceiverProof proof, const std::string& why) {
  spdlog::error("[{}] not sending: the receiver did not prove that it holds our key: {}", label(),
                why);
  dispatch({event,
            SenderInput::Abort{proto::ErrorCode::AuthFailed,
                               "the receiver did not prove that it holds our key"},
            proof});
}

}  // namespace rdmax::sender
