#pragma once
// rdma-send's exit statuses: part of its interface (README, --help, docs/PROTOCOL.md).

#include "protocol/sender_machine.hpp"

namespace rdmax::sender {

inline constexpr int kExitSuccess = 0;
inline constexpr int kExitOther = 1;
inline constexpr int kExitUsage = 2;  // bad flags or unreadable file, before connecting
inline constexpr int kExitConnection = 3;
inline constexpr int kExitRejected = 4;
inline constexpr int kExitHashMismatch = 5;
inline constexpr int kExitDenied = 6;
// Sender keys (docs/PROTOCOL.md 7.8): the receiver refused our key (or wants one), or could
// not prove that it holds it; nothing was sent.
inline constexpr int kExitAuthFailed = 7;

inline int exit_code_for(proto::SenderOutcome outcome) {
  using O = proto::SenderOutcome;
  switch (outcome) {
    case O::Success:
      return kExitSuccess;
    case O::ConnectFailed:
    case O::ConnectionLost:
      return kExitConnection;
    case O::Rejected:
    case O::VersionUnsupported:  // only when even version 1 is refused
      return kExitRejected;
    case O::HashMismatch:
      return kExitHashMismatch;
    case O::Denied:
      return kExitDenied;
    case O::AuthFailed:
      return kExitAuthFailed;
    case O::ReceiverFailed:
    case O::ProtocolError:
    case O::Interrupted:
    case O::LocalFailure:
    case O::SomeFailed:  // a session: the first failed entry's status is the command's
      return kExitOther;
  }
  return kExitOther;
}

}  // namespace rdmax::sender
