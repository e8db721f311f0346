#!/usr/bin/env bash
# Smoke test: perftest's ib_write_bw across the two-host topology (server on host B,
# client on host A, joined by the virtual wire). perftest's own TCP side channel sets up
# the QPs; rping covers rdma_cm.
source "$(dirname "$0")/lib.sh"
size=1048576 iters=${IB_ITERS:-100}
args=(-d "$RXE_DEV" -s $size -n $iters -F --report_gbits -p 18600)
rxe-peer bash -c "timeout 90 ib_write_bw ${args[*]} >'$shared/server.log' 2>&1" &
bg_pids+=($!)
# The server listens for the side channel on host B: ask B.
wait_for 30 rxe-peer bash -c "ss -Hltn 'sport = :18600' | grep -q ."
timeout 90 ib_write_bw "${args[@]}" "$RXE_PEER_ADDR" >"$shared/client.log" 2>&1 ||
  { cat "$shared/client.log" >&2; fail "ib_write_bw client failed"; }
line=$(awk -v s=$size '$1==s && NF>=5 {print}' "$shared/client.log" | tail -1)
[[ -n $line ]] || { cat "$shared/client.log" >&2; fail "no result line"; }
gbps=$(awk '{print $4}' <<<"$line")
awk -v g="$gbps" 'BEGIN{exit !(g > 0)}' || fail "zero bandwidth: $line"
pass "ib_write_bw $RXE_ADDR -> $RXE_PEER_ADDR: $gbps Gb/s average (1 MiB writes, $iters iterations)"
