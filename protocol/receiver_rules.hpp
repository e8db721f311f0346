#pragma once
// The rules a receiver holds a sender's first message and its offers to, written once for
// both ways a file arrives: a Hello (one file, PROTOCOL.md 3.1, 7.2) and an Open with its
// Offers (a session, 7.5). Pure functions; the receiver's connection turns a refusal into
// a Reject (of the Hello or the Open) or a Refuse (of one entry).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/wire.hpp"

namespace rdmax::proto {

struct Refusal {
  RejectReason reason = RejectReason::Internal;
  std::string text;
  bool operator==(const Refusal&) const = default;
};

// The extensions of a Hello or an Open (7.2, 7.6): Resume is known; an unknown one the
// sender needs understood is refused (UnsupportedVersion); any other unknown one is ignored.
struct ExtensionsRead {
  bool resume_understood = false;
  std::vector<std::uint16_t> ignored;
  std::optional<Refusal> refusal;
};
[[nodiscard]] ExtensionsRead read_extensions(const std::vector<HelloExtension>& extensions,
                                             std::string_view message);

// The receive window a transfer is given: `slots` of the receiver's slot size, and the
// bytes they pin (0: nothing will be written, no window). One file: a slot per chunk, at
// most `max_slots`. A session: a chunk of its total bytes per slot, plus one per entry
// that may be in flight (every file needs a chunk of its own), at most `max_slots`.
struct Window {
  std::uint32_t slots = 1;
  std::uint64_t bytes = 0;
  bool operator==(const Window&) const = default;
};
[[nodiscard]] Window window_for_file(std::uint64_t file_size, std::uint32_t slot_size,
                                     std::uint32_t max_slots);
[[nodiscard]] Window window_for_session(const Open& open, std::uint32_t slot_size,
                                        std::uint32_t max_slots);
// --max-memory: the window is granted only while the windows of every connection fit.
[[nodiscard]] std::optional<Refusal> check_memory(std::uint64_t in_use, const Window& window,
                                                  std::uint64_t cap);

// What the receiver keeps for itself in its directory (the partial files of resumable
// transfers): no sender may name a path beneath it.
inline constexpr std::string_view kPartialArea = ".rdmax-partial";
[[nodiscard]] bool reserved_by_receiver(std::string_view checked_path);

// The checks of an offered file that need no disk, cheapest first: a Hello's name (one plain
// file name) or an Offer's path (a relative path), then the reserved area, then --max-size.
// Nothing is created for an offer that fails them.
[[nodiscard]] std::optional<Refusal> check_hello_file(const Hello& hello, std::uint64_t max_size);
// A directory entry is checked by its path only.
[[nodiscard]] std::optional<Refusal> check_offer(const Offer& offer, std::uint64_t max_size);

}  // namespace rdmax::proto
