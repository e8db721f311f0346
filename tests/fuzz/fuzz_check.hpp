#pragma once
// Invariant checks for the fuzz targets. assert() would vanish in the release-type builds the
// fuzzers use (NDEBUG), and a broken invariant must always abort so libFuzzer records the input.

#include <cstdio>
#include <cstdlib>

namespace rdmax::fuzz {

[[noreturn]] inline void invariant_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: invariant violated: %s\n", file, line, what);
  std::abort();
}

}  // namespace rdmax::fuzz

// A macro only for the stringified condition and the location in the report.
#define FUZZ_CHECK(condition)                                                          \
  do {                                                                                 \
    if (!(condition)) ::rdmax::fuzz::invariant_failed(#condition, __FILE__, __LINE__); \
  } while (false)
