# Shared helpers for the end-to-end tests. Sourced; each test runs inside scripts/rxe-run.
set -euo pipefail
: "${RXE_ADDR:?run this test through scripts/rxe-run}"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PATH=$repo/scripts:$PATH

# A working directory that both hosts of the two-host topology can see (host filesystem).
shared=$(mktemp -d "${RXE_SHARED_TMP:-/tmp}/rdmax-e2e.XXXXXX")
bg_pids=()
_cleanup() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$shared"
}
trap _cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# wait_for SECONDS CMD...: poll CMD until it succeeds; fail loudly after SECONDS.
wait_for() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || fail "waited ${limit}s for: $*"
    sleep 0.1
  done
}

# A listening rdma_cm id on PORT, as rdma-core's own resource tracking reports it.
cm_listening() { rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN.*src-addr [^ ]*:$1\b"; }
