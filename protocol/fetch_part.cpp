#include "protocol/fetch_part.hpp"

#include <string>

namespace rdmax::proto {

namespace {
void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint32_t u32_at(const std::string& value, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(value[at + i])) << (8 * i);
  return v;
}
}  // namespace

HelloExtension fetch_part_extension(FetchPart part) {
  std::string value;
  put_u32(value, part.index);
  put_u32(value, part.count);
  return {kExtensionFetchPart, std::move(value)};
}

FetchPart fetch_part_of(const Fetch& fetch) {
  for (const HelloExtension& e : fetch.extensions)
    if (e.type == kExtensionFetchPart && e.value.size() == kFetchPartValueBytes)
      return {u32_at(e.value, 0), u32_at(e.value, 4)};
  return {};
}

}  // namespace rdmax::proto
