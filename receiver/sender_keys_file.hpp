#pragma once
// Loading the receiver's senders file (`ID KEY [SUBDIR]` lines, issue 23) into a
// SenderKeyStore.

#include <string>

#include "protocol/sender_keys.hpp"

namespace rdmax::receiver {

// Throws std::runtime_error with a message naming the file (and line) on any problem, as
// load_secrets_file does; the format is SenderKeyStore::parse's. A file with no ids loads
// (no sender key is then accepted) with a warning logged.
[[nodiscard]] proto::SenderKeyStore load_sender_keys_file(const std::string& path);

}  // namespace rdmax::receiver
