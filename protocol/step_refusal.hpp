#pragma once
// Why a ledger refused a step of an entry: the entry's machine refused it (an EntryFault,
// protocol/entry_machine.hpp: the one way to say "not in this state"), or a rule of the
// ledger's own did (`Rule`: what the machine cannot know, such as a slot, an offset or what
// our Offer asked). Each layer has one enum, and a ledger's never restates the machine's: a
// Take of a file taken already is EntryFault::AlreadyTaken whichever side judges it.

#include <optional>
#include <variant>

#include "protocol/entry_machine.hpp"
#include "protocol/enum_names.hpp"

namespace rdmax::proto {

template <class Rule>
class StepRefusal {
 public:
  // Implicit, as the enums are: `return EntryFault::NotTaken;`, `EXPECT_EQ(r, Rule::X)`.
  constexpr StepRefusal(EntryFault fault) : why_(fault) {}  // NOLINT(google-explicit-constructor)
  constexpr StepRefusal(Rule rule) : why_(rule) {}          // NOLINT(google-explicit-constructor)

  // The machine's fault, or none where a rule of the ledger's refused.
  constexpr std::optional<EntryFault> fault() const {
    if (const auto* f = std::get_if<EntryFault>(&why_)) return *f;
    return std::nullopt;
  }
  constexpr bool operator==(const StepRefusal&) const = default;

 private:
  template <class R>
  friend constexpr const char* to_string(const StepRefusal<R>& refusal);

  std::variant<EntryFault, Rule> why_;
};

// The enumerator's name, whichever layer refused ("NotTaken", "WrongOffset").
template <class Rule>
[[nodiscard]] constexpr const char* to_string(const StepRefusal<Rule>& refusal) {
  return std::visit([](auto why) { return to_string(why); }, refusal.why_);
}

}  // namespace rdmax::proto
