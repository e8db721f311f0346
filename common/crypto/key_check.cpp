#include "common/crypto/key_check.hpp"

#include <spdlog/spdlog.h>

#include "common/crypto/auth_proof.hpp"
#include "protocol/names.hpp"
#include "protocol/seal.hpp"

namespace rdmax {

bool KeyCheck::claim(const proto::Message& claiming) {
  claiming_ = claiming;
  if (const auto* open = std::get_if<proto::Open>(&claiming))
    claim_ = proto::sender_key_claim(*open);
  else if (const auto* fetch = std::get_if<proto::Fetch>(&claiming))
    claim_ = proto::sender_key_claim(*fetch);
  else
    claim_.reset();
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
  const proto::Digest transcript = transcript_hash(claiming_, challenge_);
  const proto::Digest expected =
      auth_proof(proto::ProofRole::Sender, key != nullptr ? key->key : kNobodysKey, transcript);
  if (!same_proof(expected, proof.mac) || key == nullptr) {
    failed(key == nullptr ? "unknown id '" + proto::escape_for_log(claim_->id) + "'"
                          : "wrong key for id '" + proto::escape_for_log(claim_->id) + "'",
           label);
    return false;
  }
  authenticated_ = true;
  if (penalties_ != nullptr) penalties_->succeeded(address_);
  receiver_proof_ = auth_proof(proto::ProofRole::Receiver, key->key, transcript);
  const auto* open = std::get_if<proto::Open>(&claiming_);
  const auto* fetch = std::get_if<proto::Fetch>(&claiming_);
  if ((open != nullptr && proto::asks_to_seal(*open)) ||
      (fetch != nullptr && proto::asks_to_seal(*fetch)))
    seal_keys_ = derive_seal_keys(key->key, transcript);
  subdir_ = key->subdir;
  const std::string beneath = subdir_.empty() ? ""
                              : std::holds_alternative<proto::Fetch>(claiming_)
                                  ? "; it fetches only from " + proto::escape_for_log(subdir_)
                                  : "; it writes beneath " + proto::escape_for_log(subdir_);
  if (seal_keys_) {
    spdlog::info("[{}] {} '{}' authenticated, sealed{}", label, who_,
                 proto::escape_for_log(claim_->id), beneath);
  } else {
    // Only --allow-clear lets this through: its names, data and the secret cross the fabric
    // readable and unauthenticated, which an operator should see for each connection.
    spdlog::warn(
        "[{}] {} '{}' authenticated, but served IN CLEAR: it did not ask to seal "
        "(rdma-send --no-seal, or a release before sealing){}",
        label, who_, proto::escape_for_log(claim_->id), beneath);
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

}  // namespace rdmax
