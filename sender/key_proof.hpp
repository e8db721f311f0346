#pragma once
// Sender keys (docs/PROTOCOL.md 7.8), the sender's side: the Open as sent and the Challenge
// it got are the transcript both proofs are made over; ours answers the Challenge, and the
// receiver's is checked before anything is sent: not a byte of data goes to a receiver
// that did not prove it holds our key.

#include <optional>
#include <string>

#include "common/crypto/seal.hpp"
#include "protocol/sender_keys.hpp"
#include "protocol/wire.hpp"
#include "sender/sender_input.hpp"

namespace rdmax::sender {

class KeyProof {
 public:
  explicit KeyProof(const proto::SenderKey* key) : key_(key) {}

  bool claimed() const { return key_ != nullptr; }
  // The Open as sent (with our key's claim, if any).
  void sent(const proto::Open& open) { open_ = open; }
  const proto::Open& open_sent() const { return open_; }
  // What a message means where a key is at stake (the Challenge, a Proof, an Accept), as
  // the machine's next input: a Proof checked says what it found (proto::ReceiverProof),
  // and an Accept before the receiver's Proof is refused. None: not a key matter here (a
  // Challenge while the Accept is awaited, not due, is unexpected). `awaiting`: the Accept
  // is; `label` names the connection in the log.
  std::optional<SenderInput> judge(const proto::Message& message, bool awaiting,
                                   const std::string& label);
  proto::Proof ours() const;
  // Once the receiver proved our key, where our Open asked to seal: this connection's keys
  // (docs/PROTOCOL.md 7.11).
  const std::optional<SealKeys>& seal_keys() const { return seal_keys_; }

 private:
  // Logs why the receiver is not trusted; the Abort its SendError sends.
  SenderInput::Abort not_proven(const std::string& why, const std::string& label) const;

  const proto::SenderKey* key_;
  proto::Open open_{};
  std::optional<proto::Challenge> challenge_;
  bool proven_ = false;
  std::optional<SealKeys> seal_keys_;
};

}  // namespace rdmax::sender
