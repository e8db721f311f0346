#pragma once
// What a sender may pin under RLIMIT_MEMLOCK, as pure arithmetic (no verbs, no getrlimit):
// the sender's driver and rdma-send --check ask it.
//
// Registering memory pins it, and the kernel counts a process's pinned pages (whole pages:
// ib_umem_get) against RLIMIT_MEMLOCK. Each connection of a command pins its control
// buffers (one registration each for the receive and send message buffers, plus whatever
// queues the provider pins) from the moment it connects, and its data source from the
// receiver's Accept on: a staging buffer of `slots x slot_size`, or with zero-copy up to
// three windows of the file. The limit is shared out equally among the connections, so the
// sum stays under it whatever order their Accepts arrive in.

#include <cstdint>
#include <optional>

namespace rdmax::proto {

struct PinBudget {
  std::optional<std::uint64_t> limit;  // bytes; nullopt: no limit applies (unlimited, CAP_IPC_LOCK)
  std::uint32_t connections = 1;       // that pin at the same time (>= 1)
  std::uint64_t control_bytes = 0;     // pinned by each connection besides its data source
  std::uint64_t page_size = 4096;      // the unit the kernel counts in
};

// `bytes` rounded up to whole pages.
[[nodiscard]] std::uint64_t pinned_size(std::uint64_t bytes, std::uint64_t page_size);

// What one connection pins with a staging buffer of `slots` slots: control and staging.
[[nodiscard]] std::uint64_t connection_pins(const PinBudget& budget, std::uint32_t slot_size,
                                            std::uint32_t slots);
// The limit under which every connection keeps `slots` slots (the remedy's figure).
[[nodiscard]] std::uint64_t limit_for(const PinBudget& budget, std::uint32_t slot_size,
                                      std::uint32_t slots);

struct StagingFit {
  std::uint32_t slots = 0;   // usable by each connection, <= wanted; 0: not even one fits
  std::uint32_t wanted = 0;  // what the receiver grants and the sender would use
  bool reduced() const { return slots < wanted; }
};
// The slots of `slot_size` bytes (at most `wanted`) each connection's staging buffer may
// hold.
[[nodiscard]] StagingFit fit_staging(const PinBudget& budget, std::uint32_t slot_size,
                                     std::uint32_t wanted);

// Zero-copy: the file is registered in windows of whole chunks, at most three pinned at
// once, each at least the chunks in flight (sender/file_windows.hpp). With `wanted` slots
// in flight and windows of `preferred_chunks`, what fits: smaller windows first, then fewer
// slots in flight. nullopt: not even three one-chunk windows fit (copy instead).
struct WindowFit {
  std::uint32_t window_chunks = 0;
  std::uint32_t slots = 0;  // in flight, <= window_chunks
};
inline constexpr std::uint32_t kMaxPinnedWindows = 3;
[[nodiscard]] std::optional<WindowFit> fit_file_windows(const PinBudget& budget,
                                                        std::uint32_t slot_size,
                                                        std::uint32_t wanted,
                                                        std::uint64_t preferred_chunks);

// How many of `wanted` connections (>= 1) can each pin control buffers and one slot of
// `slot_size`; 0 when not even one can.
[[nodiscard]] std::uint32_t connections_that_fit(const PinBudget& budget, std::uint32_t wanted,
                                                 std::uint32_t slot_size);

}  // namespace rdmax::proto
