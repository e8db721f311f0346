# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/lib/build-pinned.sh.
# cmake_generator DIR: sets the array gen to cmake's options for a build in DIR: Ninja where
# there is one, unless DIR was configured before with another generator (a developer's own
# build directory), which cmake cannot change. Why Ninja: Make builds the goals of one
# `cmake --build --target A B C` one after the other (CMake's top-level Makefile is not
# parallel), and a target's sources only after the libraries it links; the sanitizer builds
# of scripts/test.sh compiled rdma-send, rdma-recv and the pipeline benchmark on one core after
# the unit tests (39 s and 31 s with the other core idle). Ninja compiles any source as soon
# as a core is free.
# shellcheck disable=SC2034 # gen is the caller's
cmake_generator() {
  local cached
  cached=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null || true)
  gen=()
  if command -v ninja >/dev/null && [[ -z $cached || $cached == Ninja ]]; then gen=(-G Ninja); fi
}
