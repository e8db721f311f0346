#!/usr/bin/env bash
# build-v1.sh BUILD_DIR: builds rdma-send and rdma-recv of the last protocol-version-1
# release (commit aafeb35 of this repository) for tests/e2e/interop_v1.sh, into
# BUILD_DIR/src-build/bin (scripts/lib/build-pinned.sh; exit 77 when this clone lacks it).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/build-pinned.sh" aafeb35 "${1:?usage: build-v1.sh BUILD_DIR}" \
  "the last version-1 release"
