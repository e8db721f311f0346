#pragma once

// Zeroing that the optimiser may not remove. A plain memset before free or end of lifetime is
// a dead store the compiler is allowed to drop; writes through a volatile pointer are not.

#include <cstddef>

namespace rdmax::proto {

inline void secure_wipe(void* data, std::size_t size) {
  volatile unsigned char* p = static_cast<volatile unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) p[i] = 0;
}

}  // namespace rdmax::proto
