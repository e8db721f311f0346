#pragma once
// The sender's side of RLIMIT_MEMLOCK: what its connections pin besides their data (the
// driver's queue depths set its control buffers), and a command's budget
// (protocol/memlock_budget.hpp), which says once, in one line, when it had to shrink.

#include <cstdint>
#include <optional>
#include <string>

#include "common/cli/preflight.hpp"
#include "protocol/memlock_budget.hpp"
#include "protocol/wire.hpp"

namespace rdmax::sender {

// The sender keeps at most this many chunks in flight, whatever the receiver offers: it
// bounds the send queue and the staging buffer.
inline constexpr std::uint32_t kMaxActiveSlots = 32;

// A connection's queue depths: receive buffers kept posted, control messages in flight,
// and RDMA WRITEs besides them.
struct QueueDepths {
  std::uint32_t recv = 0;
  std::uint32_t send = 0;
  std::uint32_t writes = 0;
};
// A connection (a session of one file or many) receives a Take (or Refuse) and a FileVerdict
// per entry in flight besides the Credits (docs/PROTOCOL.md 7.5), and sends an Offer and a
// FileDone per entry besides the FileChunks.
inline constexpr QueueDepths kSessionDepths{
    proto::kMaxSlotCount + 2 * proto::kMaxEntriesInFlight + 16,
    kMaxActiveSlots + 2 * proto::kMaxEntriesInFlight + 8, kMaxActiveSlots + 8};

// The queues a hardware provider allocates in the process and pins (mlx5: the CQ, the QP's
// work queues and doorbell records, tens of KiB at these depths); rxe pins none of them.
inline constexpr std::uint64_t kQueuePinAllowance = 64u << 10;

// What a connection with `depths` pins besides its data: a kMaxMessageSize buffer per
// receive and per send (each set one registration, in whole pages), and the allowance.
[[nodiscard]] std::uint64_t control_pins(QueueDepths depths, std::uint64_t page_size);
[[nodiscard]] std::uint64_t system_page_size();

// The default receiver's window (rdma-recv --slots 16 --slot-size 1M): what --check
// predicts against, and the smallest slot a connection is counted with before its Accept.
inline constexpr std::uint32_t kDefaultReceiverSlots = 16;
inline constexpr std::uint32_t kDefaultReceiverSlotSize = 1u << 20;

// "ulimit -l N" (KiB, rounded up) for a limit of `bytes`.
[[nodiscard]] std::string ulimit_command(std::uint64_t bytes);

// One command's budget: its `connections` share this process's limit equally. The run owns
// it; its drivers ask it when the receiver's Accept says how large a slot is.
class MemlockBudget {
 public:
  MemlockBudget(preflight::MemlockLimit limit, std::uint32_t connections, QueueDepths depths);

  const proto::PinBudget& pins() const { return pins_; }
  // The staging slots of `slot_size` one connection may use, at most `wanted`. Fewer than
  // wanted: says so once per command. 0: not even one fits (see cannot_fit()).
  [[nodiscard]] std::uint32_t staging_slots(std::uint32_t slot_size, std::uint32_t wanted);
  // Zero-copy windows (protocol/memlock_budget.hpp); says so once when it shrank them.
  [[nodiscard]] std::optional<proto::WindowFit> file_windows(std::uint32_t slot_size,
                                                             std::uint32_t wanted,
                                                             std::uint64_t preferred_chunks);
  // Why not even one slot of `slot_size` fits, and what to do: logged once for the command
  // (at error level), however many of its connections fail on it.
  void cannot_fit(std::uint32_t slot_size);
  // The run opens fewer connections than -P asked, to fit: says so (once, for the command).
  void fewer_connections(std::uint32_t asked, std::uint32_t fitting);

 private:
  std::string limit_text() const;
  void tell(const std::string& line);

  preflight::MemlockLimit limit_;
  proto::PinBudget pins_;
  bool told_ = false;          // that it shrank something (once)
  bool failure_told_ = false;  // that not even one slot fits (once)
};

// rdma-send --check: what the sender would pin against a default receiver (16 slots of
// 1 MiB) under `limit`, on each of `connections` (one for a single file; -P for several
// files or -r): whether it fits, would be reduced (fewer slots in flight or connections:
// still ok, and the line says how much to raise the limit) or cannot fit one slot (FAIL,
// with the remedy). The same arithmetic the driver uses.
[[nodiscard]] preflight::Check memlock_prediction(const preflight::MemlockLimit& limit,
                                                  std::uint32_t connections);

}  // namespace rdmax::sender
