#!/usr/bin/env bash
# End-to-end: one file over two devices (multi-rail; docs/PROTOCOL.md 7.12, issue 49). Two
# hosts joined by two wires (rxe-run --hosts 2 --rails 2): rxe0 and rxe1 on each, rdma-recv
# on host B listening on both, rdma-send on host A with -P 2 -d rxe0,rxe1 to B's two
# addresses as one receiver (-H ADDR1+ADDR2).
#   - the file arrives verified (its digest on B is the source's), and --json shows each
#     connection went through its own device and carried a share of the file
#   - the sender killed halfway: run again, it resumes from what was stored and sends only
#     the rest, over both devices again
#   - --check follows each rail: each address from its own device (and that device's
#     address); a second device that does not exist fails it
# RDMAX_RAILS_MIB sizes the file (default 32; docs/BENCHMARKS.md has a 1 GiB run, with
# rxe-run --mem 3072: the file lives in memory on both hosts).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
# (A skip is status 0 here, as faults.sh's, whose boot this shares: rxe.faults has no skip
# status, and in direct mode, on one device, neither suite can run.)
if [[ -z ${RXE_DEV2:-} ]]; then
  echo "SKIP: rails.sh needs two devices on each of two hosts (rxe-run --hosts 2 --rails 2)"
  exit 0
fi
need_programs send recv
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps.sh installs it)"
port=18950
mib=${RDMAX_RAILS_MIB:-32}
in=$RXE_SCRATCH/rails-in out=/run/rxe-scratch/rails-out  # out: host B's own scratch
recv_log=$shared/recv.log
mkdir -p "$in"
head -c "${mib}M" /dev/urandom >"$in/big.bin"
size=$(stat -c %s "$in/big.bin")
digest=$(sha256sum <"$in/big.bin" | cut -d' ' -f1)

fail_context() {
  echo "  rdma-send stderr (last 15 lines):"
  tail -n 15 "$shared/send.err" 2>/dev/null | sed 's/^/    | /'
  echo "  rdma-send --json:"
  head -c 1500 "$shared/send.json" 2>/dev/null | sed 's/^/    | /'
  echo "  rdma-recv log on host B (last 15 lines):"
  tail -n 15 "$recv_log" 2>/dev/null | sed 's/^/    | /'
}

# Every IPv4 address of host B: both rails. Windows of 4 MiB: a resumed rest of the file is
# more than one connection's window, so both carry a share of it too.
rxe-peer bash -c "mkdir -p $out && exec $recv -p $port -o $out --timeout 20 --slot-size 1M \
  --slots 4 2>>$recv_log" &
bg_pids+=($!)
wait_for 30 grep -q 'listening on' "$recv_log"

# rdma-send's arguments for both rails: -P 2, a connection from each device to each address.
over_both=(-H "$RXE_PEER_ADDR+$RXE_PEER_ADDR2" -p "$port" -P 2 -d "$RXE_DEV,$RXE_DEV2"
           --stripe-min 1M)
arrived_whole() {
  [[ $(rxe-peer sha256sum "$out/big.bin" | cut -d' ' -f1) == "$digest" ]] ||
    fail "big.bin on host B differs from the source"
}
# Both connections went through their own device, and each carried a share of SENT bytes.
# (One jq for all the fields: a program start costs 0.2 s in the guest.)
both_rails_carried() {
  local sent=$1 n devices dev_a a dev_b b seconds rate
  # (Not `< <(...)`: the guest has no /dev/fd.)
  read -r n devices dev_a a dev_b b seconds rate <<<"$(jq -r '[(.connections | length),
      ([.connections[].device] | sort | join(",")), .connections[0].device,
      .connections[0].bytes_sent, .connections[1].device, .connections[1].bytes_sent,
      .seconds.data, .data_bytes_per_second] | @tsv' "$shared/send.json")"
  ((n == 2)) || fail "not two connections in --json"
  [[ $devices == "$RXE_DEV,$RXE_DEV2" ]] ||
    fail "the connections did not go through $RXE_DEV and $RXE_DEV2 ($devices)"
  ((a > 0 && b > 0)) || fail "one device carried nothing: $a and $b bytes"
  ((a + b == sent)) || fail "the devices carried $a + $b bytes of $sent"
  echo "$dev_a carried $a bytes, $dev_b $b, $seconds s of data ($rate B/s)"
}

two_rails() {
  local rc=0
  "$send" "${over_both[@]}" --json "$in/big.bin" >"$shared/send.json" 2>"$shared/send.err" || rc=$?
  ((rc == 0)) || fail "rdma-send over two devices exited $rc"
  arrived_whole
  both_rails_carried "$size"
  grep -q "carrying chunks of 'big.bin'" "$recv_log" || fail "no member joined on the receiver"
}


killed_halfway() {
  rxe-peer rm -f "$out/big.bin"
  local lines t0=$SECONDS
  lines=$(wc -l <"$recv_log")
  "$send" "${over_both[@]}" --bwlimit 2M "$in/big.bin" >/dev/null 2>"$shared/send.err" &
  local pid=$!
  bg_pids+=("$pid")
  wait_for 30 logged_since "$recv_log" "$lines" "carrying chunks of 'big.bin'"
  sleep 2  # a part of the file at the limit (2 MiB/s): kept, with more than a window left
  alive "$pid" || fail "the sender was done before it could be killed ($((SECONDS - t0)) s)"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  wait_for 30 logged_since "$recv_log" "$lines" "kept .* of 'big.bin' to resume from"
  local rc=0
  "$send" "${over_both[@]}" --json "$in/big.bin" >"$shared/send.json" 2>"$shared/send.err" || rc=$?
  ((rc == 0)) || fail "the second run exited $rc"
  arrived_whole
  local sent resumed
  read -r sent resumed <<<"$(jq -r '[.bytes_sent, .entries[0].resumed_from] | @tsv' \
    "$shared/send.json")"
  ((resumed > 0)) || fail "the second run did not resume"
  ((sent + resumed == size)) || fail "sent $sent after resuming at $resumed of $size"
  echo "resumed at $resumed, sent $sent of $size"
  both_rails_carried "$sent"
}

check_rails() {
  local rc=0 line
  "$send" --check -H "$RXE_PEER_ADDR+$RXE_PEER_ADDR2" -p "$port" -d "$RXE_DEV,$RXE_DEV2" \
    >"$shared/check.out" 2>&1 || rc=$?
  ((rc == 0)) || fail "--check over both rails exited $rc: $(cat "$shared/check.out")"
  for line in "route to $RXE_PEER_ADDR:$port from $RXE_ADDR: $RXE_DEV port" \
    "route to $RXE_PEER_ADDR2:$port from $RXE_ADDR2: $RXE_DEV2 port"; do
    grep -qF "$line" "$shared/check.out" || fail "--check did not say '$line': $(cat "$shared/check.out")"
  done
  rc=0
  "$send" --check -H "$RXE_PEER_ADDR+$RXE_PEER_ADDR2" -p "$port" -d "$RXE_DEV,nosuch0" \
    >"$shared/check.out" 2>&1 || rc=$?
  ((rc == 1)) || fail "--check with a device that does not exist exited $rc, not 1"
  grep -q "RDMA device nosuch0: no such device" "$shared/check.out" ||
    fail "--check did not name the missing device: $(cat "$shared/check.out")"
}

run_case "one file over two devices ($mib MiB)" two_rails
run_case "killed halfway, then resumed over both devices" killed_halfway
run_case "--check follows each rail" check_rails
report_cases rails
