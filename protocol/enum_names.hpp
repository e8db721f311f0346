#pragma once
// Every enumerator's printed name is its own name, read from the enum itself: the list of
// enumerators is the one list, so a new state, event or message type is named the moment it
// is written, and no switch of names falls behind its enum.
//
// How: the compiler spells a template's arguments in __PRETTY_FUNCTION__, so
// `spelled<SenderState::Done>()` holds "...SenderState::Done]" (GCC and clang alike), while a
// value with no enumerator is spelled as a cast, "(rdmax::proto::SenderState)7". Each value
// in [0, kNamedRange) is tried once at compile time; an enumerator outside that range, or a
// value without one, prints as "?".
//
// `to_string(e)` for any enum of rdmax::proto (found by argument-dependent lookup); an enum
// whose printed names are words for people, not its enumerators (DigestAlgorithm's
// "fs-verity", EntryKind's "file"), keeps its own overload, which is chosen first.
// enum_values<E>() lists the enumerators in value order: the tests that walk every state
// and event take their lists from it.

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

namespace rdmax::proto {

namespace enum_names_detail {

inline constexpr int kNamedRange = 64;

template <auto V>
constexpr std::string_view spelled() {
  return __PRETTY_FUNCTION__;
}

// The enumerator's own name ("Done"), or empty where V has none.
constexpr std::string_view name_in(std::string_view spelling) {
  // GCC: "... [with auto V = ns::E::Done; ...]"; clang: "... [V = ns::E::Done]".
  std::size_t from = spelling.find("V = ");
  if (from == std::string_view::npos) return {};
  from += 4;
  std::size_t to = spelling.find_first_of(";]", from);
  if (to == std::string_view::npos) return {};
  const std::string_view value = spelling.substr(from, to - from);
  if (value.empty() || value.front() == '(') return {};  // a cast: no enumerator
  const std::size_t colons = value.rfind("::");
  return colons == std::string_view::npos ? value : value.substr(colons + 2);
}

// The name with a terminating zero, in static storage, so that callers get a const char*.
template <auto V>
struct Stored {
  static constexpr std::string_view name = name_in(spelled<V>());
  static constexpr auto chars = [] {
    std::array<char, name.size() + 1> out{};
    for (std::size_t i = 0; i < name.size(); ++i) out[i] = name[i];
    return out;
  }();
};

// Each value's name (empty: no enumerator), for constant evaluation, and the same names as
// C strings, for the callers: two tables, so that nothing compares addresses at compile time
// (which a sanitizer build does not allow).
template <typename E, std::size_t... I>
constexpr std::array<std::string_view, sizeof...(I)> views(std::index_sequence<I...>) {
  return {Stored<static_cast<E>(I)>::name...};
}
template <typename E, std::size_t... I>
constexpr std::array<const char*, sizeof...(I)> strings(std::index_sequence<I...>) {
  return {Stored<static_cast<E>(I)>::chars.data()...};
}

template <typename E>
inline constexpr auto kViews = views<E>(std::make_index_sequence<kNamedRange>{});
template <typename E>
inline constexpr auto kStrings = strings<E>(std::make_index_sequence<kNamedRange>{});

}  // namespace enum_names_detail

template <typename E>
requires std::is_enum_v<E>
[[nodiscard]] constexpr const char* to_string(E value) {
  const auto index = static_cast<long long>(value);
  if (index < 0 || index >= enum_names_detail::kNamedRange) return "?";
  const auto at = static_cast<std::size_t>(index);
  return enum_names_detail::kViews<E>[at].empty() ? "?" : enum_names_detail::kStrings<E>[at];
}

template <typename E>
requires std::is_enum_v<E>
[[nodiscard]] constexpr auto enum_values() {
  constexpr std::size_t count = [] {
    std::size_t n = 0;
    for (std::string_view name : enum_names_detail::kViews<E>) n += name.empty() ? 0 : 1;
    return n;
  }();
  std::array<E, count> out{};
  std::size_t at = 0;
  for (std::size_t i = 0; i < enum_names_detail::kViews<E>.size(); ++i) {
    if (!enum_names_detail::kViews<E>[i].empty()) out[at++] = static_cast<E>(i);
  }
  return out;
}

}  // namespace rdmax::proto
