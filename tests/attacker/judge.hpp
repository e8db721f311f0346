#pragma once
// Judging a receiver's reaction to one attempt of the hostile commands (hostile.cpp,
// hostile_keys.cpp): what it sent after the attempt's last message, whether and when it
// disconnected, against what docs/PROTOCOL.md says it must do.

#include <string>
#include <vector>

#include "peer.hpp"

namespace rdmax::attacker {

enum class Expect {
  Violation,      // Error(ProtocolViolation), then a disconnect, promptly
  Timeout,        // Error(Timeout), then a disconnect, after the receiver's timeout
  Disconnect,     // a disconnect, promptly (our SEND broke the receiver's queue pair)
  VersionAnswer,  // Reject(UnsupportedVersion) (or Error(ProtocolViolation)), a disconnect
  BadName,        // Reject(BadName), a disconnect
  AuthRequired,   // Reject(AuthRequired), a disconnect (rdma-recv --senders, no key claimed)
  AuthFailed,     // Reject(AuthFailed), a disconnect (unknown id, or a wrong Proof)
};

// What the receiver did after the attempt's last message.
struct Reaction {
  std::vector<proto::Message> messages;
  bool disconnected = false;
  double seconds = 0;  // from the attempt's last message (or its silence) to the disconnect
  double answered_seconds = -1;  // ... to the receiver's last message; -1: it sent none
  std::string our_qp;            // our own queue pair's first error, if it failed
};

// Waits (bounded by the receiver's --timeout + --slack) for the receiver to disconnect,
// timing the reaction from `since`.
Reaction observe(Peer& p, Clock::time_point since, const Options& o);

std::string format_seconds(double s);
std::string describe(const Reaction& r);
const proto::Error* find_error(const Reaction& r);

// Empty when the reaction is the expected one; otherwise why not.
std::string judge(const Options& o, const Reaction& r, Expect expect);

}  // namespace rdmax::attacker
