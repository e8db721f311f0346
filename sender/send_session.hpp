#pragma once
// rdma-send's wiring around its one-file driver: the process's event loop
// (common/event_loop.hpp) over the CM event channel and the transport's completion fd,
// feeding SenderConnection (sender/sender_connection.hpp), and the rdma_cm steps it asks
// for (SenderCm).

#include <memory>
#include <optional>
#include <string>

#include "common/event_loop.hpp"
#include "common/file_digest.hpp"
#include "common/input_file.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/event_channel.hpp"
#include "common/rdma/rdma_transport.hpp"
#include "common/sha256.hpp"
#include "sender/options.hpp"
#include "sender/sender_connection.hpp"

namespace rdmax::sender {

class SendSession final : private SenderCm {
 public:
  SendSession(const SenderOptions& options, const SenderSettings& settings, InputFile& file,
              const FileDigest& digest);
  // Connects, transfers and returns the outcome (the exit status follows from it).
  [[nodiscard]] proto::SenderOutcome run();
  const std::string& secret() const { return driver_.secret(); }
  const TransferStats& stats() const { return driver_.stats(); }

 private:
  void resolve_route() override;
  Transport& connect() override;
  void on_cm_events();

  const SenderOptions& options_;
  // Destroyed in reverse: the driver (it deregisters through the transport), the
  // transport (QP, MRs, CQ, PD, then the cm_id), the id not yet handed to a transport,
  // then the channel they were created on.
  EventLoop loop_;
  EventChannel channel_;
  std::optional<CmId> id_;  // until connect() hands it to the transport
  rdma_cm_id* raw_id_;      // the same id, to recognise its events
  std::unique_ptr<RdmaTransport> transport_;
  SenderConnection driver_;
};

}  // namespace rdmax::sender
