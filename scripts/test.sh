#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what is needed, builds,
# and runs every test: unit tests, then the end-to-end tests over Soft-RoCE.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DRDMAX_WERROR=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
# Unit tests in parallel; the Soft-RoCE tests one at a time (each boots guests that
# want both cores).
ctest --test-dir "$build" --output-on-failure -L unit -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -L rxe
