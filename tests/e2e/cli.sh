#!/usr/bin/env bash
# End-to-end: the command-line interface of rdma-send and rdma-recv where a device is
# involved: a port already in use, --list-devices and -d/--device on the Soft-RoCE device,
# --check (both programs: a working set-up, a missing device, a memlock limit too low, no
# receiver, bad secrets files), --bwlimit's rate, a transfer over IPv6, the systemd
# notifications (sd_notify), loopback addresses refused by both programs before the device
# that exists here is used, and refusals that say what to do next. What needs no device
# (--help, --version, usage errors, unusable files and directories, bad secrets files, bad
# rates) is tests/local_input_test.sh, run with the unit tests. Each error must give its exit
# status and a message on stderr that says what is wrong. Cases run one by one (run_case);
# the last line counts.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv

port=18600
work=$RXE_SCRATCH/cli
rm -rf "$work" && mkdir -p "$work" && chmod 755 "$work"
out=$work/out err=$work/err
mkdir -p "$work/in" "$work/dir" && chmod 755 "$work/in" "$work/dir"
echo hello >"$work/in/hello.txt" && chmod 644 "$work/in/hello.txt"

# Permission checks do not apply to root: run such cases as nobody.
as_nobody=()
((EUID != 0)) || as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)

# run PROGRAM ARGS...: sets rc; stdout in $out, stderr in $err; bounded at 20 s.
run() {
  last_run="$*"
  rc=0
  timeout -k 5 20 "$@" >"$out" 2>"$err" </dev/null || rc=$?
}

fail_context() {
  echo "  last run: ${last_run:-none} -> status ${rc:-?}"
  if [[ -s $out ]]; then echo "  its stdout:" && head -n 20 "$out" | sed 's/^/    | /'; fi
  if [[ -s $err ]]; then echo "  its stderr:" && head -n 20 "$err" | sed 's/^/    | /'; fi
}

expect_status() { ((rc == $1)) || fail "expected exit $1, got $rc"; }
# expect_stderr PATTERN: stderr matches PATTERN (grep -E, case-insensitive).
expect_stderr() { grep -Eqi -- "$1" "$err" || fail "stderr does not match /$1/"; }
expect_stdout() { grep -Eq -- "$1" "$out" || fail "stdout does not match /$1/"; }

case_port_in_use() {
  local log=$work/first.log
  start_daemon first "$log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/dir"
  wait_for_line 20 first "$log" 'listening on'
  run "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/dir"
  expect_status 1 && expect_stderr "port $port .*in use.*--port"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited first || fail "the first rdma-recv did not stop after SIGTERM"
  pass "second rdma-recv on port $port: exit 1, 'in use' with a remedy"
}

case_list_devices() {
  run "$recv" --list-devices
  expect_status 0
  expect_stdout "^$RXE_DEV port 1: state ACTIVE, link layer Ethernet, active MTU [0-9]+"
  expect_stdout "netdev ${RXE_NETDEV:-[a-z0-9]+}: .*\b${RXE_ADDR//./\\.}\b"
  pass "--list-devices: $(head -n 2 "$out" | tr '\n' ' ')"
}

case_wrong_device() {
  run "$recv" -d nosuchdev --dir "$work/dir"
  expect_status 2 && expect_stderr "no RDMA device 'nosuchdev'.*$RXE_DEV"
  run "$send" -d nosuchdev -H "$RXE_ADDR" -p "$port" "$work/in/hello.txt"
  expect_status 2 && expect_stderr "no RDMA device 'nosuchdev'.*$RXE_DEV"
  run "$recv" -d "$RXE_DEV" --bind 192.0.2.99 --dir "$work/dir"
  expect_status 2 && expect_stderr "not an address of $RXE_DEV"
  pass "-d nosuchdev (both programs) and --bind off the device: exit 2, devices named"
}

# -d without --bind listens on the device's IPv4 address; a transfer through it works.
case_device_selection() {
  local log=$work/device.log
  rm -f "$work/dir/hello.txt"
  start_daemon bydev "$log" "$recv" -d "$RXE_DEV" --port "$port" --dir "$work/dir"
  wait_for_line 20 bydev "$log" 'listening on'
  grep -q "listening on $RXE_ADDR:$port" "$log" || fail "-d $RXE_DEV: $(grep 'listening on' "$log")"
  run "$send" -d "$RXE_DEV" -H "$RXE_ADDR" -p "$port" "$work/in/hello.txt"
  expect_status 0
  cmp -s "$work/in/hello.txt" "$work/dir/hello.txt" || fail "hello.txt did not arrive intact"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited bydev || fail "rdma-recv -d did not stop after SIGTERM"
  pass "rdma-recv -d $RXE_DEV listens on $RXE_ADDR; rdma-send -d $RXE_DEV delivers"
}

# --bind :: takes an IPv6 wildcard; IPv4 senders still reach it (dual stack).
case_ipv6_wildcard() {
  local log=$work/v6.log
  rm -f "$work/dir/hello.txt"
  start_daemon v6 "$log" "$recv" --bind :: --port "$port" --dir "$work/dir"
  wait_for_line 20 v6 "$log" 'listening on'
  grep -q "listening on \[::\]:$port" "$log" || fail "--bind ::: $(grep 'listening on' "$log")"
  run "$send" -H "$RXE_ADDR" -p "$port" "$work/in/hello.txt"
  expect_status 0
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited v6 || fail "rdma-recv --bind :: did not stop after SIGTERM"
  pass "--bind :: listens on [::]:$port and serves an IPv4 sender"
}

# --check: one "ok   ..." / "FAIL ...: remedy" line per check on stdout; exit 0 or 1.
expect_no_fail() { ! grep -q '^FAIL' "$out" || fail "a check failed: $(grep '^FAIL' "$out")"; }

case_check_working() {
  local log=$work/check.log secrets=$work/check.secrets
  (umask 077 && printf '%s\n' '# ids' 'alice s3cret' >"$secrets")
  start_daemon checked "$log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/dir"
  wait_for_line 20 checked "$log" 'listening on'
  run "$recv" --check --bind "$RXE_ADDR" --port $((port + 1)) --dir "$work/dir" --secrets "$secrets"
  expect_status 0 && expect_no_fail
  expect_stdout "^ok   RDMA device: $RXE_DEV port 1 ACTIVE"
  expect_stdout "^ok   listen on $RXE_ADDR port $((port + 1)): the port is free"
  expect_stdout "^ok   bound address $RXE_ADDR:$((port + 1)): $RXE_DEV port 1, GID [0-9a-f:.]+ \(index [0-9]+\)"
  expect_stdout '^ok   locked memory: .*16\.0 MiB'
  expect_stdout "^ok   directory $work/dir: writable, .* free"
  expect_stdout "^ok   secrets file $secrets: owner-only, 1 id"
  expect_stdout "^ok   senders file: none \(--senders\): any sender that reaches the port may write files"
  [[ $(grep -c . "$out") == 7 ]] || fail "expected 7 lines"
  local recv_lines; recv_lines=$(tr '\n' '|' <"$out")
  # The port the daemon holds: the listen line fails, with its remedy.
  run "$recv" --check --bind "$RXE_ADDR" --port "$port" --dir "$work/dir"
  expect_status 1 && expect_stdout "^FAIL listen on .* port $port: the port is in use.*--port"
  run "$send" --check -H "$RXE_ADDR" -p "$port"
  expect_status 0 && expect_no_fail
  expect_stdout "^ok   RDMA device: $RXE_DEV port 1 ACTIVE"
  expect_stdout "^ok   route to $RXE_ADDR:$port: $RXE_DEV port 1, GID [0-9a-f:.]+ \(index [0-9]+\)"
  expect_stdout '^ok   locked memory: '
  expect_stdout '^ok   key file: none \(--key-file, RDMAX_KEY_FILE\): no key is offered'
  expect_stdout "^ok   receiver at $RXE_ADDR:$port: accepts connections"
  run "$send" --check -d "$RXE_DEV" -H "$RXE_ADDR" -p "$port"
  expect_status 0 && expect_no_fail
  # Every receiver of -H is checked, each on its own lines: one nobody serves fails, exit 1.
  run "$send" --check -H "$RXE_ADDR:$port,$RXE_ADDR:$((port + 7))"
  expect_status 1
  expect_stdout "^ok   receiver at $RXE_ADDR:$port: accepts connections"
  expect_stdout "^ok   route to $RXE_ADDR:$((port + 7)): "
  expect_stdout "^FAIL receiver at $RXE_ADDR:$((port + 7)): "
  # The receiver saw a sender leave before its Hello: an info line, no warning or error.
  wait_for_line 10 checked "$log" 'sender left before offering a file'
  ! grep -Eq ' (warn|error) ' "$log" || fail "the receiver logged a warning or error: $(grep -E ' (warn|error) ' "$log")"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited checked || fail "rdma-recv did not stop after SIGTERM"
  [[ $(daemon_status checked) == 0 ]] || fail "rdma-recv exited $(daemon_status checked)"
  pass "--check against a working set-up: both exit 0 (${recv_lines%|})"
}

case_check_missing_device() {
  run "$recv" --check -d nosuchdev --dir "$work/dir"
  expect_status 1
  expect_stdout "^FAIL RDMA device nosuchdev: no such device \(devices here: .*$RXE_DEV.*\): .*-d"
  run "$send" --check -d nosuchdev -H "$RXE_ADDR" -p "$port"
  expect_status 1
  expect_stdout "^FAIL RDMA device nosuchdev: no such device"
  pass "--check -d nosuchdev: the device line fails, exit 1 (both programs)"
}

# An ordinary user whose RLIMIT_MEMLOCK (64 KiB) is below one receive window (16 MiB).
case_check_memlock() {
  local open_dir=$work/open
  mkdir -p "$open_dir" && chmod 777 "$open_dir"
  # shellcheck disable=SC2016 # expanded by the inner shell
  run "${as_nobody[@]}" bash -c 'ulimit -l 64 && exec "$@"' - \
    "$recv" --check --bind "$RXE_ADDR" --port $((port + 2)) --dir "$open_dir"
  expect_status 1
  expect_stdout "^ok   RDMA device: $RXE_DEV"
  expect_stdout '^FAIL locked memory: RLIMIT_MEMLOCK 64\.0 KiB is below the 16\.0 MiB .*receive window.*: .*ulimit -l unlimited.*LimitMEMLOCK=infinity'
  expect_stdout "^ok   directory $open_dir: writable"
  [[ $(grep -c '^FAIL' "$out") == 1 ]] || fail "only the memlock line should fail"
  # shellcheck disable=SC2016
  run "${as_nobody[@]}" bash -c 'ulimit -l 64 && exec "$@"' - \
    "$send" --check -H "$RXE_ADDR" -p $((port + 2))
  expect_status 1
  expect_stdout '^FAIL locked memory: RLIMIT_MEMLOCK 64\.0 KiB cannot hold one 1\.0 MiB slot besides .* control buffers.*: .*ulimit -l unlimited'
  pass "--check with ulimit -l 64 as uid $(id -u nobody 2>/dev/null || echo 65534): the memlock line fails with its remedy, exit 1"
}

case_check_no_receiver() {
  run "$send" --check -H "$RXE_ADDR" -p $((port + 3))
  expect_status 1
  expect_stdout "^ok   route to $RXE_ADDR:$((port + 3)): $RXE_DEV"
  expect_stdout "^FAIL receiver at $RXE_ADDR:$((port + 3)): .*no rdma-recv listens there.*start rdma-recv"
  [[ $(grep -c '^FAIL' "$out") == 1 ]] || fail "only the receiver line should fail"
  pass "rdma-send --check with nobody listening: the receiver line fails, exit 1"
}

case_check_bad_secrets() {
  local secrets=$work/check-bad.secrets
  (umask 022 && printf '%s\n' 'alice s3cret' >"$secrets" && chmod 644 "$secrets")
  run "$recv" --check --bind "$RXE_ADDR" --port $((port + 4)) --dir "$work/dir" --secrets "$secrets"
  expect_status 1
  expect_stdout "^FAIL secrets file $secrets: mode 0644 lets group or others read it: chmod 600 $secrets\$"
  (umask 077 && printf '%s\n' 'alice s3cret' 'bob' >"$secrets" && chmod 600 "$secrets")
  run "$recv" --check --bind "$RXE_ADDR" --port $((port + 4)) --dir "$work/dir" --secrets "$secrets"
  expect_status 1
  expect_stdout "^FAIL secrets file $secrets:2: .*: fix that line"
  [[ $(grep -c '^FAIL' "$out") == 1 ]] || fail "only the secrets line should fail"
  pass "--check with a group-readable and a malformed secrets file: that line fails, exit 1"
}

# 40 MiB at --bwlimit 8M (8 MiB/s: K, M and G are powers of 1024 in every size, rates too;
# far below the link's ~40 MB/s), 5 s of data: the data phase's rate is within 2% of the
# limit, and never above it (issue 20).
case_bwlimit_rate() {
  local log=$work/bw.log file=$work/in/bw.bin limit=$((8 << 20))
  head -c $((40 << 20)) /dev/urandom >"$file" && chmod 644 "$file"
  rm -f "$work/dir/bw.bin"
  start_daemon bw "$log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/dir"
  wait_for_line 20 bw "$log" 'listening on'
  run "$send" -H "$RXE_ADDR" -p "$port" --json --bwlimit 8M "$file"
  expect_status 0
  cmp -s "$file" "$work/dir/bw.bin" || fail "bw.bin did not arrive intact"
  local rate seconds
  rate=$(grep -o '"data_bytes_per_second":[0-9.e+]*' "$out" | cut -d: -f2)
  seconds=$(grep -o '"data":[0-9.e+]*' "$out" | cut -d: -f2)
  [[ -n $rate && -n $seconds ]] || fail "no data rate in the JSON"
  awk -v r="$rate" -v l=$limit 'BEGIN { d = (r - l) / l; exit !(d > -0.02 && d < 0.001) }' ||
    fail "data rate $rate B/s is not within 2% under $limit B/s"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited bw || fail "rdma-recv did not stop after SIGTERM"
  pass "--bwlimit 8M: 40 MiB in ${seconds}s of data phase, $(awk -v r="$rate" -v l=$limit 'BEGIN { printf "%.0f B/s, %+.2f%% from the limit", r, (r - l) * 100 / l }')"
}

# A transfer between IPv6 addresses: the netdev gets fd00::1 (rxe adds its RoCE v2 GID), the
# receiver binds to it, the sender addresses it, with and without brackets; the logs show
# the address as [fd00::1]:PORT.
case_ipv6_transfer() {
  local v6=fd00::1 log=$work/v6-transfer.log dev=${RXE_NETDEV:?}
  sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=0" 2>/dev/null || true
  ip -6 addr add "$v6/64" dev "$dev" nodad 2>/dev/null ||
    ip -6 addr show dev "$dev" | grep -q "inet6 $v6/" || fail "cannot add $v6 to $dev"
  # rxe adds a GID for the new address; rdma_cm needs it before the bind succeeds.
  eventually 10 grep -qi '^fd00:0000:0000:0000:0000:0000:0000:0001$' \
    /sys/class/infiniband/"$RXE_DEV"/ports/1/gids/* || fail "no GID for $v6 on $RXE_DEV"
  run "$recv" --list-devices
  expect_status 0 && expect_stdout "$v6"
  rm -f "$work/dir/hello.txt" "$work/dir/hello6.txt"
  start_daemon v6t "$log" "$recv" -d "$RXE_DEV" --bind "$v6" --port "$port" --dir "$work/dir"
  wait_for_line 20 v6t "$log" 'listening on'
  grep -q "listening on \[$v6\]:$port " "$log" || fail "listening: $(grep 'listening on' "$log")"
  run "$send" -v -d "$RXE_DEV" -H "$v6" -p "$port" "$work/in/hello.txt"
  expect_status 0
  expect_stderr "connected to \[$v6\]:$port"
  run "$send" -H "[$v6]" -p "$port" --name hello6.txt "$work/in/hello.txt"
  expect_status 0
  cmp -s "$work/in/hello.txt" "$work/dir/hello.txt" || fail "hello.txt did not arrive intact"
  cmp -s "$work/in/hello.txt" "$work/dir/hello6.txt" || fail "hello6.txt did not arrive intact"
  eventually 10 grep -Eqi "^.*\[\[$v6\]:[0-9]+\] 'hello6.txt'.*verdict good" "$log" ||
    fail "the receiver's log lacks [[$v6]:PORT] 'hello6.txt' ... verdict good: $(tail -n 5 "$log")"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited v6t || fail "rdma-recv --bind $v6 did not stop after SIGTERM"
  ip -6 addr del "$v6/64" dev "$dev" 2>/dev/null || true
  pass "IPv6: -H $v6 and -H [$v6] to --bind $v6, verdict good; logs show [$v6]:port"
}

# Loopback (issue 22): RDMA does not work over lo. Both programs say so before any device or
# route work (here, where a device exists, that is what shows it) and exit 2, naming what to
# use instead; before, rdma-send failed at rdma_resolve_route and rdma-recv listened in vain.
case_loopback() {
  local host
  for host in 127.0.0.1 ::1 localhost; do
    run "$send" -H "$host" -p "$port" "$work/in/hello.txt"
    expect_status 2
    expect_stderr "-H $host: RDMA does not work over loopback.*rdma link.*ibv_devices"
    ! grep -qi 'rdma_resolve' "$err" || fail "-H $host: the route was tried"
  done
  run "$send" --check -H 127.0.0.1 -p "$port"
  expect_status 2 && expect_stderr 'RDMA does not work over loopback'
  run "$recv" --bind 127.0.0.1 --port "$port" --dir "$work/dir"
  expect_status 2
  expect_stderr "--bind 127.0.0.1: RDMA does not work over loopback.*rdma link.*leave out --bind"
  ! grep -qi 'listening on' "$err" || fail "rdma-recv --bind 127.0.0.1 listened"
  pass "-H 127.0.0.1/::1/localhost and --bind 127.0.0.1: exit 2, 'does not work over loopback' with what to use"
}

# Refusals (issue 22): each says what happened and what to do next; the one FILE may take
# --name, an entry of a tree may not.
case_refusal_next_step() {
  local log=$work/refusals.log received=$work/refusals
  rm -rf "$received" && mkdir -p "$received" "$work/in/tree" && chmod 755 "$received" "$work/in/tree"
  echo old >"$received/taken.txt"
  echo new >"$work/in/taken.txt" && chmod 644 "$work/in/taken.txt"
  mkdir -p "$received/tree" && echo old >"$received/tree/taken.txt"
  echo new >"$work/in/tree/taken.txt" && echo fine >"$work/in/tree/other.txt"
  head -c 8192 /dev/urandom >"$work/in/big.bin" && chmod 644 "$work/in/big.bin"
  start_daemon refusals "$log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$received" \
    --max-size 4K
  wait_for_line 20 refusals "$log" 'listening on'
  run "$send" -H "$RXE_ADDR" -p "$port" "$work/in/taken.txt"
  expect_status 4
  expect_stderr "taken.txt': refused by the receiver \(Exists: a file of that name exists\); send it under another name with --name NAME, or start rdma-recv with --overwrite"
  run "$send" -H "$RXE_ADDR" -p "$port" "$work/in/big.bin"
  expect_status 4
  expect_stderr "big.bin': refused by the receiver \(TooLarge: larger than .*\); .*--max-size"
  run "$send" -H "$RXE_ADDR" -p "$port" -r "$work/in/tree"
  expect_status 4
  expect_stderr "tree/taken.txt': refused by the receiver \(Exists: a file of that name exists\); remove or rename it on the receiver, or start rdma-recv with --overwrite"
  grep -F "taken.txt': refused" "$err" | grep -q -- '--name' && fail "a tree entry was told to use --name"
  cmp -s "$work/in/tree/other.txt" "$received/tree/other.txt" || fail "the tree's other file did not arrive"
  [[ $(cat "$received/taken.txt") == old ]] || fail "an existing file was overwritten"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited refusals || fail "rdma-recv did not stop after SIGTERM"
  pass "Exists (one file, tree entry) and TooLarge: exit 4, each with its next step"
}

# Under systemd (Type=notify): a notify socket of the test's own gets READY=1 once
# rdma-recv listens, STATUS= lines that count the transfer, WATCHDOG=1 pings when
# WATCHDOG_USEC asks for them, and STOPPING=1 at SIGTERM.
case_systemd_notify() {
  local socket=$work/notify.sock notes=$work/notify.log log=$work/notify-recv.log
  rm -f "$work/dir/hello.txt"
  start_notify_socket "$socket" "$notes"
  start_daemon notified "$log" env NOTIFY_SOCKET="$socket" WATCHDOG_USEC=1000000 \
    "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/dir"
  wait_for_line 20 notified "$log" 'listening on'
  wait_for 10 grep -qx 'READY=1' "$notes"
  grep -qx 'STATUS=0 connections, 0 B received, 0 files stored' "$notes" ||
    fail "no first STATUS= line: $(head -n 5 "$notes" | tr '\n' ' ')"
  run "$send" -H "$RXE_ADDR" -p "$port" "$work/in/hello.txt"
  expect_status 0
  eventually 10 grep -qE '^STATUS=0 connections, 6 B received, 1 file stored$' "$notes" ||
    fail "no STATUS= line counting the transfer: $(grep STATUS= "$notes" | tr '\n' ' ')"
  eventually 5 grep -qx 'WATCHDOG=1' "$notes" || fail "no WATCHDOG=1 ping within 5 s"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited notified || fail "rdma-recv did not stop after SIGTERM"
  # socat's child for that datagram may still be writing it when rdma-recv is gone.
  eventually 5 grep -qx 'STOPPING=1' "$notes" || fail "no STOPPING=1"
  (($(daemon_status notified) == 0)) || fail "rdma-recv exited $(daemon_status notified)"
  pass "sd_notify: READY=1, STATUS=$(grep STATUS= "$notes" | tail -n 2 | head -n 1 | cut -d= -f2-), WATCHDOG=1, STOPPING=1"
}

run_case port-in-use case_port_in_use
run_case list-devices case_list_devices
run_case wrong-device case_wrong_device
run_case device-selection case_device_selection
run_case ipv6-wildcard case_ipv6_wildcard
run_case check-working case_check_working
run_case check-missing-device case_check_missing_device
run_case check-memlock case_check_memlock
run_case check-no-receiver case_check_no_receiver
run_case check-bad-secrets case_check_bad_secrets
run_case bwlimit-rate case_bwlimit_rate
run_case ipv6-transfer case_ipv6_transfer
run_case systemd-notify case_systemd_notify
run_case loopback case_loopback
run_case refusal-next-step case_refusal_next_step
report_cases cli
