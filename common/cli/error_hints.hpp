#pragma once
// Messages a user can act on: each names the cause and the remedy in one line, for the
// failures people meet first (no device, nobody listening, unreadable file, ...).

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/sender_machine.hpp"

namespace rdmax {

// rdma-send: a CM event that ends the connection attempt (ADDR_ERROR, ROUTE_ERROR,
// UNREACHABLE, REJECTED, CONNECT_ERROR) with its status, as "cannot connect to HOST port
// P: cause; remedy". `receiver_says`: a REJECTED's words from the receiver
// (proto::decode_cm_reject: why it refused, PROTOCOL.md 4.1), empty when it gave none.
std::string connect_failure_message(rdma_cm_event_type event, int status, const std::string& host,
                                    std::uint16_t port, std::string_view receiver_says);

// The words a REJECTED event carries from an rdmax receiver, or "" (any other event or peer).
std::string cm_reject_words(const rdma_cm_event* event);

// A remedy for an errno from rdma_create_id, rdma_resolve_addr or rdma_bind_addr (ENODEV,
// EADDRNOTAVAIL, ENETUNREACH, ...), or empty when there is nothing better to say.
std::string rdma_setup_hint(int err);

// rdma-send's closing line for a failed transfer, e.g. for ReceiverFailed "the receiver
// could not store the file (for example its disk is full); see the receiver's log".
std::string outcome_message(proto::SenderOutcome outcome);

// rdma-send FILE cannot be opened: a remedy for the errno, or empty.
std::string input_file_hint(int err);
// "cannot read: <strerror>", and input_file_hint's remedy where it has one.
std::string cannot_read_text(int err);

// rdma-recv --dir cannot be opened or written: a remedy for the errno.
std::string output_dir_hint(int err);

}  // namespace rdmax
