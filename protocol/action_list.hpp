#pragma once
// A short, fixed-capacity list of actions: what one state-machine transition asks its
// driver to carry out, in order. Fixed capacity keeps transitions allocation-free.

#include <array>
#include <cstddef>
#include <initializer_list>

namespace rdmax::proto {

template <typename Action, std::size_t Capacity = 4>
class ActionList {
 public:
  constexpr ActionList() = default;
  constexpr ActionList(std::initializer_list<Action> actions) {
    for (Action a : actions) items_[size_++] = a;  // callers never pass more than Capacity
  }
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

}  // namespace rdmax::proto
