#pragma once
// Whether a message holds a phrase: what many tests ask of an error text or a log line.

#include <string_view>

namespace rdmax::test {

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace rdmax::test
