#pragma once
// fuzz_session_ledgers: the input read as a setup (the entries, the slot grid, the
// sender's limit, an Open that may lie) and as operations' arguments.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "protocol/receive_ledger.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace rdmax::fuzz {

using namespace rdmax::proto;
using RState = ReceiveLedger::EntryState;
using SState = SendLedger::EntryState;
using SlotState = ReceiveLedger::SlotState;

// The entry machine's refusal of `event` in `state` (protocol/entry_machine.hpp; its table is
// checked whole by entry_machine_test): the reason a ledger gives where the model expects a
// refusal by the entry's state. The model decides whether a step is refused; a refusal the
// machine would not give fails here.
inline EntryFault machine_refusal(EntryKind kind, EntryState state, EntryEvent event) {
  const auto fault = advance(kind, state, event);
  FUZZ_CHECK(fault.has_value());
  return fault.value_or(EntryFault::NotOffered);
}

class Input : public FuzzInput {
 public:
  using FuzzInput::FuzzInput;
  // Mostly a small number (a real entry or slot), sometimes any value.
  std::uint32_t small() { return mostly_below(48U); }
};

struct Setup {
  std::vector<SendLedger::EntryPlan> entries;
  Open open;
  Accept accept;
  std::uint32_t max_active = 0;
  bool honest = true;  // the Open tells the truth
};

inline Setup read_setup(Input& in) {
  Setup s;
  const std::uint32_t n = 1 + in.u8() % 40U;  // beyond kMaxEntriesInFlight on purpose
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint8_t b = in.u8();
    SendLedger::EntryPlan p;
    if (b & 0x80) {
      p.kind = EntryKind::Directory;
    } else {
      switch (b % 4) {
        case 0:
          p.size = in.u8();
          break;
        case 1:
          p.size = in.u16();
          break;
        case 2:
          p.size = 0;
          break;
        default:
          p.size = in.u32();  // many chunks with a small slot
      }
    }
    total += p.size;
    s.entries.push_back(p);
  }
  const std::uint8_t slot = in.u8();
  s.accept.slot_size = slot >= 0xF0 ? kMinSlotSize : 1 + slot % 16U;
  const std::uint8_t count = in.u8();
  s.accept.slot_count = count >= 0xF0 ? kMaxSlotCount : 1 + count % 8U;
  s.accept.region_addr = std::uint64_t{in.u32()} << 12;
  s.max_active = in.u8() % 10U;
  s.open.entry_count = n;
  s.open.total_bytes = total;
  switch (in.u8() % 8) {  // an Open that lies about the session
    case 0:
      s.open.total_bytes = in.u64();
      s.honest = false;
      break;
    case 1:
      s.open.entry_count = 1 + in.u8();
      s.honest = false;
      break;
    default:
      break;
  }
  return s;
}

}  // namespace rdmax::fuzz
