#!/usr/bin/env bash
# End-to-end: storage that takes seconds to commit must stall neither other connections
# nor the sender that waits for that commit. rdma-recv runs with the slow_fsync shim
# (LD_PRELOAD, tests/e2e/slow_fsync.cpp): an fsync of a regular file of 16 MiB or more
# takes 8 s more, and the shim marks when that stall begins and ends.
#   A: a 32 MiB file with --timeout 3; its commit stalls the receiver's fsync for 8 s.
#   B: a 1 MiB file started once A's stall has begun (below the size filter: its own
#      fsync is fast).
# (a) B exits 0 with the secret, its file is identical, and it ended before the stall did:
#     the whole of B (connect to verdict) ran while A's commit was stalled.
# (b) A exits 0 with the secret, although its --timeout (3 s) is shorter than the stall,
#     and its file is identical: a receiver still committing keeps the sender waiting.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv

port=18515 stall_s=8 min_bytes=$((16 * 1048576)) sender_timeout_s=3
a_size=$((32 * 1048576)) b_size=1048576
shim=$RDMAX_BIN/../lib/libslow_fsync.so
in=$RXE_SCRATCH/in out=$RXE_SCRATCH/out mark=$RXE_SCRATCH/fsync-mark
recv_log=$RXE_SCRATCH/rdma-recv.log secrets=$RXE_SCRATCH/secrets
rm -rf "$in" "$out" "$mark".*
mkdir -p "$in" "$out"
[[ -f $shim ]] || fail "missing $shim (the slow_fsync target of tests/CMakeLists.txt)"

now_ms() { date +%s%3N; }
file_of() { echo "$RXE_SCRATCH/sender.$1.$2"; } # file_of NAME out|err|rc|t0|t1|pid
# ms_since START_MS FILE: FILE's timestamp relative to START_MS, as "+N ms" (or "?").
ms_since() {
  if [[ -s $2 ]]; then printf '%+d ms\n' "$(($(<"$2") - $1))"; else echo "?"; fi
}
# joined TEXT...: the TEXTs separated by "; ".
joined() {
  local s; s=$(printf '%s; ' "$@")
  echo "${s%; }"
}

fail_context() {
  local name
  for name in A B; do
    echo "  sender $name: status $(cat "$(file_of "$name" rc)" 2>/dev/null || echo '?')"
    if [[ -s $(file_of "$name" err) ]]; then
      tail -n 8 "$(file_of "$name" err)" | sed 's/^/    | /'
    fi
  done
  echo "  rdma-recv log (last 20 lines):"
  tail -n 20 "$recv_log" 2>/dev/null | sed 's/^/    | /'
  echo "  $out holds: $(find "$out" -mindepth 1 -maxdepth 1 -printf '%f(%s) ' 2>/dev/null)"
}

# start_sender NAME ARGS...: rdma-send ARGS to our receiver in the background, bounded by
# 60 s. Leaves stdout, stderr, exit status and start/end times (ms) in file_of NAME ...
start_sender() {
  local f=$RXE_SCRATCH/sender.$1; shift
  rm -f "$f".*
  (
    now_ms >"$f.t0"
    timeout -k 5 60 "$send" --host "$RXE_ADDR" --port "$port" "$@" \
      >"$f.out" 2>"$f.err" </dev/null &
    echo $! >"$f.pid"
    rc=0
    wait $! || rc=$?
    now_ms >"$f.t1"
    echo "$rc" >"$f.rc.tmp" && mv "$f.rc.tmp" "$f.rc"
  ) &
  bg_pids+=($!)
  wait_for 10 test -s "$f.pid"
  bg_pids+=("$(<"$f.pid")")
}
sender_done() { [[ -s $(file_of "$1" rc) ]]; }
sender_status() { cat "$(file_of "$1" rc)"; }

# secret_ok NAME SECRET: the sender's stdout is exactly SECRET (one optional newline).
secret_ok() {
  local got; got=$(cat "$(file_of "$1" out)" && echo x)
  got=${got%x}
  [[ $got == "$2" || $got == "$2"$'\n' ]]
}

# ---------------------------------------------------------------------------------
(
  umask 077
  printf '%s\n' '# ID SECRET' 'alice s3cr3t-alice' 'bob s3cr3t-bob' >"$secrets"
)
head -c "$a_size" /dev/urandom >"$in/a.bin"
head -c "$b_size" /dev/urandom >"$in/b.bin"

start_daemon recv "$recv_log" env LD_PRELOAD="$shim" RDMAX_SLOW_FSYNC_SECONDS="$stall_s" \
  RDMAX_SLOW_FSYNC_MIN_BYTES="$min_bytes" RDMAX_SLOW_FSYNC_MARK="$mark" \
  "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$out" --secrets "$secrets" --timeout 30
recv_pid=$daemon_pid
wait_for_line 30 recv "$recv_log" 'listening on'
grep -q libslow_fsync.so "/proc/$recv_pid/maps" || fail "rdma-recv (pid $recv_pid) has not loaded $shim"
echo "rdma-recv (pid $recv_pid, fsync of files >= $min_bytes bytes delayed ${stall_s}s): $(grep -m1 'listening on' "$recv_log")"

start_sender A --timeout "$sender_timeout_s" --id alice "$in/a.bin"
# A is hashed, sent and verified before its commit begins: allow for emulation.
end=$((SECONDS + 120))
until [[ -s $mark.start ]]; do
  sender_done A && fail "sender A ended (status $(sender_status A)) before the receiver's fsync stalled"
  daemon_exited recv && fail "rdma-recv exited (status $(daemon_status recv)) before the fsync stalled"
  ((SECONDS < end)) || fail "no fsync stall began within 120 s of starting sender A"
  sleep 0.1
done
stall_start=$(<"$mark.start")

start_sender B --timeout "$sender_timeout_s" --id bob "$in/b.bin"
wait_for 90 sender_done B
wait_for 90 sender_done A
wait_for 30 test -s "$mark.end"
stall_end=$(<"$mark.end")

echo "times from the start of A's fsync stall ($stall_s s): A started $(ms_since "$stall_start" "$(file_of A t0)"), ended $(ms_since "$stall_start" "$(file_of A t1)") (status $(sender_status A)); B started $(ms_since "$stall_start" "$(file_of B t0)"), ended $(ms_since "$stall_start" "$(file_of B t1)") (status $(sender_status B)); stall ended $(ms_since "$stall_start" "$mark.end")"

# ---------------------------------------------------------------------------------
case_b_during_stall() {
  local problems=() rc b_end
  rc=$(sender_status B) b_end=$(<"$(file_of B t1)")
  ((rc == 0)) || problems+=("B exited $rc, expected 0")
  secret_ok B s3cr3t-bob || problems+=("B's stdout is not the secret 's3cr3t-bob': '$(head -c 80 "$(file_of B out)")'")
  cmp -s "$in/b.bin" "$out/b.bin" || problems+=("B's file on the receiver is missing or differs")
  ((b_end < stall_end)) ||
    problems+=("B ended $((b_end - stall_start)) ms into the stall, after it ended ($((stall_end - stall_start)) ms): B waited for A's commit")
  ((${#problems[@]} == 0)) || fail "(a) $(joined "${problems[@]}")"
  pass "(a) B verified (secret, cmp) $((stall_end - b_end)) ms before A's stalled fsync returned"
}

case_a_outlasts_stall() {
  local problems=() rc a_end
  rc=$(sender_status A) a_end=$(<"$(file_of A t1)")
  ((rc == 0)) ||
    problems+=("A exited $rc, expected 0 (it ended $((a_end - stall_start)) ms into the ${stall_s} s stall; its --timeout is ${sender_timeout_s} s)")
  secret_ok A s3cr3t-alice || problems+=("A's stdout is not the secret 's3cr3t-alice': '$(head -c 80 "$(file_of A out)")'")
  cmp -s "$in/a.bin" "$out/a.bin" || problems+=("A's file on the receiver is missing or differs")
  ((${#problems[@]} == 0)) || fail "(b) $(joined "${problems[@]}")"
  pass "(b) A verified (secret, cmp) after an ${stall_s} s commit, with --timeout ${sender_timeout_s}"
}

run_case b-during-stall case_b_during_stall
run_case a-outlasts-stall case_a_outlasts_stall
daemon_exited recv && fail "rdma-recv exited with status $(daemon_status recv)"
echo "time in the test bed: ${SECONDS}s"
report_cases slow_storage
