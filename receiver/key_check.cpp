#include "receiver/key_check.hpp"

#include <spdlog/spdlog.h>

#include "common/crypto/auth_proof.hpp"
#include "protocol/names.hpp"
#include "protocol/seal.hpp"

namespace rdmax::receiver {

bool KeyCheck::claim(const proto::Open& open) {
  claim_ = proto::sender_key_claim(open);
  claimed_open_ = open;
  return claim_.has_value();
}

proto::Challenge KeyCheck::challenge() {
  challenge_ = proto::Challenge{fresh_nonce()};
  return challenge_;
}

bool KeyCheck::check(const proto::Proof& proof, const std::string& label) {
  const proto::SenderKey* key = keys_->find(claim_->id);
  // An unknown id and a wrong key get the same answer, after the same work (an HMAC under a
  // key no sender holds, for the unknown id); only the log tells them apart.
  static const std::string kNobodysKey(proto::kMaxSenderKeyBytes, '\0');
  const proto::Digest expected = auth_proof(
      proto::ProofRole::Sender, key != nullptr ? key->key : kNobodysKey, claimed_open_, challenge_);
  if (!same_proof(expected, proof.mac) || key == nullptr) {
    failed(key == nullptr ? "unknown id '" + proto::escape_for_log(claim_->id) + "'"
                          : "wrong key for id '" + proto::escape_for_log(claim_->id) + "'",
           label);
    return false;
  }
  authenticated_ = true;
  if (penalties_ != nullptr) penalties_->succeeded(address_);
  receiver_proof_ = auth_proof(proto::ProofRole::Receiver, key->key, claimed_open_, challenge_);
  if (proto::asks_to_seal(claimed_open_))
    seal_keys_ = derive_seal_keys(key->key, transcript_hash(claimed_open_, challenge_));
  subdir_ = key->subdir;
  const std::string beneath =
      subdir_.empty() ? "" : "; it writes beneath " + proto::escape_for_log(subdir_);
  if (seal_keys_) {
    spdlog::info("[{}] sender '{}' authenticated, sealed{}", label,
                 proto::escape_for_log(claim_->id), beneath);
  } else {
    // Only --allow-clear lets this through: its names, data and the secret cross the fabric
    // readable and unauthenticated, which an operator should see for each connection.
    spdlog::warn(
        "[{}] sender '{}' authenticated, but served IN CLEAR: it did not ask to seal "
        "(rdma-send --no-seal, or a release before sealing){}",
        label, proto::escape_for_log(claim_->id), beneath);
  }
  return true;
}

void KeyCheck::failed(const std::string& why, const std::string& label) {
  std::string penalty;
  if (penalties_ != nullptr && !address_.empty()) {
    const auto wait = penalties_->failed(address_, std::chrono::steady_clock::now());
    penalty = "; " + address_ + " is refused for " + std::to_string(wait.count()) + "s";
  }
  spdlog::warn("[{}] authentication failed: {}{}", label, why, penalty);
}

}  // namespace rdmax::receiver
