#pragma once
// What rdma-send tells its user when the receiver refuses a file (Reject to a Hello, Refuse
// to a session's Offer, Reject to a session's Open): what happened and what to do next
// (issue 22). The receiver's reason code and text say what happened; the next step depends
// only on the reason and on whether --name could rename the file, so it is decided here,
// once.

#include <cstddef>
#include <string>
#include <string_view>

#include "protocol/wire.hpp"

namespace rdmax::proto {

enum class RefusalScope : std::uint8_t {
  File,     // the one FILE of the command line: --name can give it another name
  Entry,    // one of several files, or an entry of a tree
  Session,  // the whole session (a Reject to an Open): no file in particular
};

// The next step, one clause for people, e.g. for Exists and a File: "send it under another
// name with --name NAME, or start rdma-recv with --overwrite to replace it". Every reason
// has one; a reason this version does not know points to the receiver's log.
[[nodiscard]] std::string refusal_next_step(RejectReason reason, RefusalScope scope);

// "Exists: a file of that name exists; <next step>": the reason, the receiver's text
// (escaped: it comes from the network) and the next step.
[[nodiscard]] std::string describe_refusal(RejectReason reason, std::string_view text,
                                           RefusalScope scope);

// Why a connection request was refused at the CM level (PROTOCOL.md 4.1), as the reference
// receiver puts it in the rdma_reject private data: "rdmax: " and a few words of printable
// ASCII, NUL-padded, at most kCmRejectTextBytes in all (an IB REJ carries 148 bytes).
inline constexpr std::size_t kCmRejectTextBytes = 96;
[[nodiscard]] std::string encode_cm_reject(std::string_view why);
// The words of such a text, or nothing: no tag, a byte that is not printable ASCII before the
// first NUL, or no room for it. What any other peer puts there is ignored.
[[nodiscard]] std::string decode_cm_reject(const void* data, std::size_t length);

}  // namespace rdmax::proto
