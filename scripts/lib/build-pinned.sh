#!/usr/bin/env bash
# build-pinned.sh COMMIT BUILD_DIR WHAT [unity]: builds rdma-send and rdma-recv of COMMIT of
# this repository (WHAT names it in messages), for the interoperability tests; `unity` for a
# tree whose sources build in unity batches (faster; older trees clash in them).
#   BUILD_DIR/src              that commit's tree (git archive)
#   BUILD_DIR/src-build/bin    its rdma-send and rdma-recv (Release, no tests)
# Idempotent: does nothing when BUILD_DIR already holds programs built from that commit.
# Exit 77 (with a SKIP line on stderr) when this clone does not have the commit, for
# example a shallow clone or a source tarball.
set -euo pipefail

pinned=${1:?usage: build-pinned.sh COMMIT BUILD_DIR WHAT}
build=${2:?usage: build-pinned.sh COMMIT BUILD_DIR WHAT}
what=${3:?usage: build-pinned.sh COMMIT BUILD_DIR WHAT}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
me=$(basename "$build")

if ! commit=$(git -C "$repo" rev-parse --verify --quiet "$pinned^{commit}" 2>/dev/null); then
  echo "SKIP: $what ($pinned) is not in $repo (a shallow clone or a tarball?);" \
    "the tests against it cannot run" >&2
  exit 77
fi

mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$build/src bin=$build/src-build/bin stamp=$build/src-build/.built-from-commit
if [[ -x $bin/rdma-send && -x $bin/rdma-recv && $(cat "$stamp" 2>/dev/null) == "$commit" ]]; then
  echo "$me: $bin is up to date ($what, $commit)"
  exit 0
fi

echo "$me: building rdma-send and rdma-recv of $what ($commit) into $bin"
rm -rf "$src" "$stamp" "$build/src-build"
mkdir -p "$src"
git -C "$repo" archive "$commit" | tar -x -C "$src"
unity=()
[[ ${4:-} != unity ]] || unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
# -O2 as the Debian package builds (CMake's Release is -O3: a fifth more compile time).
# shellcheck source=scripts/lib/cmake-generator.sh
source "$repo/scripts/lib/cmake-generator.sh"
cmake_generator "$build/src-build"
cmake -S "$src" -B "$build/src-build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DRDMAX_BUILD_TESTS=OFF \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
  "${unity[@]}" >/dev/null
cmake --build "$build/src-build" -j"$(nproc)" --target rdma-send rdma-recv >/dev/null
[[ -x $bin/rdma-send && -x $bin/rdma-recv ]] || {
  echo "$me: the build of $commit left no rdma-send and rdma-recv in $bin" >&2
  exit 1
}
echo "$commit" >"$stamp"
echo "$me: done ($("$bin/rdma-send" --version 2>&1 | head -1))"
