#pragma once
// rdma-recv --from HOST[:PORT] PATH... -o DEST: fetches from an rdma-send --serve
// (docs/PROTOCOL.md 7.13) and stores what arrives exactly as the daemon stores a push:
// verified, atomic, durable, resumable (a partial kept in DEST/.rdmax-partial, and a file
// already in place not sent again). One epoll loop drives the connection: its intake
// (receiver/fetch_intake.hpp) connects and asks, the receiver's own driver
// (receiver/connection.hpp) takes the session the server's Open starts. Disk and hashing work
// runs on the worker pool.
//
// Exit statuses are rdma-send's where they mean the same (sender/exit_codes.hpp): 0 every
// file fetched and verified (or already here), 3 the connection failed or was lost (run
// again: it continues), 4 the server refused the request or a file was refused here, 5 a
// file's digest did not match, 7 keys, 1 anything else; 2 a usage error before connecting.

#include "common/os/fd.hpp"
#include "receiver/options.hpp"

namespace rdmax::receiver {

// `dest`: -o DEST, opened as a directory. Returns the exit status.
[[nodiscard]] int run_fetch(const ReceiverOptions& options, Fd dest);

}  // namespace rdmax::receiver
