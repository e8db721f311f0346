#pragma once
// Prometheus's text exposition format (version 0.0.4), what both daemons' --metrics pages are
// written with: a family's HELP and TYPE lines, then its samples.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/enum_names.hpp"

namespace rdmax::prometheus_text {

// One family: its HELP and TYPE lines, then its samples (`samples` appends them).
template <typename Samples>
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            Samples&& samples) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  samples();
}

void sample(std::string& out, std::string_view name, std::string_view labels, std::uint64_t v);

// key="value", the value escaped as the format wants.
std::string label(std::string_view key, std::string_view value);

// "Exists" -> "exists", "BadDigest" -> "bad_digest": an enumerator as a label value.
std::string snake_case(std::string_view name);

// One sample per value of the enum E, labelled `key` with its name; counters[value] holds it.
template <typename E, typename Counters>
void by_enum(std::string& out, std::string_view name, std::string_view key,
             const Counters& counters) {
  for (E e : proto::enum_values<E>())
    sample(out, name, label(key, snake_case(proto::to_string(e))),
           counters[static_cast<std::size_t>(e)].load(std::memory_order_relaxed));
}

// rdmax_build_info's labels: the version, the digests and the protocol versions spoken.
std::string build_labels();

}  // namespace rdmax::prometheus_text
