#!/usr/bin/env bash
# The main job (README): install what is needed, build, and run one real transfer over
# Soft-RoCE: rdma-recv with a secrets file, rdma-send with an id; shows the verdict and
# the secret. Usage: scripts/demo.sh [SIZE_MIB]   (default 32)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-programs.sh
export DEMO_MIB=${1:-32}
exec scripts/rxe-run --timeout 300 -- bash -c '
  set -euo pipefail
  work=$RXE_SCRATCH/demo; mkdir -p "$work/out"
  printf "# id secret\ndemo-sender correct-horse-battery-staple\n" >"$work/secrets"
  chmod 600 "$work/secrets"
  head -c $((DEMO_MIB << 20)) /dev/urandom >"$work/payload.bin"
  "$RDMAX_BIN/rdma-recv" --bind "$RXE_ADDR" --dir "$work/out" --secrets "$work/secrets" 2>"$work/recv.log" &
  recv=$!
  until grep -q "listening on" "$work/recv.log"; do
    kill -0 $recv 2>/dev/null || { cat "$work/recv.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "== rdma-send --host $RXE_ADDR --id demo-sender payload.bin ($DEMO_MIB MiB) on $RXE_DEV ($RXE_MODE)"
  rc=0
  secret=$("$RDMAX_BIN/rdma-send" --host "$RXE_ADDR" --id demo-sender "$work/payload.bin") || rc=$?
  kill $recv; wait $recv || true
  echo "== receiver log:"; sed "s/^/   /" "$work/recv.log"
  echo "== exit status $rc; received file: $(sha256sum <"$work/out/payload.bin" | cut -c1-16)... sent: $(sha256sum <"$work/payload.bin" | cut -c1-16)..."
  echo "== secret for demo-sender: $secret"
  exit $rc
'
