#pragma once
// Sender keys (docs/PROTOCOL.md 7.8), the receiver's side: the Open that claims a key, the
// Challenge it gets (with the Open, the transcript both proofs are made over), the sender's
// Proof checked (an unknown id costs the same HMAC as a wrong key), and what a good one
// earns: our own Proof and the id's subdirectory. A failure is counted against the peer's
// address (common/crypto/auth_penalties.hpp).

#include <optional>
#include <string>

#include "common/crypto/auth_penalties.hpp"
#include "common/crypto/seal.hpp"
#include "protocol/auth.hpp"
#include "protocol/sender_keys.hpp"
#include "protocol/wire.hpp"

namespace rdmax {

class KeyCheck {
 public:
  // `keys`: --senders or --readers (null: every peer gets in); `address`: the peer's, without
  // its port; `who`: what the claimant is called in the log ("sender", "fetcher").
  KeyCheck(const proto::SenderKeyStore* keys, AuthPenalties* penalties, std::string address,
           const char* who = "sender")
      : keys_(keys), penalties_(penalties), address_(std::move(address)), who_(who) {}

  // A key must be proven before anything is granted.
  bool required() const { return keys_ != nullptr && !authenticated_; }
  // The Open (or the Fetch) names a key: kept, with the message, until the Proof. False: it
  // names none.
  bool claim(const proto::Message& claiming);
  // The Open claimed with (a receiver's; std::bad_variant_access where a Fetch claimed).
  const proto::Open& claimed_open() const { return std::get<proto::Open>(claiming_); }
  proto::Challenge challenge();
  // The claimant's Proof: true if it proves the key claimed (`label` names the connection in
  // the log).
  bool check(const proto::Proof& proof, const std::string& label);
  // The authentication failed (`why`, for the log): counted against the address.
  void failed(const std::string& why, const std::string& label);

  const std::optional<proto::Digest>& receiver_proof() const { return receiver_proof_; }
  // After a good Proof of an Open that asked to seal: this connection's keys (7.11).
  const std::optional<SealKeys>& seal_keys() const { return seal_keys_; }
  // Non-empty: every path of the session goes beneath DIR/subdir.
  const std::string& subdir() const { return subdir_; }
  // The id the claimant proved its key for (empty: none was proven).
  std::string proven_id() const { return authenticated_ && claim_ ? claim_->id : std::string(); }

 private:
  const proto::SenderKeyStore* keys_;
  AuthPenalties* penalties_;
  std::string address_;
  const char* who_;
  std::optional<proto::SenderKeyClaim> claim_;
  proto::Message claiming_{};
  proto::Challenge challenge_{};
  std::optional<proto::Digest> receiver_proof_;
  std::optional<SealKeys> seal_keys_;
  bool authenticated_ = false;
  std::string subdir_;
};

}  // namespace rdmax
