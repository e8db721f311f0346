#pragma once
// The rules a sender holds the receiver's answers to: what an Accept may offer (PROTOCOL.md
// 3.2, 7.4) and where a Resume may start (7.6). Pure functions; the sender's driver
// (sender/connection.cpp) turns a problem into a ProtocolViolation.

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/wire.hpp"

namespace rdmax::proto {

// The largest slot a sender takes: rxe on Linux 6.1 advertises an 8 MiB max message.
inline constexpr std::uint32_t kSenderMaxSlotSize = 8u << 20;

enum class AcceptProblem : std::uint8_t {
  SlotTooLarge,          // above kSenderMaxSlotSize
  SlotNotBlockMultiple,  // the fs-verity digest needs whole 4 KiB blocks per chunk (7.4)
  ResumeNotAligned,      // a single file's Resume came first; it must start a chunk (7.6)
};

// `resumed_from`: where a Resume received before this Accept starts (0: none).
[[nodiscard]] std::optional<AcceptProblem> check_accept(const Accept& accept,
                                                        DigestAlgorithm algorithm,
                                                        std::uint64_t resumed_from);

enum class ResumeProblem : std::uint8_t {
  NotATree,         // only a tree digest (fs-verity, BLAKE3) can continue from nodes
  AtZero,           // a Resume starts past the first byte (else it is a Take or Accept)
  NotBeforeTheEnd,  // it leaves at least one byte, so at least one chunk, to send
  NotChunkAligned,  // it starts where a chunk does (known once the slot size is)
  Repeated,         // one Resume per entry
};

struct ResumeFacts {
  DigestAlgorithm algorithm = DigestAlgorithm::FsVeritySha256;
  std::uint64_t offset = 0;
  std::uint64_t file_size = 0;
  std::uint32_t slot_size = 0;  // 0: not known yet (a single file's Resume precedes the Accept)
  bool resumed_already = false;
};
[[nodiscard]] std::optional<ResumeProblem> check_resume(const ResumeFacts& facts);

// PROTOCOL.md 7.1, the sender's side. Every message carries the connection's version, but
// for two: while the sender waits for the answer to its first message, a receiver writes an
// Error in version 1 (it has not seen that message yet), and one that speaks only version 1
// refuses it with a Reject in version 1 (let through in any state, for the machine to judge
// where it is misplaced). `message` is null for one that did not decode.
[[nodiscard]] bool sender_accepts_version(std::uint16_t connection_version,
                                          std::uint16_t message_version, const Message* message,
                                          bool awaiting_first_answer);
// Whether a Reject says the receiver speaks only an older version (worth connecting again
// in it, PROTOCOL.md 7.1): UnsupportedVersion in a version below ours. In our own version
// it refuses something else in the first message (an extension it must understand): final.
[[nodiscard]] bool rejects_our_version(const Reject& reject, std::uint16_t message_version,
                                       std::uint16_t connection_version);

// What a sender asks of the receiver in its first message, beyond version 1's one file with
// its SHA-256: version 2 (7.1), a digest algorithm (BLAKE3 by its extension 0x8004, 7.10) and
// the digest at the end (0x8003, 7.9). A receiver that lacks one refuses the first message
// before any file, and the sender connects again without it.
struct SessionTerms {
  std::uint16_t version = kVersion2;
  DigestAlgorithm algorithm = DigestAlgorithm::Blake3;
  bool digest_at_end = true;
  bool operator==(const SessionTerms&) const = default;
};
// Which term the receiver's Reject refused (the driver tells them apart: 7.10's and 7.9's
// refusals come in version 2 and name what the Open carried; a version-1 Reject refuses
// version 2 itself).
enum class TermRefused : std::uint8_t { Algorithm, DigestAtEnd, Version };
// Which term a version-2 Reject(UnsupportedVersion) of our first message refused, from what
// that message asked for alone: a Reject names no extension (its text is for people), so the
// newest asked is taken to be the one refused: BLAKE3, else the digest at the end; none when
// it asked for neither (then version 2 itself was refused in its own version: final). So a
// receiver that knows BLAKE3 but not the digest at the end is asked three times, and serves
// the fs-verity digest without it (PROTOCOL.md 7.10, "Falling back").
[[nodiscard]] std::optional<TermRefused> term_refused(const SessionTerms& asked);
// The one ladder of fall-backs: the terms to connect again with after `refused`, each
// refusal dropping the term refused (BLAKE3 for the fs-verity digest; the digest at the end
// for digests first; version 2 for version 1, which carries one file with its whole-file
// SHA-256 and cannot prove a key). None when nothing is left to drop: a refusal of a term not
// asked for, or of version 2 when version 1 cannot carry the command (`one_file`: one file
// and nothing else; `keyed`: a sender key, which version 1 cannot prove).
[[nodiscard]] std::optional<SessionTerms> fall_back(const SessionTerms& terms, TermRefused refused,
                                                    bool one_file, bool keyed);

// What went wrong, in words for the log and the Error's text.
[[nodiscard]] std::string describe(AcceptProblem problem, const Accept& accept,
                                   std::uint64_t resumed_from);
[[nodiscard]] std::string describe(ResumeProblem problem, const ResumeFacts& facts);

}  // namespace rdmax::proto
