#!/usr/bin/env bash
# End-to-end: one file over several connections (docs/PROTOCOL.md 7.12, issue 49).
#   - a file with -P 2 arrives verified; --json shows both connections carried a share, and the receiver
#     logs the member connection carrying chunks of it
#   - the file written while it is striped: once every connection read its part, the sender
#     finds it changed and abandons it (FileAbort): exit 1, nothing of it kept
#   - the last release's receiver (which does not stripe) gets it whole on one connection
#   - a stripe group waits as one: with a short --timeout, the lead connection, its own file
#     done, waits while the member still sends (the sender holds the lead's directories until
#     the others are done); neither connection is dropped (issue 53's soak found it); and
#     --bwlimit's rate is shared by the connections, not taken by the lead alone
# Over two devices, and a striped file killed halfway and resumed: rails.sh (two hosts).
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


start_daemon recv "$recv_log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/out" \
  --timeout 20
wait_for 20 cm_listening "$port"

# json FILTER: a field of the last --json (jq: python3 starts in seconds in the guest).
json() { jq -r "$1" "$work/send.json"; }

two_connections() {
  rm -f "$work/out/big.bin"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -P 2 --stripe-min 1M --json \
    "$work/in/big.bin" >"$work/send.json" 2>"$work/send.err" || rc=$?
  ((rc == 0)) || fail "rdma-send -P 2 exited $rc"
  cmp -s "$work/in/big.bin" "$work/out/big.bin" || fail "the file arrived different"
  [[ $(json '.connections | length') == 2 ]] || fail "not two connections in --json"
  local a b
  a=$(json '.connections[0].bytes_sent') b=$(json '.connections[1].bytes_sent')
  ((a > 0 && b > 0)) || fail "one connection carried nothing: $a and $b bytes"
  ((a + b == size)) || fail "the connections carried $a + $b bytes of $size"
  grep -q "carrying chunks of 'big.bin'" "$recv_log" || fail "no member joined on the receiver"
  echo "connections carried $a and $b bytes"
}


changed_while_sent() {
  rm -rf "$work/out" && mkdir -p "$work/out"
  local lines
  lines=$(wc -l <"$recv_log")
  # Hashed as it is read (no digest cache): the file's identity is checked at its end.
  "$send" -H "$RXE_ADDR" -p "$port" -P 2 --stripe-min 1M --bwlimit 16M --no-digest-cache \
    "$work/in/big.bin" >/dev/null 2>"$work/send.err" &
  local pid=$!
  bg_pids+=("$pid")
  wait_for 20 logged_since "$recv_log" "$lines" "carrying chunks of 'big.bin'"
  alive "$pid" || fail "the sender was done before the file could be changed"
  printf 'changed' | dd of="$work/in/big.bin" bs=1 seek=4096 conv=notrunc status=none
  local rc=0
  wait "$pid" || rc=$?
  ((rc == 1)) || fail "rdma-send exited $rc, not 1, for a file changed while it was sent"
  grep -q "changed while it was being sent" "$work/send.err" || fail "the sender did not say why"
  wait_for 20 logged_since "$recv_log" "$lines" "the sender abandoned 'big.bin'"
  [[ -z $(ls -A "$work/out") ]] || fail "something of the changed file was kept: $(ls -A "$work/out")"
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

# A tree of three files: x (5 MiB) goes to the lead, y and z (4 MiB each) to the member (largest
# first, each to the least loaded); at 1 MiB/s for the command, shared, the lead is done 3 s
# before the member, three times the receiver's --timeout. RDMAX_WAIT_RECV=PATH runs it against another
# receiver (the last release's times a connection out: "the sender's next entry or chunk").
group_waits() {
  local tree=$work/group out=$work/group-out wait_port=18932
  rm -rf "$tree" "$out" && mkdir -p "$tree" "$out"
  head -c 5M /dev/urandom >"$tree/x.bin"
  head -c 4M /dev/urandom >"$tree/y.bin"
  head -c 4M /dev/urandom >"$tree/z.bin"
  start_daemon wait "$work/wait.log" "${RDMAX_WAIT_RECV:-$recv}" --bind "$RXE_ADDR" \
    --port "$wait_port" --dir "$out" --timeout 1 --slot-size 64K
  wait_for 20 cm_listening "$wait_port"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$wait_port" -P 2 --bwlimit 1M --json -r "$tree" \
    >"$work/send.json" 2>"$work/send.err" || rc=$?
  kill "$daemon_pid"
  ((rc == 0)) || fail "rdma-send -P 2 exited $rc: $(grep -m 1 -i 'timed out\|aborted' "$work/send.err")"
  diff -r "$tree" "$out/group" >/dev/null || fail "the tree arrived different"
  local a b
  a=$(json '.connections[0].bytes_sent') b=$(json '.connections[1].bytes_sent')
  ((a == 5 * 1048576 && b == 8 * 1048576)) ||
    fail "the lead carried $a bytes and the member $b, not 5 and 8 MiB: the lead did not wait"
  ! grep -q "timed out" "$work/wait.log" || fail "the receiver timed a connection out"
  # The connections share the rate: x took about 10 s at half of it, not 5 s at all of it
  # while the member waited (--bwlimit's bucket went to the lead at every refill).
  local x_seconds
  x_seconds=$(sed -n "s/.*'group\/x.bin': .* in \([0-9.]*\)s .*/\1/p" "$work/wait.log")
  [[ -n $x_seconds ]] || fail "no line for x.bin in the receiver's log"
  awk -v s="$x_seconds" 'BEGIN { exit !(s >= 7.5) }' ||
    fail "x.bin took ${x_seconds}s: the lead had the whole rate, the member waited"
  echo "the lead carried $a bytes (x.bin in ${x_seconds}s), the member $b, at 1 MiB/s together; no connection timed out"
}

run_case "one file over two connections" two_connections
run_case "a file changed while it is striped is abandoned" changed_while_sent
run_case "a release receiver gets it on one connection" release_receiver
run_case "a stripe group waits as one" group_waits
report_cases striping
