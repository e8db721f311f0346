#include "protocol/action_list.hpp"

#include <gtest/gtest.h>

#include <type_traits>
#include <vector>

namespace {

using rdmax::proto::ActionList;

enum class Act { A, B, C, D, E };
using List = ActionList<Act, 3>;

// Whether `List{args...}` compiles.
template <typename... Args>
constexpr bool brace_constructible = requires(Args... args) {
  List{args...};
};

// The capacity is checked where the list is written, at compile time: a fourth action has no
// constructor to go to, so it cannot overflow the array at run time.
static_assert(brace_constructible<>);
static_assert(brace_constructible<Act>);
static_assert(brace_constructible<Act, Act, Act>);
static_assert(!brace_constructible<Act, Act, Act, Act>);
static_assert(std::is_constructible_v<List, Act, Act, Act>);
static_assert(!std::is_constructible_v<List, Act, Act, Act, Act>);
// Only actions of the list's own type, no conversions.
static_assert(!brace_constructible<int>);
static_assert(!brace_constructible<Act, int>);
// `{a, b}` works where a list is expected, as transitions return it.
static_assert(std::is_convertible_v<Act, List>);

constexpr List kFull{Act::C, Act::A, Act::B};
static_assert(kFull.size() == 3);
static_assert(kFull.contains(Act::A) && !kFull.contains(Act::D));

std::vector<Act> items(const List& list) {
  return {list.begin(), list.end()};
}

TEST(ActionList, KeepsTheActionsInOrder) {
  EXPECT_EQ(items(kFull), (std::vector<Act>{Act::C, Act::A, Act::B}));
  const List two{Act::B, Act::A};
  EXPECT_EQ(two.size(), 2U);
  EXPECT_EQ(items(two), (std::vector<Act>{Act::B, Act::A}));
}

TEST(ActionList, EmptyByDefault) {
  const List none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0U);
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_FALSE(none.contains(Act::A));
  EXPECT_EQ(none, List{});
}

TEST(ActionList, EqualityComparesContentAndOrder) {
  EXPECT_EQ((List{Act::A, Act::B}), (List{Act::A, Act::B}));
  EXPECT_NE((List{Act::A, Act::B}), (List{Act::B, Act::A}));
  EXPECT_NE((List{Act::A}), (List{Act::A, Act::B}));
  EXPECT_NE((List{Act::A, Act::B}), (List{Act::A}));
}

TEST(ActionList, DefaultCapacityIsFour) {
  using Default = ActionList<Act>;
  static_assert(std::is_constructible_v<Default, Act, Act, Act, Act>);
  static_assert(!std::is_constructible_v<Default, Act, Act, Act, Act, Act>);
  const Default four{Act::A, Act::B, Act::C, Act::D};
  EXPECT_EQ(four.size(), 4U);
  EXPECT_TRUE(four.contains(Act::D));
  EXPECT_FALSE(four.contains(Act::E));
}

}  // namespace
