#pragma once
// rdma-send to a receiver that speaks only protocol version 1 (it refused our Open with
// Reject(UnsupportedVersion)): version 1 carries one file per connection and only the
// whole-file SHA-256, so a command of one file is sent again with that digest, through the
// same session driver over a transport that speaks version 1 on the wire
// (sender/version1_transport.hpp); its result goes into the plan like any entry's, for the
// one report (sender/report.hpp).

#include <string>

#include "sender/options.hpp"
#include "sender/progress_bar.hpp"
#include "sender/report.hpp"
#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

// Whether `plan` is something version 1 can carry: one file and nothing else.
[[nodiscard]] bool version1_can_send(const TransferPlan& plan);

// Sends the plan's one file with version 1; fills its result, the summary's times and bytes,
// and `secret`. The plan's digest becomes the whole-file SHA-256 when it was not.
void send_with_version1(const SenderOptions& options, TransferPlan& plan, RunSummary& summary,
                        std::string& secret, ProgressMode progress);

}  // namespace rdmax::sender
