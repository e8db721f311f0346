#!/usr/bin/env bash
# build-release.sh BUILD_DIR: builds rdma-send and rdma-recv of the last release without
# BLAKE3 (commit ae6e039 of this repository: its receiver refuses an Open naming BLAKE3) for
# tests/e2e/interop_release.sh, into BUILD_DIR/src-build/bin (scripts/lib/build-pinned.sh;
# exit 77 when this clone lacks it).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/build-pinned.sh" ae6e039 \
  "${1:?usage: build-release.sh BUILD_DIR}" "the last release without BLAKE3" unity
