#pragma once
// A short, fixed-capacity list of actions: what one state-machine transition asks its
// driver to carry out, in order. Fixed capacity keeps transitions allocation-free.

#include <array>
#include <concepts>
#include <cstddef>

namespace rdmax::proto {

template <typename Action, std::size_t Capacity = 4>
class ActionList {
 public:
  constexpr ActionList() = default;
  // ActionList{a, b, c}, or {a, b, c} where an ActionList is expected. The count is part of
  // the type of the call, so a list longer than Capacity does not compile (no matching
  // constructor) instead of writing past items_; an initializer_list's size is only known at
  // run time. Not explicit, so that `return {next, {a, b}};` works.
  template <std::same_as<Action>... Actions>
  constexpr ActionList(Actions... actions) requires(sizeof...(Actions) <= Capacity)
      : items_{actions...}, size_(sizeof...(Actions)) {}

  constexpr const Action* begin() const { return items_.data(); }
  constexpr const Action* end() const { return items_.data() + size_; }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr bool contains(Action a) const {
    for (Action x : *this)
      if (x == a) return true;
    return false;
  }
  constexpr bool operator==(const ActionList& other) const {
    if (size_ != other.size_) return false;
    for (std::size_t i = 0; i < size_; ++i)
      if (items_[i] != other.items_[i]) return false;
    return true;
  }

 private:
  std::array<Action, Capacity> items_{};
  std::size_t size_ = 0;
};

// Whether each action of transition `t` finds the data it needs (`needed_by`, found by
// argument-dependent lookup in the machine's header) in what its input carries: an action
// that needs none always does, and a SendError in an illegal transition is given its Abort by
// the driver. Each machine's .cpp checks its whole table with it in a static_assert.
template <typename Transition, typename Data>
constexpr bool actions_find_their_data(const Transition& t, Data carried) {
  for (auto a : t.actions) {
    const Data need = needed_by(a);
    if (need == Data::None || (a == decltype(a)::SendError && t.illegal)) continue;
    if (need != carried) return false;
  }
  return true;
}

}  // namespace rdmax::proto
