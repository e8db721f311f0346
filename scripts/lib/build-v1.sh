#!/usr/bin/env bash
# build-v1.sh BUILD_DIR: builds rdma-send and rdma-recv of the last protocol-version-1
# release (commit aafeb35 of this repository) for tests/e2e/interop_v1.sh.
#   BUILD_DIR/src              that commit's tree (git archive)
#   BUILD_DIR/src-build/bin    its rdma-send and rdma-recv (Release, no tests)
# Idempotent: does nothing when BUILD_DIR already holds programs built from that commit.
# Exit 77 (with a SKIP line on stderr) when this clone does not have the commit, for
# example a shallow clone or a source tarball.
set -euo pipefail

v1_commit=aafeb35
build=${1:?usage: build-v1.sh BUILD_DIR}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

if ! commit=$(git -C "$repo" rev-parse --verify --quiet "$v1_commit^{commit}" 2>/dev/null); then
  echo "SKIP: no version-1 commit in this clone ($v1_commit is not in $repo:" \
    "a shallow clone or a tarball?); the version-1 interoperability test cannot run" >&2
  exit 77
fi

mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$build/src bin=$build/src-build/bin stamp=$build/src-build/.built-from-commit
if [[ -x $bin/rdma-send && -x $bin/rdma-recv && $(cat "$stamp" 2>/dev/null) == "$commit" ]]; then
  echo "build-v1: $bin is up to date (built from $commit)"
  exit 0
fi

echo "build-v1: building rdma-send and rdma-recv of $commit into $bin"
rm -rf "$src" "$stamp"
mkdir -p "$src"
git -C "$repo" archive "$commit" | tar -x -C "$src"
cmake -S "$src" -B "$build/src-build" -DCMAKE_BUILD_TYPE=Release -DRDMAX_BUILD_TESTS=OFF >/dev/null
cmake --build "$build/src-build" -j"$(nproc)" --target rdma-send rdma-recv >/dev/null
[[ -x $bin/rdma-send && -x $bin/rdma-recv ]] || {
  echo "build-v1: the build of $commit left no rdma-send and rdma-recv in $bin" >&2
  exit 1
}
echo "$commit" >"$stamp"
echo "build-v1: done ($("$bin/rdma-send" --version 2>&1 | head -1))"
