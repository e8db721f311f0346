# BLAKE3's official C implementation, built from the sources Debian ships (librust-blake3-dev
# installs the crate, its c/ folder included, under /usr/share/cargo/registry/): never a copy
# in our tree. common/digest/blake3_tree.cpp needs more than blake3.h offers (the compression and
# many-chunk functions of blake3_impl.h, to hash subtrees apart on every core), so a shared
# library that exports only the public API (newer Debian's libblake3-dev) would not do.
# -DRDMAX_BLAKE3_SOURCE_DIR=DIR points at another copy of those sources.
file(GLOB _rdmax_blake3_candidates LIST_DIRECTORIES true /usr/share/cargo/registry/blake3-*/c)
list(SORT _rdmax_blake3_candidates COMPARE NATURAL ORDER DESCENDING)
list(GET _rdmax_blake3_candidates 0 _rdmax_blake3_default)
set(RDMAX_BLAKE3_SOURCE_DIR "${_rdmax_blake3_default}" CACHE PATH
    "BLAKE3's C sources (blake3.c, blake3_impl.h): Debian's librust-blake3-dev")
if(NOT EXISTS "${RDMAX_BLAKE3_SOURCE_DIR}/blake3_impl.h")
  message(FATAL_ERROR "BLAKE3's C sources not found (RDMAX_BLAKE3_SOURCE_DIR="
                      "'${RDMAX_BLAKE3_SOURCE_DIR}'): apt-get install librust-blake3-dev")
endif()

enable_language(C)
set(_b3 "${RDMAX_BLAKE3_SOURCE_DIR}")
set(_rdmax_blake3_files ${_b3}/blake3.c ${_b3}/blake3_dispatch.c ${_b3}/blake3_portable.c)
set(_rdmax_blake3_defs "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  # The hand-written assembly for SSE2, SSE4.1, AVX2 and AVX-512; blake3_dispatch.c picks one
  # at run time by what the CPU has.
  enable_language(ASM)
  foreach(isa sse2 sse41 avx2 avx512)
    list(APPEND _rdmax_blake3_files ${_b3}/blake3_${isa}_x86-64_unix.S)
  endforeach()
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  list(APPEND _rdmax_blake3_files ${_b3}/blake3_neon.c)
else()
  set(_rdmax_blake3_defs BLAKE3_NO_SSE2 BLAKE3_NO_SSE41 BLAKE3_NO_AVX2 BLAKE3_NO_AVX512)
endif()

add_library(rdmax_blake3 STATIC ${_rdmax_blake3_files})
# Not our code: none of our warning or sanitizer flags (the fuzz build's compiler is clang++
# while C goes to cc, and a sanitizer runtime from one compiler must not meet the other's
# objects); optimised in every build type, since hashing speed is what it is for.
set_property(TARGET rdmax_blake3 PROPERTY COMPILE_OPTIONS -O3)
set_property(TARGET rdmax_blake3 PROPERTY POSITION_INDEPENDENT_CODE ON)
set_property(TARGET rdmax_blake3 PROPERTY UNITY_BUILD OFF)
target_compile_definitions(rdmax_blake3 PRIVATE ${_rdmax_blake3_defs})
target_include_directories(rdmax_blake3 SYSTEM PUBLIC "${_b3}")
