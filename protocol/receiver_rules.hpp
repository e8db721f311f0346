#pragma once
// The rules a receiver holds a session's Open and its Offers to (PROTOCOL.md 7.5), a Hello's
// one file included: the receiver serves a Hello as the Offer of entry 0 of a session of one
// entry (receiver/hello_edge.hpp). Pure functions; the receiver's connection turns a refusal
// into a Reject (of the Open, or of the Hello) or a Refuse (of one entry).

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
  bool digest_at_end = false;  // 7.9: only in an Open (a Hello's is refused)
  bool prove_held = false;     // 7.9: only in an Open (a Hello's is ignored)
  std::vector<std::uint16_t> ignored;
  std::optional<Refusal> refusal;
};
[[nodiscard]] ExtensionsRead read_extensions(const std::vector<HelloExtension>& extensions,
                                             std::string_view message);

// The receive window a transfer is given: `slots` of the receiver's slot size, and the
// bytes they pin (0: nothing will be written, no window): a slot for every chunk the
// session's files may have, at most `max_slots`. N files of T bytes together have fewer than
// T / slot + N chunks (each file's last chunk may be short), hence at most
// ceil(T / slot) + N - 1 of them; N counts only the entries that may be in flight at once.
// One file: exactly its chunks.
struct Window {
  std::uint32_t slots = 1;
  std::uint64_t bytes = 0;
  bool operator==(const Window&) const = default;
};
[[nodiscard]] Window window_for_session(const Open& open, std::uint32_t slot_size,
                                        std::uint32_t max_slots);
// --max-memory: the window is granted only while the windows of every connection fit.
[[nodiscard]] std::optional<Refusal> check_memory(std::uint64_t in_use, const Window& window,
                                                  std::uint64_t cap);

// What the receiver keeps for itself in its directory (the partial files of resumable
// transfers): no sender may name a path beneath it.
inline constexpr std::string_view kPartialArea = ".rdmax-partial";
[[nodiscard]] bool reserved_by_receiver(std::string_view checked_path);

// The checks of an offered entry that need no disk, cheapest first: its path (a relative
// path; a Hello's name is one plain file name, PROTOCOL.md 3.1), then the reserved area,
// then --max-size (not for a directory). Nothing is created for an entry that fails them.
enum class OfferedName : std::uint8_t {
  RelativePath,  // an Offer's path
  FileName,      // a Hello's name
};
[[nodiscard]] std::optional<Refusal> check_offer(const Offer& offer, std::uint64_t max_size,
                                                 OfferedName rule = OfferedName::RelativePath);

}  // namespace rdmax::proto
