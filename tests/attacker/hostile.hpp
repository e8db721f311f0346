#pragma once
// Hostile-protocol commands of rdmax-attacker: malformed, lying, out-of-order, silent and
// flooding peers. Each checks that rdma-recv answers as docs/PROTOCOL.md (2, 4.4, 4.5,
// 5.4) says: Error(ProtocolViolation) or Error(Timeout), then a disconnect, and nothing
// left in its --dir.

#include <string>
#include <vector>

#include "peer.hpp"
#include "protocol/sender_keys.hpp"

namespace rdmax::attacker {

const std::vector<std::string>& hostile_commands();
bool is_hostile_command(const std::string& command);
// Runs o.command; returns the exit status (0: every attempt answered correctly,
// 1: at least one was not). Throws SetupError when an attempt could not be set up.
int run_hostile(const Options& o, const Payload& payload);

// The command "paths" (hostile_paths.cpp): Offers of paths that try to leave --dir.
bool hostile_paths(const Options& o, const Payload& payload);

// The command "fetch" (hostile_fetch.cpp): a fetcher, against rdma-send --serve, that asks
// for what is outside the export or not served, or breaks the order of a fetch.
bool hostile_fetch(const Options& o, const Payload& payload);

// The command "keys" (hostile_keys.cpp): senders without the key a receiver started with
// --senders requires. Returns the exit status (0: every attempt answered correctly, 1: not).
int run_keys(const Options& o, const Payload& payload);
// Its sealed attempts (hostile_sealed.cpp): a sender that holds `key`, seals, and breaks the
// seal (a message altered, replayed, reordered or in clear; a chunk overwritten in its slot).
bool run_sealed(const Options& o, const Payload& payload, const proto::SenderKey& key);

}  // namespace rdmax::attacker
