#!/usr/bin/env bash
# End-to-end: one file over several connections (docs/PROTOCOL.md 7.12, issue 49).
#   - a file with -P 2 arrives verified; --json shows both connections carried a share, and the receiver
#     logs the member connection carrying chunks of it
#   - the sender killed halfway: run again, it resumes from what was stored in order and
#     sends less than the whole file
#   - the last release's receiver (which does not stripe) gets it whole on one connection
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps.sh installs it)"
port=18930 old_port=18931
work=$RXE_SCRATCH/striping
rm -rf "$work" && mkdir -p "$work/in" "$work/out" "$work/old-out"
recv_log=$work/rdma-recv.log
head -c 48M /dev/urandom >"$work/in/big.bin"
size=$(stat -c %s "$work/in/big.bin")

fail_context() {
  echo "  rdma-send stderr (last 15 lines):"
  tail -n 15 "$work/send.err" 2>/dev/null | sed 's/^/    | /'
  echo "  rdma-send --json:"
  head -c 1500 "$work/send.json" 2>/dev/null | sed 's/^/    | /'
  echo "  rdma-recv log (last 15 lines):"
  tail -n 15 "$recv_log" 2>/dev/null | sed 's/^/    | /'
}

# Both connections on rxe0: a second rxe device in the same guest (on a dummy or veth link)
# routes its connection through the loopback, which no rxe device serves, and it never
# connects (measured: the CM times out). Two devices need two NICs (rxe-run gives one).
devices=rxe0

start_daemon recv "$recv_log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/out" \
  --timeout 20
wait_for 20 cm_listening "$port"

# json FILTER: a field of the last --json (jq: python3 starts in seconds in the guest).
json() { jq -r "$1" "$work/send.json"; }

two_connections() {
  rm -f "$work/out/big.bin"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -P 2 -d "$devices" --stripe-min 1M --json \
    "$work/in/big.bin" >"$work/send.json" 2>"$work/send.err" || rc=$?
  ((rc == 0)) || fail "rdma-send -P 2 exited $rc"
  cmp -s "$work/in/big.bin" "$work/out/big.bin" || fail "the file arrived different"
  [[ $(json '.connections | length') == 2 ]] || fail "not two connections in --json"
  local a b
  a=$(json '.connections[0].bytes_sent') b=$(json '.connections[1].bytes_sent')
  ((a > 0 && b > 0)) || fail "one connection carried nothing: $a and $b bytes"
  ((a + b == size)) || fail "the connections carried $a + $b bytes of $size"
  grep -q "carrying chunks of 'big.bin'" "$recv_log" || fail "no member joined on the receiver"
  echo "connections carried $a and $b bytes over $devices"
}

killed_halfway() {
  rm -f "$work/out/big.bin"
  : >"$recv_log.mark"
  "$send" -H "$RXE_ADDR" -p "$port" -P 2 -d "$devices" --stripe-min 1M --bwlimit 12M \
    "$work/in/big.bin" >/dev/null 2>"$work/send.err" &
  local pid=$!
  bg_pids+=("$pid")
  # Half the file, give or take: 2 s at the limit.
  wait_for 20 grep -q "carrying chunks of 'big.bin'" "$recv_log"
  sleep 2
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  wait_for 20 grep -q "kept .* of 'big.bin' to resume from" "$recv_log"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -P 2 -d "$devices" --stripe-min 1M --json \
    "$work/in/big.bin" >"$work/send.json" 2>"$work/send.err" || rc=$?
  ((rc == 0)) || fail "the second run exited $rc"
  cmp -s "$work/in/big.bin" "$work/out/big.bin" || fail "the file arrived different"
  local sent resumed
  sent=$(json '.bytes_sent') resumed=$(json '.entries[0].resumed_from')
  ((resumed > 0)) || fail "the second run did not resume"
  ((sent + resumed == size)) || fail "sent $sent after resuming at $resumed of $size"
  echo "resumed at $resumed, sent $sent of $size"
}

release_receiver() {
  local old_recv=${RDMAX_RELEASE_BIN:-}/rdma-recv
  if [[ -z ${RDMAX_RELEASE_BIN:-} || ! -x $old_recv ]]; then
    echo "note: no release programs (RDMAX_RELEASE_BIN): case skipped"
    return 0
  fi
  start_daemon old "$work/old.log" "$old_recv" --bind "$RXE_ADDR" --port "$old_port" \
    --dir "$work/old-out"
  wait_for 20 cm_listening "$old_port"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$old_port" -P 2 --stripe-min 1M --json "$work/in/big.bin" \
    >"$work/send.json" 2>"$work/send.err" || rc=$?
  ((rc == 0)) || fail "rdma-send -P 2 to the release's receiver exited $rc"
  cmp -s "$work/in/big.bin" "$work/old-out/big.bin" || fail "the file arrived different"
  [[ $(json '.connections[0].bytes_sent') == "$size" ]] ||
    fail "the lead did not carry the whole file"
  kill "$daemon_pid"
}

run_case "one file over two connections" two_connections
run_case "killed halfway, then resumed" killed_halfway
run_case "a release receiver gets it on one connection" release_receiver
report_cases striping
