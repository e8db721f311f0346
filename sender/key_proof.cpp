#include "sender/key_proof.hpp"

#include <spdlog/spdlog.h>

#include "common/crypto/auth_proof.hpp"
#include "protocol/seal.hpp"

namespace rdmax::sender {

using Event = proto::SenderEvent;

std::optional<SenderInput> KeyProof::judge(const proto::Message& message, bool awaiting,
                                           const std::string& label) {
  if (const auto* challenge = std::get_if<proto::Challenge>(&message)) {
    // Out of its place the machine names it; while the Accept is awaited only a sender that
    // claimed a key is challenged, once.
    if (!awaiting) return input<Event::GotChallenge>();
    if (!claimed() || challenge_) return std::nullopt;
    challenge_ = *challenge;
    return input<Event::GotChallenge>();
  }
  if (const auto* proof = std::get_if<proto::Proof>(&message)) {
    // Due once, after the Challenge; else the machine finds it illegal (NotDue).
    if (!awaiting || !challenge_ || proven_) return input<Event::GotProof>();
    if (!same_proof(auth_proof(proto::ProofRole::Receiver, key_->key, open_, *challenge_),
                    proof->mac))
      return input<Event::GotProof, proto::ReceiverProof::Wrong>(
          not_proven("its proof is wrong: it holds another key for our id", label));
    proven_ = true;
    if (proto::asks_to_seal(open_))
      seal_keys_ = derive_seal_keys(key_->key, transcript_hash(open_, *challenge_));
    spdlog::debug("[{}] the receiver proved that it holds our key", label);
    return input<Event::GotProof, proto::ReceiverProof::Good>();
  }
  if (std::holds_alternative<proto::Accept>(message) && awaiting && claimed() && !proven_) {
    return input<Event::GotAccept, proto::ReceiverProof::Missing>(
        not_proven("it answered without proving that it holds our key (is rdma-recv started "
                   "with --senders, listing our id?)",
                   label));
  }
  return std::nullopt;
}

proto::Proof KeyProof::ours() const {
  return proto::Proof{auth_proof(proto::ProofRole::Sender, key_->key, open_, *challenge_)};
}

SenderInput::Abort KeyProof::not_proven(const std::string& why, const std::string& label) const {
  spdlog::error("[{}] not sending: the receiver did not prove that it holds our key: {}", label,
                why);
  return {proto::ErrorCode::AuthFailed, "the receiver did not prove that it holds our key"};
}

}  // namespace rdmax::sender
