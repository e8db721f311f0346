#include "protocol/refusals.hpp"

#include "protocol/names.hpp"

namespace rdmax::proto {

namespace {
constexpr const char* kSeeLog = "see the receiver's log (journalctl -u rdma-recv under systemd)";
}  // namespace

std::string refusal_next_step(RejectReason reason, RefusalScope scope) {
  const bool one_file = scope == RefusalScope::File;
  switch (reason) {
    case RejectReason::BadName:
      // The name passed our own check (walk_sources), so the receiver's differs: a name it
      // reserves, or something in its directory in the way.
      return one_file
                 ? std::string(
                       "choose another name with --name NAME; if the name is "
                       "plain, ") +
                       kSeeLog
                 : std::string("rename it here, or send it alone with --name NAME; ") + kSeeLog;
    case RejectReason::Exists:
      return one_file ? "send it under another name with --name NAME, or start rdma-recv with "
                        "--overwrite to replace it"
                      : "remove or rename it on the receiver, or start rdma-recv with "
                        "--overwrite to replace it";
    case RejectReason::TooLarge:
      return "the receiver's --max-size is below the file's size: raise that limit "
             "(rdma-recv --max-size SIZE), or split the file";
    case RejectReason::NoSpace:
      return "free space in the receiver's output directory (rdma-recv --dir), then send again";
    case RejectReason::Busy:
      return "the receiver is busy: try again later";
    case RejectReason::UnsupportedVersion:
      return "the receiver speaks another protocol version: install the same rdmax version "
             "on both hosts";
    case RejectReason::Internal:
      return std::string("the cause is only in the receiver's log: ") + kSeeLog;
    case RejectReason::NoMemory:
      return "its receive windows are at their cap (rdma-recv --max-memory) or it cannot pin "
             "more memory: try again when other transfers are done, or raise rdma-recv "
             "--max-memory or its memlock limit (LimitMEMLOCK=infinity)";
    case RejectReason::AuthRequired:
      return "the receiver admits only senders with a key: give rdma-send --key-file FILE (or "
             "RDMAX_KEY_FILE) holding the ID and KEY its administrator listed in rdma-recv "
             "--senders";
    case RejectReason::AuthFailed:
      return "the receiver does not know this id, or holds another key for it: check the key "
             "file against the receiver's --senders file (repeated failures from one address "
             "are refused for a while)";
    case RejectReason::SealRequired:
      return "it admits keyed senders only if they seal what they send: drop rdma-send "
             "--no-seal (sealing is the default with a key)";
  }
  return kSeeLog;
}

std::string describe_refusal(RejectReason reason, std::string_view text, RefusalScope scope) {
  return std::string(to_string(reason)) + (text.empty() ? "" : ": ") + escape_for_log(text) + "; " +
         refusal_next_step(reason, scope);
}

namespace {
constexpr std::string_view kCmRejectTag = "rdmax: ";
}

std::string encode_cm_reject(std::string_view why) {
  std::string text = std::string(kCmRejectTag) + std::string(why);
  for (char& c : text)
    if (c < 0x20 || c > 0x7E) c = '?';
  text.resize(kCmRejectTextBytes - 1);  // NUL-padded, and a NUL at the end at least
  text.push_back('\0');
  return text;
}

std::string decode_cm_reject(const void* data, std::size_t length) {
  if (data == nullptr) return {};
  const std::string_view bytes(static_cast<const char*>(data), length);
  const std::string_view text = bytes.substr(0, bytes.find('\0'));
  if (text.size() == bytes.size() || text.substr(0, kCmRejectTag.size()) != kCmRejectTag) return {};
  for (char c : text)
    if (c < 0x20 || c > 0x7E) return {};
  return std::string(text.substr(kCmRejectTag.size()));
}

}  // namespace rdmax::proto
