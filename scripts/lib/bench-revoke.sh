#!/usr/bin/env bash
# Slot key revocation: memory-region re-registration against type-2 memory windows
# (tests/bench/revoke_bench.cpp), for 64 KiB and 1 MiB slots. Runs inside scripts/rxe-run:
#
#   RDMAX_BIN=$PWD/build/bin scripts/rxe-run -- scripts/lib/bench-revoke.sh [BENCH OPTION...]
#
# BENCH OPTIONs go to every run (e.g. --cycles 500). BENCH_REVOKE_SIZES overrides the
# slot sizes ("64K 1M"). Prints each run's PASS/FAIL lines and Markdown tables; exits 1
# when any run failed a check or could not run.
set -euo pipefail
: "${RXE_ADDR:?run this through scripts/rxe-run}"
: "${RDMAX_BIN:?set RDMAX_BIN to the build directory of the programs, e.g. build/bin}"
bench=$RDMAX_BIN/rdmax-revoke-bench
[[ -x $bench ]] || { echo "bench-revoke: $bench missing: cmake --build build --target rdmax-revoke-bench" >&2; exit 1; }

echo "Run: $(date -u +%Y-%m-%dT%H:%MZ), ${RXE_MODE:-?} mode, $(nproc) vCPU, device ${RXE_DEV:-?} at $RXE_ADDR, netdev MTU $(cat "/sys/class/net/${RXE_NETDEV:-}/mtu" 2>/dev/null || echo '?')."
status=0
for size in ${BENCH_REVOKE_SIZES:-64K 1M}; do
  rc=0
  "$bench" --address "$RXE_ADDR" --slot-size "$size" "$@" || rc=$?
  if ((rc != 0)); then
    echo "bench-revoke: S = $size: rdmax-revoke-bench exited $rc" >&2
    status=1
  fi
done
if ((status != 0)) && [[ ${RXE_MODE:-} == vm ]]; then
  echo "bench-revoke: the guest kernel's RDMA messages:" >&2
  dmesg 2>/dev/null | grep -v -i 'command line' | grep -i -E 'rdma_rxe|infiniband|rxe[0-9]' | tail -n 30 >&2 || true
fi
exit "$status"
