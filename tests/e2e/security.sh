#!/usr/bin/env bash
# End-to-end security checks (docs/SECURITY.md): one rdma-recv with a small window faces
# rdmax-attacker, a hostile sender with real verbs, then hostile names and ids. After every
# case the receiver must still be up, nothing may have appeared that should not, the file
# delivered first must be byte-identical, nothing outside the output directory may have
# changed, and a legitimate rdma-send must still verify.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv attacker

port=18515
in=$RXE_SCRATCH/in out=$RXE_SCRATCH/out outside=$RXE_SCRATCH/outside
recv_log=$RXE_SCRATCH/rdma-recv.log secrets=$RXE_SCRATCH/secrets
send_out=$RXE_SCRATCH/send.out send_err=$RXE_SCRATCH/send.err
attack_out=$RXE_SCRATCH/attack.out attack_err=$RXE_SCRATCH/attack.err
rm -rf "$in" "$out" "$outside"
mkdir -p "$in" "$out" "$outside"

# Names the cases may leave in $out (plus legit-N.bin); anything else is a failure.
allowed_names=(baseline.bin attack-write-after-verdict.bin attack-id-guess.bin link.bin dangling.bin)

fail_context() {
  echo "  last command: ${last_cmd:-none} -> status ${rc:-?}"
  local f
  for f in "$send_out" "$send_err" "$attack_out" "$attack_err"; do
    if [[ -s $f ]]; then echo "  $f (last 15 lines):" && tail -n 15 "$f" | sed 's/^/    | /'; fi
  done
  echo "  rdma-recv log (last 20 lines):"
  tail -n 20 "$recv_log" 2>/dev/null | sed 's/^/    | /'
  echo "  $out holds: $(listing | tr '\n' '/')"
}

listing() { find "$out" -mindepth 1 -maxdepth 1 -printf '%f\n' | LC_ALL=C sort; }
sha_of() { sha256sum <"$1" | cut -d' ' -f1; }
# A fingerprint of what a path escape could reach outside $out (the hostile-names case
# checks the exact paths its names point at, too).
outside_state() { find "$outside" -printf '%p %s %T@\n' | LC_ALL=C sort; sha_of /etc/passwd; }

send_file() {
  last_cmd="rdma-send $(printf '%q ' "$@")"
  rc=0
  timeout -k 5 60 "$send" --host "$RXE_ADDR" --port "$port" "$@" >"$send_out" 2>"$send_err" </dev/null || rc=$?
}

# attack NAME [ARGS...]: run the attacker; sets rc and attack_line (its stdout).
attack() {
  local name=$1; shift
  last_cmd="rdmax-attacker $name $(printf '%q ' "$@")"
  rc=0
  timeout -k 5 90 "$attacker" "$name" --host "$RXE_ADDR" --port "$port" --timeout 10 \
    --size 40000 "$@" >"$attack_out" 2>"$attack_err" </dev/null || rc=$?
  attack_line=$(cat "$attack_out")
  echo "  $attack_line"
}

# The receiver survived, $out holds only what it may, the baseline is intact, nothing
# outside changed, and a legitimate transfer still verifies.
check_receiver_intact() {
  local name allowed
  ! daemon_exited recv || fail "rdma-recv exited with status $(daemon_status recv)"
  kill -0 "$recv_pid" || fail "rdma-recv (pid $recv_pid) is gone"
  eventually 5 only_allowed_names || fail "unexpected entries in $out: $(unexpected_names | tr '\n' ' ')"
  [[ $(sha_of "$out/baseline.bin") == "$baseline_sha" ]] || fail "baseline.bin changed"
  [[ $(outside_state) == "$outside_before" ]] || fail "something outside $out changed"
  [[ $(cat "$outside/target") == "precious" ]] || fail "the symlink target was written"
  name=legit-$BASHPID.bin # each case runs in its own subshell
  [[ ! -e $in/$name ]] || name=legit-$BASHPID-$SECONDS.bin
  head -c 50000 /dev/urandom >"$in/$name"
  send_file "$in/$name"
  ((rc == 0)) || fail "a legitimate transfer after the case failed with status $rc"
  cmp -s "$in/$name" "$out/$name" || fail "$name differs from what was sent"
}
unexpected_names() {
  local name allowed
  while IFS= read -r name; do
    [[ -n $name ]] || continue
    [[ $name =~ ^legit-[0-9-]+\.bin$ ]] && continue
    for allowed in "${allowed_names[@]}"; do [[ $name == "$allowed" ]] && continue 2; done
    echo "$name"
  done <<<"$(listing)"
}
only_allowed_names() { [[ -z $(unexpected_names) ]]; }

# ---------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------
# expect_refused NAME: the attacker's verdict line says refused, and it exited 0.
expect_refused() {
  [[ $attack_line == "attack $1: refused"* ]] || fail "attack $1 was not refused: '$attack_line' (status $rc)"
  ((rc == 0)) || fail "attack $1: attacker exited $rc"
}

case_attack() {
  local name=$1
  attack "$name"
  expect_refused "$name"
  check_receiver_intact
  pass "$name: ${attack_line#*: }"
}

case_write_after_verdict() {
  attack write-after-verdict --save "$in/attack-write-after-verdict.bin"
  expect_refused write-after-verdict
  # The transfer itself was good: the file is committed and must not have changed since.
  cmp -s "$in/attack-write-after-verdict.bin" "$out/attack-write-after-verdict.bin" ||
    fail "the attacker's committed file differs from what it sent"
  check_receiver_intact
  pass "write-after-verdict: ${attack_line#*: }"
}

case_id_guess() {
  attack id-guess
  [[ $attack_line == "attack id-guess: refused (3 attempts, attempts_left 2 1 0, then disconnected)" ]] ||
    fail "id guessing: '$attack_line' (status $rc)"
  check_receiver_intact
  pass "id-guess: ${attack_line#*: }"
}

case_hostile_names() {
  local name names=(. .. ../x /etc/passwd a/../b "$outside/abs" $'ctl\x01x' $'new\nline' $'del\x7f' $'esc\x1b[2J')
  head -c 1000 /dev/urandom >"$in/hostile.bin"
  # rdma-send checks --name itself (rdma-send(1)): a usage error, nothing sent. That the
  # receiver refuses each such name too is hostile.sh's `names` case (a hostile sender).
  for name in "${names[@]}"; do
    send_file --name "$name" "$in/hostile.bin"
    ((rc == 2)) || fail "name $(printf '%q' "$name"): expected exit 2 (refused by rdma-send), got $rc"
    grep -q -- "--name" "$send_err" || fail "name $(printf '%q' "$name"): the error does not name --name: $(cat "$send_err")"
  done
  [[ ! -e $RXE_SCRATCH/x && ! -e $outside/abs && ! -e $out/a ]] || fail "a hostile name created a file"
  check_receiver_intact
  pass "${#names[@]} hostile names refused by rdma-send itself (exit 2), nothing written"
}

case_symlinks() {
  ln -s "$outside/target" "$out/link.bin"
  ln -s "$outside/created-through-link" "$out/dangling.bin"
  head -c 1000 /dev/urandom >"$in/link.bin"
  for name in link.bin dangling.bin; do
    send_file --name "$name" "$in/link.bin"
    ((rc == 4)) || fail "symlink $name in the output directory: expected exit 4 (exists), got $rc"
    grep -q Exists "$send_err" || fail "symlink $name: rejected, but not as an existing file"
  done
  [[ ! -e $outside/created-through-link ]] || fail "the receiver created a file through a dangling symlink"
  [[ -L $out/link.bin && -L $out/dangling.bin ]] || fail "a symlink was replaced"
  check_receiver_intact
  pass "symlinks in the output directory refused as existing (exit 4); targets untouched"
}

case_secrets_permissions() {
  local mode bad=$RXE_SCRATCH/secrets-open log=$RXE_SCRATCH/recv-perm.log
  printf 'alice s3cr3t-alice\n' >"$bad"
  for mode in 644 640 604 660; do
    chmod "$mode" "$bad"
    rc=0
    last_cmd="rdma-recv --secrets $bad (mode $mode)"
    timeout -k 2 10 "$recv" --bind "$RXE_ADDR" --port $((port + 1)) --dir "$out" --secrets "$bad" \
      >"$log" 2>&1 </dev/null || rc=$?
    ((rc == 2)) || fail "secrets file mode $mode: rdma-recv exited $rc, expected 2: $(tail -n 3 "$log")"
    grep -q "chmod 600 $bad" "$log" || fail "mode $mode: the message does not give the fix: $(cat "$log")"
    grep -q "0$mode" "$log" || fail "mode $mode: the message does not name the mode: $(cat "$log")"
  done
  pass "secrets file readable or writable by group/others: exit 2 with '$(grep -m1 -o 'has mode.*' "$log")'"
}

# rdma-recv --allow / --deny (issue 23): a connection from an address outside --allow, or in
# --deny, is rejected in the rdma_cm event itself. The sender is told at once (exit 3, a
# rejection), no memory region is registered for it, nothing appears under --dir, three
# attempts make one log line (once per address and minute), and the same daemon serves an
# allowed address: here fd00::1 (added to the device), while 192.0.2.1 is the stranger.
case_addresses() {
  local p=$((port + 40)) dir=$RXE_SCRATCH/filtered log=$RXE_SCRATCH/filtered.log
  local v6=fd00::1 dev=${RXE_NETDEV:?} try mrs refused
  mkdir -p "$dir"
  sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=0" 2>/dev/null || true
  ip -6 addr add "$v6/64" dev "$dev" nodad 2>/dev/null ||
    ip -6 addr show dev "$dev" | grep -q "inet6 $v6/" || fail "cannot add $v6 to $dev"
  eventually 10 grep -qi '^fd00:0000:0000:0000:0000:0000:0000:0001$' \
    /sys/class/infiniband/"$RXE_DEV"/ports/1/gids/* || fail "no GID for $v6 on $RXE_DEV"
  head -c 30000 /dev/urandom >"$in/filtered.bin"
  start_daemon filtered "$log" "$recv" --bind :: --port "$p" --dir "$dir" --allow fd00::/64 \
    --deny 192.0.2.99
  wait_for_line 20 filtered "$log" 'listening on'
  grep -q "senders allowed from fd00::/64; denied from 192.0.2.99" "$log" ||
    fail "the rules are not logged at start: $(head -n 3 "$log")"
  mrs=$(rdma resource show mr | wc -l)
  for try in 1 2 3; do
    last_cmd="rdma-send -H $RXE_ADDR -p $p (attempt $try)"
    rc=0
    timeout -k 5 60 "$send" -H "$RXE_ADDR" -p "$p" "$in/filtered.bin" >"$send_out" 2>"$send_err" </dev/null || rc=$?
    ((rc == 3)) || fail "a sender outside --allow: exit $rc, expected 3"
    grep -q 'the receiver refused the connection: this address may not connect' "$send_err" ||
      fail "the sender does not say why it was refused: $(cat "$send_err")"
  done
  [[ $(rdma resource show mr | wc -l) == "$mrs" ]] ||
    fail "memory was registered: $(rdma resource show mr)"
  [[ -z $(ls -A "$dir") ]] || fail "something appeared in $dir: $(ls -A "$dir")"
  refused=$(grep -c "refused a connection from [^ ]*192\.0\.2\.1: not in --allow" "$log" || true)
  ((refused == 1)) || fail "three refusals logged $refused times (once a minute expected): $(tail -n 5 "$log")"
  last_cmd="rdma-send -H $v6 -p $p"
  rc=0
  timeout -k 5 60 "$send" -H "$v6" -p "$p" "$in/filtered.bin" >"$send_out" 2>"$send_err" </dev/null || rc=$?
  ((rc == 0)) || fail "the allowed address fd00::1 was not served: exit $rc"
  cmp -s "$in/filtered.bin" "$dir/filtered.bin" || fail "filtered.bin did not arrive intact"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited filtered || fail "rdma-recv did not stop after SIGTERM"
  # --deny alone: everyone but the denied.
  rm -f "$dir/filtered.bin"
  start_daemon denied "$log.2" "$recv" --bind "$RXE_ADDR" --port "$p" --dir "$dir" --deny "$RXE_ADDR/32"
  wait_for_line 20 denied "$log.2" 'listening on'
  rc=0
  timeout -k 5 60 "$send" -H "$RXE_ADDR" -p "$p" "$in/filtered.bin" >"$send_out" 2>"$send_err" </dev/null || rc=$?
  ((rc == 3)) || fail "a denied sender: exit $rc, expected 3"
  grep -q "refused a connection from $RXE_ADDR: matches --deny" "$log.2" ||
    fail "the denial is not logged: $(tail -n 3 "$log.2")"
  [[ -z $(ls -A "$dir") ]] || fail "something appeared in $dir: $(ls -A "$dir")"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited denied || fail "rdma-recv did not stop after SIGTERM"
  ip -6 addr del "$v6/64" dev "$dev" 2>/dev/null || true
  check_receiver_intact
  pass "--allow fd00::/64: 192.0.2.1 rejected 3 times (exit 3, no memory region, nothing in --dir, one log line), fd00::1 served by the same daemon; --deny $RXE_ADDR/32 rejected"
}

# ---------------------------------------------------------------------------------
# One receiver (a 2 x 16 KiB window) for every case
# ---------------------------------------------------------------------------------
(umask 077 && printf '%s\n' 'alice s3cr3t-alice' >"$secrets")
echo precious >"$outside/target"
start_daemon recv "$recv_log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$out" \
  --secrets "$secrets" --max-size 1M --slot-size 16K --slots 2 --timeout 20
recv_pid=$daemon_pid
wait_for_line 30 recv "$recv_log" 'listening on'

head -c 70000 /dev/urandom >"$in/baseline.bin"
send_file "$in/baseline.bin"
((rc == 0)) || fail "the baseline transfer failed with status $rc"
baseline_sha=$(sha_of "$in/baseline.bin")
[[ $(sha_of "$out/baseline.bin") == "$baseline_sha" ]] || fail "baseline.bin did not arrive intact"
outside_before=$(outside_state)

run_case write-past-window case_attack write-past-window
run_case cross-connection-key case_attack cross-connection-key
run_case key-after-reconnect case_attack key-after-reconnect
run_case write-after-verdict case_write_after_verdict
run_case stale-slot-key case_attack stale-slot-key
run_case id-guess case_id_guess
run_case hostile-names case_hostile_names
run_case symlinks case_symlinks
run_case secrets-permissions case_secrets_permissions
run_case addresses case_addresses
report_cases security
