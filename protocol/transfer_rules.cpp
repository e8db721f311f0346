#include "protocol/transfer_rules.hpp"

#include "protocol/sizes.hpp"

namespace rdmax::proto {

std::optional<AcceptProblem> check_accept(const Accept& accept, DigestAlgorithm algorithm,
                                          std::uint64_t resumed_from) {
  if (accept.slot_size > kSenderMaxSlotSize) return AcceptProblem::SlotTooLarge;
  // The tree's blocks (BLAKE3's chunks) must not straddle chunks.
  if (algorithm == DigestAlgorithm::FsVeritySha256 && accept.slot_size % kFsVerityBlockSize != 0)
    return AcceptProblem::SlotNotBlockMultiple;
  if (algorithm == DigestAlgorithm::Blake3 && accept.slot_size % kBlake3ChunkBytes != 0)
    return AcceptProblem::SlotNotBlockMultiple;
  if (resumed_from > 0 && (accept.slot_size == 0 || resumed_from % accept.slot_size != 0))
    return AcceptProblem::ResumeNotAligned;
  return std::nullopt;
}

std::optional<ResumeProblem> check_resume(const ResumeFacts& f) {
  if (f.resumed_already) return ResumeProblem::Repeated;
  if (f.algorithm == DigestAlgorithm::WholeFileSha256) return ResumeProblem::NotATree;
  if (f.offset == 0) return ResumeProblem::AtZero;
  if (f.offset >= f.file_size) return ResumeProblem::NotBeforeTheEnd;
  if (f.slot_size != 0 && f.offset % f.slot_size != 0) return ResumeProblem::NotChunkAligned;
  return std::nullopt;
}

bool sender_accepts_version(std::uint16_t connection_version, std::uint16_t message_version,
                            const Message* message, bool awaiting_first_answer) {
  if (message_version == connection_version) return true;
  if (message == nullptr || message_version != kVersion1 || connection_version <= kVersion1)
    return false;
  // A Reject in version 1 is let through in every state: the machine judges it (legal only
  // while the answer to the first message is awaited), as every other misplaced message.
  if (std::holds_alternative<Reject>(*message)) return true;
  return awaiting_first_answer && std::holds_alternative<Error>(*message);
}

bool rejects_our_version(const Reject& reject, std::uint16_t message_version,
                         std::uint16_t connection_version) {
  return reject.reason == RejectReason::UnsupportedVersion && message_version < connection_version;
}

std::string describe(AcceptProblem problem, const Accept& accept, std::uint64_t resumed_from) {
  switch (problem) {
    case AcceptProblem::SlotTooLarge:
      return "the receiver offers " + format_size(accept.slot_size) + " slots, above the " +
             format_size(kSenderMaxSlotSize) + " this sender supports";
    case AcceptProblem::SlotNotBlockMultiple:
      return "the receiver offers " + std::to_string(accept.slot_size) +
             "-byte slots: the fs-verity digest needs a multiple of " +
             std::to_string(kFsVerityBlockSize);
    case AcceptProblem::ResumeNotAligned:
      return "the receiver resumes at " + std::to_string(resumed_from) +
             ", not a multiple of its " + std::to_string(accept.slot_size) + "-byte slots";
  }
  return "a bad Accept";
}

std::string describe(ResumeProblem problem, const ResumeFacts& f) {
  const std::string at = "a Resume at " + std::to_string(f.offset);
  switch (problem) {
    case ResumeProblem::NotATree:
      return at + " with " + std::string(to_string(f.algorithm)) +
             ": only a tree digest (fs-verity, BLAKE3) can be resumed";
    case ResumeProblem::AtZero:
      return at + ": a Resume starts past the first byte";
    case ResumeProblem::NotBeforeTheEnd:
      return at + " of a " + std::to_string(f.file_size) + "-byte file: it must leave a chunk";
    case ResumeProblem::NotChunkAligned:
      return at + ": not a multiple of the " + std::to_string(f.slot_size) + "-byte slots";
    case ResumeProblem::Repeated:
      return at + ": the entry was resumed already";
  }
  return at;
}

std::optional<TermRefused> term_refused(const SessionTerms& asked) {
  if (asked.version != kVersion2) return std::nullopt;
  if (asked.algorithm == DigestAlgorithm::Blake3) return TermRefused::Algorithm;
  if (asked.digest_at_end) return TermRefused::DigestAtEnd;
  return std::nullopt;
}

std::optional<SessionTerms> fall_back(const SessionTerms& terms, TermRefused refused, bool one_file,
                                      bool keyed) {
  SessionTerms next = terms;
  switch (refused) {
    case TermRefused::Algorithm:
      if (terms.algorithm != DigestAlgorithm::Blake3) return std::nullopt;
      next.algorithm = DigestAlgorithm::FsVeritySha256;
      return next;
    case TermRefused::DigestAtEnd:
      if (!terms.digest_at_end) return std::nullopt;
      next.digest_at_end = false;
      return next;
    case TermRefused::Version:
      if (terms.version != kVersion2 || !one_file || keyed) return std::nullopt;
      return SessionTerms{kVersion1, DigestAlgorithm::WholeFileSha256, false};
  }
  return std::nullopt;
}

}  // namespace rdmax::proto
