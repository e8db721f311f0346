#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time (RDMAX_FUZZ_SECONDS, default 30) on a scratch
# copy of its seed corpus, so the inputs it discovers never land in the repository.
# libFuzzer exits non-zero on a crash, a sanitizer report, a broken invariant (abort), a
# leak or an input slower than -timeout; it then writes the input to ARTIFACT_DIR.
# Usage: run_fuzzer.sh FUZZER SEED_DIR ARTIFACT_DIR
set -euo pipefail
fuzzer=$1 seeds=$2 artifacts=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmax-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -R "$seeds"/. "$work"/
mkdir -p "$artifacts"
# -max_len above kMaxMessageSize (4096) so the decoder also sees oversized SENDs.
"$fuzzer" -max_total_time="${RDMAX_FUZZ_SECONDS:-30}" -timeout=10 -max_len=5000 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$work"
