#!/usr/bin/env bash
# End-to-end: eight rdma-send processes at once to one rdma-recv, three rounds. Files of
# 1 to 6 MiB (odd sizes) against a 512 KiB window (4 slots of 128 KiB), so every transfer
# goes round its window many times while the others compete for the same daemon. Every
# file must verify (cmp), and after each round the receiver's open fds,
# MRs, QPs, cm_ids (rdma_cm's resource tracking, by pid) and its VmRSS must be back at
# the idle level measured after a warm-up transfer. Prints the wall time of each round.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv

port=18515 senders=8 rounds=3
rss_slack_kib=$((4 * 1024)) # "back to idle" for VmRSS: within 4 MiB of the idle level
# Sizes in bytes of the eight files of a round (1 to 6 MiB, none a multiple of a slot).
sizes=(1048577 1572863 2097153 2621447 3145729 4194301 5242883 6291457)
in=$RXE_SCRATCH/in out=$RXE_SCRATCH/out recv_log=$RXE_SCRATCH/rdma-recv.log
rm -rf "$in" "$out"
mkdir -p "$in" "$out"

fail_context() {
  local f
  for f in "$RXE_SCRATCH"/*.err; do
    if [[ -s $f ]]; then echo "  $f (last 10 lines):" && tail -n 10 "$f" | sed 's/^/    | /'; fi
  done
  echo "  rdma-recv log (last 25 lines):"
  tail -n 25 "$recv_log" 2>/dev/null | sed 's/^/    | /'
  echo "  receiver: $(resources), VmRSS $(rss_kib) KiB (idle: ${idle_resources:-?}, ${idle_rss:-?} KiB)"
  resource_lists "${recv_pid:-}"
}

# The receiver's footprint (lib.sh).
resources() { footprint "$recv_pid"; }
rss_kib() { vmrss_kib "$recv_pid"; }
at_idle() { [[ $(resources) == "$idle_resources" ]]; }
rss_near_idle() { (($(rss_kib) <= idle_rss + rss_slack_kib)); }
no_qps() { (($(res_count qp "$recv_pid") == 0)); }

# send_all NAME...: one rdma-send per file of $in, all at once; waits for every one.
# Each leaves its status in $RXE_SCRATCH/NAME.rc.
send_all() {
  local name pids=()
  for name in "$@"; do
    (
      rc=0
      timeout -k 5 120 "$send" --host "$RXE_ADDR" --port "$port" "$in/$name" \
        >"$RXE_SCRATCH/$name.out" 2>"$RXE_SCRATCH/$name.err" </dev/null || rc=$?
      echo "$rc" >"$RXE_SCRATCH/$name.rc"
    ) &
    pids+=($!)
  done
  wait "${pids[@]}" || true
}

# expect_verified NAME: rdma-send exited 0 and $out/NAME is identical to $in/NAME, byte
# for byte. One process per file (cmp): a process start costs 0.1-0.2 s in the test bed,
# and a round checks eight files.
expect_verified() {
  local name=$1 rc="?"
  read -r rc 2>/dev/null <"$RXE_SCRATCH/$name.rc" || true
  [[ $rc == 0 ]] || fail "$name: rdma-send exited $rc: $(tail -n 2 "$RXE_SCRATCH/$name.err" | tr '\n' ' ')"
  [[ -f $out/$name ]] || fail "$name was not delivered"
  cmp -s "$in/$name" "$out/$name" || fail "$name: differs from what was sent ($(cmp "$in/$name" "$out/$name" 2>&1 | head -n 1))"
}

case_round() {
  local round=$1 i names=() total=0 t0 t1 wall rate
  for i in "${!sizes[@]}"; do
    names+=("r$round-s$((i + 1)).bin")
    head -c "${sizes[i]}" /dev/urandom >"$in/${names[i]}"
    total=$((total + sizes[i]))
  done
  t0=$(date +%s.%N)
  send_all "${names[@]}"
  t1=$(date +%s.%N)
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  rate=$(awk -v n="$total" -v s="$wall" 'BEGIN { printf "%.1f", n / s / 1048576 }')
  for i in "${!names[@]}"; do expect_verified "${names[i]}"; done
  ! daemon_exited recv || fail "rdma-recv exited with status $(daemon_status recv)"
  eventually 10 at_idle || fail "round $round: resources not back to idle: $(resources), idle $idle_resources"
  eventually 10 rss_near_idle ||
    fail "round $round: VmRSS $(rss_kib) KiB, idle $idle_rss KiB (allowed +$rss_slack_kib KiB)"
  pass "round $round: $senders senders, $((total / 1048576)) MiB verified in ${wall}s wall ($rate MiB/s together); back to idle ($(resources), VmRSS $(rss_kib) KiB vs $idle_rss KiB)"
}

# ---------------------------------------------------------------------------------
start_daemon recv "$recv_log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$out" \
  --slot-size 128K --slots 4
recv_pid=$daemon_pid
wait_for_line 30 recv "$recv_log" 'listening on'

# Warm-up: one transfer, then the idle footprint every round must return to.
head -c 1048576 /dev/urandom >"$in/warmup.bin"
send_all warmup.bin
expect_verified warmup.bin
eventually 10 no_qps || fail "QPs still open after the warm-up: $(resources)"
idle_resources=$(resources) idle_rss=$(rss_kib)
echo "receiver pid $recv_pid idle: $idle_resources, VmRSS $idle_rss KiB"

for round in $(seq "$rounds"); do run_case "round-$round" case_round "$round"; done
echo "time in the test bed: ${SECONDS}s"
report_cases concurrency
