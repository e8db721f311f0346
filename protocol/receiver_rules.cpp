#include "protocol/receiver_rules.hpp"

#include <algorithm>

#include "protocol/chunk_plan.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::proto {

namespace {
std::string hex4(std::uint16_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 12; shift >= 0; shift -= 4) out += kDigits[(value >> shift) & 0xf];
  return out;
}

std::optional<Refusal> check_size(std::uint64_t size, std::uint64_t max_size) {
  if (size > max_size)
    return Refusal{RejectReason::TooLarge, "larger than " + format_size(max_size)};
  return std::nullopt;
}

Window window_of(std::uint64_t chunks, std::uint32_t slot_size, std::uint32_t max_slots,
                 bool writes) {
  Window w;
  w.slots = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(chunks, 1, max_slots));
  w.bytes = writes ? std::uint64_t{slot_size} * w.slots : 0;
  return w;
}
}  // namespace

ExtensionsRead read_extensions(const std::vector<HelloExtension>& extensions,
                               std::string_view message) {
  ExtensionsRead read;
  for (const auto& e : extensions) {
    if (e.type == kExtensionResume) {
      read.resume_understood = true;
    } else if (e.type == kExtensionDigestAtEnd && message == "Open") {
      read.digest_at_end = true;
    } else if (e.type == kExtensionProveHeld && message == "Open") {
      read.prove_held = true;
    } else if (e.type == kExtensionStripeGroup && message == "Open") {
      // Known (7.12): the connection's stripe group, read where it is used
      // (protocol/stripes.hpp).
    } else if (e.type == kExtensionDigestAtEnd || e.type == kExtensionDigestAlgorithm) {
      // Known, and must be understood, but a session's alone (7.9, 7.10): an Open's own
      // 0x8004 was lifted by the codec, so one here is a Hello's.
      read.refusal = Refusal{RejectReason::UnsupportedVersion,
                             std::string(message) + " extension " + hex4(e.type) +
                                 " applies only in an Open (a session)"};
      return read;
    } else if (e.type & kExtensionMustUnderstand) {
      read.refusal = Refusal{
          RejectReason::UnsupportedVersion,
          "this receiver does not know " + std::string(message) + " extension " + hex4(e.type)};
      return read;
    } else {
      read.ignored.push_back(e.type);
    }
  }
  return read;
}

Window window_for_session(const Open& open, std::uint32_t slot_size, std::uint32_t max_slots) {
  const std::uint64_t whole = ChunkPlan{open.total_bytes, slot_size}.chunk_count();
  const std::uint64_t files = std::clamp<std::uint64_t>(open.entry_count, 1, kMaxEntriesInFlight);
  return window_of(whole + files - 1, slot_size, max_slots, open.total_bytes > 0);
}

std::optional<Refusal> check_memory(std::uint64_t in_use, const Window& window, std::uint64_t cap) {
  if (in_use + window.bytes > cap)
    return Refusal{RejectReason::NoMemory, "receiver memory cap reached; try again later"};
  return std::nullopt;
}

bool reserved_by_receiver(std::string_view checked_path) {
  return checked_path.substr(0, checked_path.find('/')) == kPartialArea;
}

std::optional<Refusal> check_offer(const Offer& offer, std::uint64_t max_size, OfferedName rule) {
  if (rule == OfferedName::FileName) {
    if (auto error = check_file_name(offer.path, NameBytes::Printable))
      return Refusal{RejectReason::BadName, to_string(*error)};
  } else if (auto problem = check_relative_path(offer.path)) {
    return Refusal{RejectReason::BadName, describe(*problem)};
  }
  if (reserved_by_receiver(offer.path))
    return Refusal{RejectReason::BadName, "the path is reserved by the receiver"};
  if (offer.kind == EntryKind::Directory) return std::nullopt;
  return check_size(offer.size, max_size);
}

}  // namespace rdmax::proto
