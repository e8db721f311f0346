#pragma once
// Loading the receiver's secrets file (`ID SECRET` lines) into a SecretStore.

#include <string>

#include "protocol/secrets.hpp"

namespace rdmax::receiver {

// Throws std::runtime_error with a message naming the file (and line) on any problem; the
// format is SecretStore::parse's. A file with no ids loads (every id is then denied) with a
// warning logged.
[[nodiscard]] proto::SecretStore load_secrets_file(const std::string& path);

}  // namespace rdmax::receiver
