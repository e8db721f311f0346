#!/usr/bin/env bash
# One big file over one and two devices (multi-rail, issue 49), in the two-host test bed with
# two wires (rxe-run --hosts 2 --rails 2): BENCH_RAILS_MIB (default 1024) MiB of random bytes
# from host A to rdma-recv on host B, sent
#   1. on one connection (rxe0),
#   2. with -P 2 on one device (rxe0 to B's first address: both connections on one rail),
#   3. with -P 2 -d rxe0,rxe1 to B's two addresses (-H ADDR1+ADDR2: one connection a rail),
# each verified on B (sha256sum); beside them the reference, perftest's ib_write_bw (1 MiB
# writes) on rail 0 alone and on both rails at once. Prints each run's data seconds, rate and
# per-device share, and the ratios. Run by `BENCH_ONLY=rails scripts/bench.sh`.
source "$(dirname "$0")/../../tests/e2e/lib.sh"
[[ -n ${RXE_DEV2:-} ]] || { echo "bench-rails: needs rxe-run --hosts 2 --rails 2" >&2; exit 2; }
need_programs send recv
mib=${BENCH_RAILS_MIB:-1024}
port=18960 in=$RXE_SCRATCH/rails-bench out=/run/rxe-scratch/rails-bench-out
recv_log=$shared/recv.log
mkdir -p "$in"
head -c "${mib}M" /dev/urandom >"$in/big.bin"
digest=$(sha256sum <"$in/big.bin" | cut -d' ' -f1)

# ib_write_bw from A to B on each rail given (rail 0: rxe0 to B's first address), at once.
ib_write_bw_rails() {
  local rails=$1 r dev peer iters=$((mib / 2)) pids=() total=0 gbps
  for ((r = 0; r < rails; r++)); do
    dev=$RXE_DEV peer=$RXE_PEER_ADDR
    ((r == 1)) && dev=$RXE_DEV2 peer=$RXE_PEER_ADDR2
    rxe-peer bash -c "timeout 300 ib_write_bw -d $dev -s 1048576 -n $iters -F --report_gbits \
      -p $((18700 + r)) >'$shared/ib-server-$r.log' 2>&1" &
    bg_pids+=($!)
    wait_for 30 rxe-peer bash -c "ss -Hltn 'sport = :$((18700 + r))' | grep -q ."
  done
  for ((r = 0; r < rails; r++)); do
    dev=$RXE_DEV peer=$RXE_PEER_ADDR
    ((r == 1)) && dev=$RXE_DEV2 peer=$RXE_PEER_ADDR2
    timeout 300 ib_write_bw -d "$dev" -s 1048576 -n "$iters" -F --report_gbits -p $((18700 + r)) \
      "$peer" >"$shared/ib-client-$r.log" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do
    wait "${pids[$r]}" || { cat "$shared/ib-client-$r.log" >&2; fail "ib_write_bw on rail $r failed"; }
    gbps=$(awk '$1 == 1048576 && NF >= 5 {g = $4} END {print g}' "$shared/ib-client-$r.log")
    total=$(awk -v a="$total" -v b="$gbps" 'BEGIN {print a + b}')
  done
  awk -v g="$total" 'BEGIN {printf "%.1f", g * 1000 / 8}'  # MB/s
}

rxe-peer bash -c "mkdir -p $out && exec $recv -p $port -o $out --timeout 60 2>>$recv_log" &
bg_pids+=($!)
wait_for 30 grep -q 'listening on' "$recv_log"

# one_run NAME ARGS...: one verified run; prints NAME, seconds, MB/s and each connection's share.
one_run() {
  local name=$1; shift
  rxe-peer rm -f "$out/big.bin"
  "$send" -p "$port" --stripe-min 1M --no-digest-cache --json "$@" "$in/big.bin" \
    >"$shared/$name.json" 2>"$shared/$name.err" || { cat "$shared/$name.err" >&2; fail "$name failed"; }
  [[ $(rxe-peer sha256sum "$out/big.bin" | cut -d' ' -f1) == "$digest" ]] || fail "$name: different on B"
  jq -r --arg n "$name" '[$n, (.seconds.data | tostring),
      ((.data_bytes_per_second / 1e6 * 10 | round) / 10 | tostring),
      ([.connections[] | "\(.device) \(.bytes_sent / 1048576 | round) MiB"] | join(", "))] | join(" | ")' \
    "$shared/$name.json"
}

echo "one ${mib} MiB file, host A -> host B, two 1-vCPU guests joined by two wires"
echo "reference: ib_write_bw rail 0: $(ib_write_bw_rails 1) MB/s; both rails at once: $(ib_write_bw_rails 2) MB/s"
echo "run | data s | MB/s | connections"
one_run "one connection, rxe0" -H "$RXE_PEER_ADDR" -d "$RXE_DEV"
one_run "-P 2, one device" -H "$RXE_PEER_ADDR" -P 2 -d "$RXE_DEV"
one_run "-P 2, rxe0 and rxe1" -H "$RXE_PEER_ADDR+$RXE_PEER_ADDR2" -P 2 -d "$RXE_DEV,$RXE_DEV2"
