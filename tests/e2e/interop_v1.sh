#!/usr/bin/env bash
# End-to-end: a protocol-version-1 peer keeps working against the current programs.
# The version-1 programs are those of the last version-1 release, built by
# scripts/lib/build-v1.sh (scripts/test.sh runs it; ctest passes RDMAX_V1_BIN).
#   v1 rdma-send  -> new rdma-recv: a good file (secret), a bad hash (5), an existing name (4)
#   new rdma-send -> v1 rdma-recv:  falls back to version 1, says so on stderr, succeeds
#   new rdma-send -> new rdma-recv: succeeds, without falling back
#   v1 rdma-send  -> new rdma-send --serve: refused, told it reached a fetch server
# Exits 77 (skipped) when the version-1 programs were not built.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv
v1_send=${RDMAX_V1_BIN:-}/rdma-send v1_recv=${RDMAX_V1_BIN:-}/rdma-recv
if [[ -z ${RDMAX_V1_BIN:-} || ! -x $v1_send || ! -x $v1_recv ]]; then
  echo "SKIP: no version-1 programs in '${RDMAX_V1_BIN:-}' (RDMAX_V1_BIN): build them with" \
    "scripts/lib/build-v1.sh BUILD-v1 (scripts/test.sh does), then run this test again" >&2
  exit 77
fi

new_port=18515 v1_port=18516
in=$RXE_SCRATCH/in new_out=$RXE_SCRATCH/out-new v1_out=$RXE_SCRATCH/out-v1
new_log=$RXE_SCRATCH/rdma-recv-new.log v1_log=$RXE_SCRATCH/rdma-recv-v1.log
secrets=$RXE_SCRATCH/secrets send_out=$RXE_SCRATCH/send.out send_err=$RXE_SCRATCH/send.err
rm -rf "$in" "$new_out" "$v1_out"
mkdir -p "$in" "$new_out" "$v1_out"
# A stderr line by which the new sender says it fell back to protocol version 1.
says_version_1='version 1([^0-9]|$)'

fail_context() {
  if [[ -n ${last_send:-} ]]; then echo "  last run: $last_send -> status $rc, ${elapsed}s"; fi
  if [[ -s $send_out ]]; then echo "  the last rdma-send's stdout:" && sed 's/^/    | /' "$send_out"; fi
  if [[ -s $send_err ]]; then echo "  its stderr (last 15 lines):" && tail -n 15 "$send_err" | sed 's/^/    | /'; fi
  local log
  for log in "$new_log" "$v1_log"; do
    echo "  $(basename "$log") (last 10 lines):"
    tail -n 10 "$log" 2>/dev/null | sed 's/^/    | /'
  done
}

make_input() { head -c "$2" /dev/urandom >"$in/$1"; }

# send_with PROGRAM PORT ARGS...: PROGRAM (an rdma-send) to the receiver on PORT, bounded
# by 60 s. Sets rc, elapsed and last_send; stdout in $send_out, stderr in $send_err.
send_with() {
  local program=$1 port=$2 t0 t1; shift 2
  last_send="$program --host $RXE_ADDR --port $port $(printf '%q ' "$@")"
  rc=0
  t0=$(date +%s.%N)
  timeout -k 5 60 "$program" --host "$RXE_ADDR" --port "$port" "$@" \
    >"$send_out" 2>"$send_err" </dev/null || rc=$?
  t1=$(date +%s.%N)
  elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

expect_status() { ((rc == $1)) || fail "expected exit $1, got $rc"; }
expect_secret() {
  local got; got=$(cat "$send_out" && echo x)
  got=${got%x}
  [[ $got == "$1" || $got == "$1"$'\n' ]] || fail "stdout must be exactly the secret '$1', got '$(head -c 80 "$send_out")'"
}
expect_empty_stdout() { [[ ! -s $send_out ]] || fail "expected empty stdout, got $(wc -c <"$send_out") bytes"; }
# expect_same SRC DST: DST exists and is identical to SRC.
expect_same() {
  [[ -f $2 ]] || fail "$2 was not delivered"
  cmp -s "$1" "$2" || fail "$2 differs from $1"
}

# ---------------------------------------------------------------------------------
case_v1_sender_good() {
  make_input v1-good.bin $((3 * 1048576))
  send_with "$v1_send" "$new_port" --id alice "$in/v1-good.bin"
  expect_status 0
  expect_secret s3cr3t-alice
  expect_same "$in/v1-good.bin" "$new_out/v1-good.bin"
  pass "v1 sender -> new receiver: 3 MiB verified, secret printed (${elapsed}s)"
}

case_v1_sender_bad_hash() {
  make_input v1-bad.bin 300000
  send_with "$v1_send" "$new_port" --inject-corruption 123456 "$in/v1-bad.bin"
  expect_status 5
  expect_empty_stdout
  [[ ! -e $new_out/v1-bad.bin ]] || fail "a file with a bad hash was stored"
  pass "v1 sender -> new receiver: hash made bad (byte 123456 flipped): exit 5, nothing stored (${elapsed}s)"
}

case_v1_sender_existing() {
  make_input existing.bin 20000
  cp "$in/existing.bin" "$new_out/existing.bin"
  make_input v1-other.bin 20001
  send_with "$v1_send" "$new_port" --name existing.bin "$in/v1-other.bin"
  expect_status 4
  expect_same "$in/existing.bin" "$new_out/existing.bin" # unchanged
  pass "v1 sender -> new receiver: existing name rejected (exit 4), original unchanged (${elapsed}s)"
}

case_new_sender_v1_receiver() {
  make_input new-to-v1.bin 1500000
  send_with "$send" "$v1_port" --id alice "$in/new-to-v1.bin"
  cp "$send_err" "$RXE_SCRATCH/new-to-v1.err" # for the next case
  expect_status 0
  expect_secret s3cr3t-alice
  expect_same "$in/new-to-v1.bin" "$v1_out/new-to-v1.bin"
  pass "new sender -> v1 receiver: verified, secret printed (${elapsed}s)"
}

# The same file again: the version-1 receiver refuses the existing name (it knows no Have);
# the sender reports the file's refusal with its next step, and keeps the receiver's copy.
case_new_sender_v1_receiver_existing() {
  send_with "$send" "$v1_port" "$in/new-to-v1.bin"
  expect_status 4
  grep -q "new-to-v1.bin': refused by the receiver (Exists" "$send_err" ||
    fail "no refusal of the file: $(tr '\n' '|' <"$send_err" | head -c 400)"
  grep -q -- '--name' "$send_err" || fail "the refusal does not name --name"
  expect_same "$in/new-to-v1.bin" "$v1_out/new-to-v1.bin"
  pass "new sender -> v1 receiver, an existing name: exit 4, the file's refusal with its next step"
}

case_new_sender_says_version_1() {
  local err=$RXE_SCRATCH/new-to-v1.err
  [[ -f $err ]] || fail "the new sender did not run against the v1 receiver"
  grep -Eiq "$says_version_1" "$err" ||
    fail "the new sender's stderr against the v1 receiver has no line matching /$says_version_1/: $(tr '\n' '|' <"$err" | head -c 400)"
  pass "new sender -> v1 receiver: says '$(grep -Ei -m1 "$says_version_1" "$err")'"
}

case_new_sender_new_receiver() {
  make_input new-to-new.bin 1500000
  send_with "$send" "$new_port" --id alice "$in/new-to-new.bin"
  expect_status 0
  expect_secret s3cr3t-alice
  expect_same "$in/new-to-new.bin" "$new_out/new-to-new.bin"
  ! grep -Eiq "$says_version_1" "$send_err" ||
    fail "two new programs fell back to version 1: $(grep -Ei -m1 "$says_version_1" "$send_err")"
  pass "new sender -> new receiver: verified, secret printed, no fallback (${elapsed}s)"
}

case_v1_sender_to_server() {
  local serve_port=18531
  start_daemon serve "$RXE_SCRATCH/v1-serve.log" "$send" --serve "$in" -p "$serve_port"
  wait_for 20 cm_listening "$serve_port"
  make_input v1-pushed.bin 1000
  send_with "$v1_send" "$serve_port" "$in/v1-pushed.bin"
  ((rc != 0)) || fail "a version-1 push to a fetch server succeeded"
  grep -q "this is a fetch server" "$send_err" || fail "not told: $(tail -3 "$send_err")"
  kill "$daemon_pid"
  wait_for 10 daemon_exited serve
  pass "v1 sender -> new rdma-send --serve: refused in version 1, told it reached a fetch server"
}

case_receivers_alive() {
  ! daemon_exited new || fail "the new rdma-recv exited with status $(daemon_status new)"
  ! daemon_exited v1 || fail "the v1 rdma-recv exited with status $(daemon_status v1)"
  pass "both receivers still running"
}

# ---------------------------------------------------------------------------------
(
  umask 077
  printf '%s\n' '# ID SECRET' 'alice s3cr3t-alice' >"$secrets"
)
start_daemon new "$new_log" "$recv" --bind "$RXE_ADDR" --port "$new_port" --dir "$new_out" \
  --secrets "$secrets"
start_daemon v1 "$v1_log" "$v1_recv" --bind "$RXE_ADDR" --port "$v1_port" --dir "$v1_out" \
  --secrets "$secrets"
wait_for_line 30 new "$new_log" 'listening on'
wait_for_line 30 v1 "$v1_log" 'listening on'
echo "new rdma-recv: $(grep -m1 'listening on' "$new_log")"
echo "v1 rdma-recv ($v1_recv): $(grep -m1 'listening on' "$v1_log")"

run_case v1-sender-good case_v1_sender_good
run_case v1-sender-bad-hash case_v1_sender_bad_hash
run_case v1-sender-existing case_v1_sender_existing
run_case new-sender-v1-receiver case_new_sender_v1_receiver
run_case new-sender-says-version-1 case_new_sender_says_version_1
run_case new-sender-v1-receiver-existing case_new_sender_v1_receiver_existing
run_case new-sender-new-receiver case_new_sender_new_receiver
run_case v1-sender-to-server case_v1_sender_to_server
run_case receivers-alive case_receivers_alive
echo "time in the test bed: ${SECONDS}s"
report_cases interop_v1
