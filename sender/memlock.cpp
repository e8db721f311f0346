#include "sender/memlock.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "protocol/sizes.hpp"

namespace rdmax::sender {

std::uint64_t control_pins(QueueDepths depths, std::uint64_t page_size) {
  return proto::pinned_size(std::uint64_t{depths.recv} * proto::kMaxMessageSize, page_size) +
         proto::pinned_size(std::uint64_t{depths.send} * proto::kMaxMessageSize, page_size) +
         kQueuePinAllowance;
}

std::uint64_t system_page_size() {
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<std::uint64_t>(page) : 4096;
}

std::string ulimit_command(std::uint64_t bytes) {
  return "ulimit -l " + std::to_string((bytes + 1023) / 1024);
}

MemlockBudget::MemlockBudget(preflight::MemlockLimit limit, std::uint32_t connections,
                             QueueDepths depths)
    : limit_(limit) {
  const std::uint64_t page = system_page_size();
  if (!limit.capability) pins_.limit = limit.bytes;
  pins_.connections = std::max<std::uint32_t>(connections, 1);
  pins_.control_bytes = control_pins(depths, page);
  pins_.page_size = page;
}

std::string MemlockBudget::limit_text() const {
  return "locked memory: RLIMIT_MEMLOCK " + proto::format_size(pins_.limit.value_or(0));
}

void MemlockBudget::tell(const std::string& line) {
  if (told_) return;
  told_ = true;
  spdlog::warn("{}", line);
}

std::uint32_t MemlockBudget::staging_slots(std::uint32_t slot_size, std::uint32_t wanted) {
  const proto::StagingFit fit = proto::fit_staging(pins_, slot_size, wanted);
  if (fit.reduced() && fit.slots > 0) {
    const std::string each =
        pins_.connections > 1 ? " on each of " + std::to_string(pins_.connections) + " connections"
                              : "";
    const std::uint64_t full = proto::limit_for(pins_, slot_size, wanted);
    tell(limit_text() + " holds " + std::to_string(fit.slots) + " of the " +
         std::to_string(wanted) + " slots of " + proto::format_size(slot_size) +
         " in flight the receiver grants" + each + " (besides " +
         proto::format_size(pins_.control_bytes) + " of control buffers): sending with " +
         std::to_string(fit.slots) + "; for all " + std::to_string(wanted) + ", raise it to " +
         proto::format_size(full) + " (" + ulimit_command(full) +
         ", a memlock line in /etc/security/limits.conf, or LimitMEMLOCK= in the systemd unit)");
  }
  return fit.slots;
}

std::optional<proto::WindowFit> MemlockBudget::file_windows(std::uint32_t slot_size,
                                                            std::uint32_t wanted,
                                                            std::uint64_t preferred_chunks) {
  auto fit = proto::fit_file_windows(pins_, slot_size, wanted, preferred_chunks);
  if (fit && fit->slots < wanted) {
    const std::uint64_t full =
        pins_.connections * (proto::pinned_size(pins_.control_bytes, pins_.page_size) +
                             proto::kMaxPinnedWindows * std::uint64_t{slot_size} * wanted);
    tell(limit_text() + " holds three zero-copy windows of " + std::to_string(fit->slots) +
         " chunks of " + proto::format_size(slot_size) + ", not of the " + std::to_string(wanted) +
         " in flight the receiver grants: sending with " + std::to_string(fit->slots) +
         "; for all " + std::to_string(wanted) + ", raise it to " + proto::format_size(full) +
         " (" + ulimit_command(full) +
         ", a memlock line in /etc/security/limits.conf, or LimitMEMLOCK= in the systemd unit)");
  }
  return fit;
}

void MemlockBudget::cannot_fit(std::uint32_t slot_size) {
  if (failure_told_) return;
  failure_told_ = true;
  const std::uint64_t one = proto::limit_for(pins_, slot_size, 1);
  const std::string who =
      pins_.connections > 1 ? std::to_string(pins_.connections) + " connections" : "a connection";
  std::string text = limit_text() + " cannot hold " + who + " with one " +
                     proto::format_size(slot_size) + " slot each besides " +
                     proto::format_size(pins_.control_bytes) + " of control buffers (" +
                     proto::format_size(one) + " in all): " + preflight::remedy_memlock() + " (" +
                     ulimit_command(one) + " is the least that works)";
  if (pins_.connections > 1) text += ", or use fewer connections (-P)";
  spdlog::error("{}", text);
}

void MemlockBudget::fewer_connections(std::uint32_t asked, std::uint32_t fitting) {
  const std::uint64_t full = proto::limit_for(
      {pins_.limit, asked, pins_.control_bytes, pins_.page_size}, kDefaultReceiverSlotSize, 1);
  tell(limit_text() + " holds the buffers of " + std::to_string(fitting) + " connections (" +
       proto::format_size(pins_.control_bytes) + " of control buffers and a " +
       proto::format_size(kDefaultReceiverSlotSize) + " slot each), not " + std::to_string(asked) +
       ": using " + std::to_string(fitting) + "; for " + std::to_string(asked) +
       ", raise it to at least " + proto::format_size(full) + " (" + ulimit_command(full) +
       ", a memlock line in /etc/security/limits.conf, or LimitMEMLOCK= in the systemd unit)");
}

preflight::Check memlock_prediction(const preflight::MemlockLimit& limit, std::uint32_t asked) {
  asked = std::max(1U, asked);
  const QueueDepths depths = kSessionDepths;
  const std::uint32_t slot = kDefaultReceiverSlotSize;
  const std::uint32_t slots = kDefaultReceiverSlots;
  const proto::PinBudget full = MemlockBudget(limit, asked, depths).pins();
  const std::uint64_t need = proto::limit_for(full, slot, slots);
  const std::string each = std::to_string(slots) + " x " + proto::format_size(slot) +
                           " staging and " + proto::format_size(full.control_bytes) +
                           " of control buffers";
  const std::string what =
      proto::format_size(need) + " the sender pins against a default receiver (" +
      (asked > 1 ? std::to_string(asked) + " connections, each " : "") + each + ")";
  if (limit.capability)
    return preflight::pass("locked memory: CAP_IPC_LOCK (no limit applies); " + what);
  if (!limit.bytes) return preflight::pass("locked memory: RLIMIT_MEMLOCK unlimited; " + what);
  const std::string have = "locked memory: RLIMIT_MEMLOCK " + proto::format_size(*limit.bytes);
  if (*limit.bytes >= need) return preflight::pass(have + " covers the " + what);
  const std::uint32_t connections = std::max(1U, proto::connections_that_fit(full, asked, slot));
  const proto::PinBudget fitted = MemlockBudget(limit, connections, depths).pins();
  const proto::StagingFit fit = proto::fit_staging(fitted, slot, slots);
  if (fit.slots == 0)
    return preflight::failure(
        have + " cannot hold one " + proto::format_size(slot) + " slot besides " +
            proto::format_size(full.control_bytes) + " of control buffers (" +
            proto::format_size(proto::limit_for(fitted, slot, 1)) + "), let alone the " + what,
        preflight::remedy_memlock());
  std::string reduced =
      std::to_string(fit.slots) + " of " + std::to_string(slots) + " slots in flight";
  if (connections < asked)
    reduced +=
        " on " + std::to_string(connections) + " of " + std::to_string(asked) + " connections";
  return preflight::pass(have + " is below the " + what + ": it will send with " + reduced +
                         " (for all of it: " + ulimit_command(need) + ")");
}

}  // namespace rdmax::sender
