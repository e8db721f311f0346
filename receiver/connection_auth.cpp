// Sender keys (docs/PROTOCOL.md 7.8), the receiver's side: the Challenge, the sender's Proof
// checked (an unknown id costs the same HMAC as a wrong key), and a failure counted against
// the peer's address (receiver/auth_penalties.hpp). The Open that claimed the key is checked
// by check_open() (receiver/connection.cpp), which the good Proof resumes.

#include <spdlog/spdlog.h>

#include <string>

#include "common/crypto/auth_proof.hpp"
#include "protocol/names.hpp"
#include "receiver/connection.hpp"

namespace rdmax::receiver {

namespace {
using Input = ReceiverInput;
}  // namespace

void Connection::send_challenge() {
  challenge_ = proto::Challenge{fresh_nonce()};
  post(challenge_);
  expect("the sender's Proof", context_.options.timeout);
}

void Connection::check_proof(const proto::Proof& proof) {
  const proto::SenderKey* key = context_.sender_keys->find(claim_->id);
  // An unknown id and a wrong key get the same answer, after the same work (an HMAC under a
  // key no sender holds, for the unknown id); only the log tells them apart.
  static const std::string kNobodysKey(proto::kMaxSenderKeyBytes, '\0');
  const proto::Digest expected = auth_proof(
      proto::ProofRole::Sender, key != nullptr ? key->key : kNobodysKey, claimed_open_, challenge_);
  if (!same_proof(expected, proof.mac) || key == nullptr) {
    authentication_failed(key == nullptr
                              ? "unknown id '" + proto::escape_for_log(claim_->id) + "'"
                              : "wrong key for id '" + proto::escape_for_log(claim_->id) + "'");
    return dispatch({Event::GotProof,
                     Input::Rejection{proto::RejectReason::AuthFailed,
                                      "authentication failed: unknown id or wrong key"},
                     {proto::OpenCheck::Rejected}});
  }
  authenticated_ = true;
  if (context_.penalties != nullptr) context_.penalties->succeeded(address_);
  receiver_proof_ = auth_proof(proto::ProofRole::Receiver, key->key, claimed_open_, challenge_);
  subdir_ = key->subdir;
  spdlog::info("[{}] sender '{}' authenticated{}", label(), proto::escape_for_log(claim_->id),
               subdir_.empty() ? "" : "; it writes beneath " + proto::escape_for_log(subdir_));
  check_open(claimed_open_, Event::GotProof);  // the rest of an Open's checks: memory
}

void Connection::authentication_failed(const std::string& why) {
  std::string penalty;
  if (context_.penalties != nullptr && !address_.empty()) {
    const auto wait = context_.penalties->failed(address_, Clock::now());
    penalty = "; " + address_ + " is refused for " + std::to_string(wait.count()) + "s";
  }
  spdlog::warn("[{}] authentication failed: {}{}", label(), why, penalty);
}

}  // namespace rdmax::receiver
