#pragma once
// Loading the key files (issue 23; docs/SECURITY.md): a claimant's one `ID KEY` line
// (rdma-send --key-file, rdma-recv --from --key-file) and a verifier's `ID KEY [SUBDIR]`
// lines (rdma-recv --senders, rdma-send --serve --readers). Each is checked as a private file
// first (common/os/private_file.hpp).

#include <string>

#include "protocol/sender_keys.hpp"

namespace rdmax {

// Throws std::runtime_error with a message naming the file (and line) on any problem: the
// checks of private_file.hpp ("key file PATH has mode 0644: ...; run `chmod 600 PATH`"),
// then parse_key_file's ("PATH:LINE: what").
[[nodiscard]] proto::SenderKey load_key_file(const std::string& path);

// The same for a list of keys; `what` names the file in messages ("senders file", "readers
// file"). A file with no ids loads (no key is then accepted) with a warning logged.
[[nodiscard]] proto::SenderKeyStore load_key_store(const std::string& path, const char* what);

}  // namespace rdmax
