#!/usr/bin/env bash
# End-to-end: the programs of the last release without BLAKE3 (scripts/lib/build-release.sh:
# its receiver refuses an Open naming BLAKE3 with Reject(UnsupportedVersion), 7.10) and the
# current ones, both ways, with the current default digest (BLAKE3):
#   new rdma-send -> release rdma-recv: a file, a tree, -P 2, a file already there, and
#     --digest blake3 asked for: each arrives verified with the fs-verity digest, no failed
#     file, no user action; the sender notes the fallback (a warning only when asked for)
#   release rdma-send -> new rdma-recv: a file and a tree (its fs-verity default)
#   new rdma-send -> new rdma-recv: BLAKE3, no fallback
#   fetching (7.13), which the release does not know: a new fetcher asking the release's
#     receiver is told it is not a fetch server (exit 1), and the release's rdma-send pushing
#     to a new rdma-send --serve is refused with words that say where to push
#   with sender keys (7.8) and sealing (7.11): a new keyed sender, which seals by default,
#     refuses the release's keyed receiver (which answers in clear) before sending a name or
#     a byte, saying why and what --no-seal does, and with --no-seal is served; the release's
#     keyed sender is served in clear by a new keyed receiver started with --allow-clear
#     (with a warning), and refused by one with --senders alone (sealing required by default)
# Exits 77 (skipped) when the release's programs were not built.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv
old_send=${RDMAX_RELEASE_BIN:-}/rdma-send old_recv=${RDMAX_RELEASE_BIN:-}/rdma-recv
if [[ -z ${RDMAX_RELEASE_BIN:-} || ! -x $old_send || ! -x $old_recv ]]; then
  echo "SKIP: no release programs in '${RDMAX_RELEASE_BIN:-}' (RDMAX_RELEASE_BIN): build them" \
    "with scripts/lib/build-release.sh BUILD-release (scripts/test.sh does), then run this" \
    "test again" >&2
  exit 77
fi

new_port=18517 old_port=18518 new_keyed_port=18519 old_keyed_port=18520 strict_port=18521
in=$RXE_SCRATCH/rel-in new_out=$RXE_SCRATCH/rel-out-new old_out=$RXE_SCRATCH/rel-out-old
new_log=$RXE_SCRATCH/rdma-recv-rel-new.log old_log=$RXE_SCRATCH/rdma-recv-rel-old.log
secrets=$RXE_SCRATCH/rel-secrets send_out=$RXE_SCRATCH/rel-send.out send_err=$RXE_SCRATCH/rel-send.err
rm -rf "$in" "$new_out" "$old_out"
mkdir -p "$in" "$new_out" "$old_out"
fallback='the receiver does not take BLAKE3: the fs-verity digest instead'

fail_context() {
  if [[ -n ${last_send:-} ]]; then echo "  last run: $last_send -> status $rc"; fi
  if [[ -s $send_out ]]; then echo "  its stdout:" && head -c 1500 "$send_out" | sed 's/^/    | /'; fi
  if [[ -s $send_err ]]; then echo "  its stderr (last 15 lines):" && tail -n 15 "$send_err" | sed 's/^/    | /'; fi
  local log
  for log in "$new_log" "$old_log"; do
    echo "  $(basename "$log") (last 10 lines):"
    tail -n 10 "$log" 2>/dev/null | sed 's/^/    | /'
  done
}

# send_with PROGRAM PORT ARGS...: sets rc and last_send; stdout and stderr in files.
send_with() {
  local program=$1 port=$2
  shift 2
  last_send="$program --host $RXE_ADDR --port $port $(printf '%q ' "$@")"
  rc=0
  timeout -k 5 120 "$program" --host "$RXE_ADDR" --port "$port" "$@" \
    >"$send_out" 2>"$send_err" </dev/null || rc=$?
}
expect_status() { ((rc == $1)) || fail "expected exit $1, got $rc"; }
expect_same_tree() { diff -r "$1" "$2" >/dev/null || fail "$2 differs from $1"; }
json_has() { grep -q -- "$1" "$send_out" || fail "--json has no $1: $(head -c 400 "$send_out")"; }
said_fallback() { grep -q "$fallback" "$send_err"; }
# The fs-verity digest of FILE, as --json writes it.
fsverity_of() { fsverity digest --hash-alg=sha256 --block-size=4096 "$1" | cut -d' ' -f1 | sed 's/^sha256://'; }

case_new_to_old_file() {
  head -c $((3 * 1048576 + 11)) /dev/urandom >"$in/one.bin"
  send_with "$send" "$old_port" --id alice --json "$in/one.bin"
  expect_status 0
  cmp -s "$in/one.bin" "$old_out/one.bin" || fail "one.bin differs at the release's receiver"
  json_has "\"algorithm\":\"fsverity-sha256\",\"value\":\"$(fsverity_of "$in/one.bin")\""
  json_has '"secret":"s3cr3t-alice"'
  said_fallback || fail "no note of the fallback: $(tail -3 "$send_err")"
  grep -q 'WARN\|warning' <(grep "$fallback" "$send_err") && fail "the default's fallback is a warning"
  grep -Eiq 'error|fail' "$send_err" && fail "errors in the sender's log: $(grep -Ei 'error|fail' "$send_err" | head -2)"
  pass "new sender (default BLAKE3) -> release receiver: one file verified by the fs-verity digest, secret, one note of the fallback"
}

case_new_to_old_tree() {
  mkdir -p "$in/tree"
  random_files "$in/tree" "f%02d.bin" 40 0 70000
  mkdir -p "$in/tree/sub" && head -c $((2 * 1048576)) /dev/urandom >"$in/tree/sub/big.bin"
  send_with "$send" "$old_port" -r --json "$in/tree"
  expect_status 0
  expect_same_tree "$in/tree" "$old_out/tree"
  json_has '"failed":0'
  said_fallback || fail "no note of the fallback"
  rm -rf "$old_out/tree"
  send_with "$send" "$old_port" -r -P 2 --json "$in/tree"
  expect_status 0
  expect_same_tree "$in/tree" "$old_out/tree"
  json_has '"failed":0'
  pass "new sender -> release receiver: a tree of $(find "$in/tree" -type f | wc -l) files, alone and over -P 2, all verified, none failed"
}

case_new_to_old_already_there() {
  send_with "$send" "$old_port" --json "$in/one.bin"
  expect_status 0
  json_has '"bytes_sent":0'
  pass "new sender -> release receiver: a file already there moves nothing (its fs-verity record matches)"
}

case_new_to_old_blake3_asked() {
  head -c 500000 /dev/urandom >"$in/asked.bin"
  send_with "$send" "$old_port" --digest blake3 "$in/asked.bin"
  expect_status 0
  cmp -s "$in/asked.bin" "$old_out/asked.bin" || fail "asked.bin differs"
  grep "$fallback" "$send_err" | grep -qi 'warn' || fail "--digest blake3 refused without a warning: $(grep "$fallback" "$send_err")"
  pass "new sender --digest blake3 -> release receiver: verified with fs-verity, and a warning says so"
}

case_old_to_new() {
  head -c $((2 * 1048576 + 5)) /dev/urandom >"$in/from-old.bin"
  send_with "$old_send" "$new_port" --id alice "$in/from-old.bin"
  expect_status 0
  cmp -s "$in/from-old.bin" "$new_out/from-old.bin" || fail "from-old.bin differs"
  [[ $(cat "$send_out") == s3cr3t-alice ]] || fail "no secret: $(head -c 80 "$send_out")"
  send_with "$old_send" "$new_port" -r "$in/tree"
  expect_status 0
  expect_same_tree "$in/tree" "$new_out/tree"
  pass "release sender -> new receiver: a file (secret) and a tree, verified"
}

case_new_to_new() {
  head -c $((1048576 + 3)) /dev/urandom >"$in/new.bin"
  send_with "$send" "$new_port" --json "$in/new.bin"
  expect_status 0
  cmp -s "$in/new.bin" "$new_out/new.bin" || fail "new.bin differs"
  json_has "\"algorithm\":\"blake3\",\"value\":\"$(b3sum "$in/new.bin" | cut -d' ' -f1)\""
  ! said_fallback || fail "two new programs fell back"
  pass "new sender -> new receiver: BLAKE3 (= b3sum), no fallback"
}

case_keys_new_to_old() {
  head -c $((1048576 + 7)) /dev/urandom >"$in/keyed.bin"
  send_with "$send" "$old_keyed_port" --key-file "$keyfile" "$in/keyed.bin"
  expect_status 1
  grep -q "release before sealing answers in clear" "$send_err" || fail "no word of sealing: $(tail -n 3 "$send_err")"
  [[ ! -e $old_out-keyed/keyed.bin ]] || fail "keyed.bin arrived in clear"
  send_with "$send" "$old_keyed_port" --key-file "$keyfile" --no-seal "$in/keyed.bin"
  expect_status 0
  cmp -s "$in/keyed.bin" "$old_out-keyed/keyed.bin" || fail "keyed.bin differs (--no-seal)"
  pass "new keyed sender -> release keyed receiver: refused in clear (exit 1, says why), served with --no-seal"
}

case_keys_old_to_new() {
  head -c $((1048576 + 9)) /dev/urandom >"$in/old-keyed.bin"
  send_with "$old_send" "$new_keyed_port" --key-file "$keyfile" "$in/old-keyed.bin"
  expect_status 0
  cmp -s "$in/old-keyed.bin" "$new_out-keyed/old-keyed.bin" || fail "old-keyed.bin differs"
  grep -q "sender 'alice' authenticated, but served IN CLEAR" "$new_log.keyed" || fail "the new receiver did not warn of a sender in clear"
  send_with "$old_send" "$strict_port" --key-file "$keyfile" "$in/old-keyed.bin"
  ((rc != 0)) || fail "the release's sender was served by a receiver that requires sealing"
  [[ ! -e $new_out-strict/old-keyed.bin ]] || fail "old-keyed.bin arrived in clear (sealing required)"
  grep -q "refused a keyed sender that does not seal" "$new_log.strict" || fail "the strict receiver did not say why"
  pass "release keyed sender -> new keyed receiver: with --allow-clear served in clear; by default refused (exit $rc)"
}

case_receivers_alive() {
  ! daemon_exited new || fail "the new rdma-recv exited with status $(daemon_status new)"
  ! daemon_exited old || fail "the release's rdma-recv exited with status $(daemon_status old)"
  pass "both receivers still running"
}

(
  umask 077
  printf '%s\n' '# ID SECRET' 'alice s3cr3t-alice' >"$secrets"
  key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
  echo "alice $key" >"$secrets.senders"
  echo "alice $key" >"$secrets.key"
)
keyfile=$secrets.key
mkdir -p "$new_out-keyed" "$old_out-keyed" "$new_out-strict"
start_daemon new-keyed "$new_log.keyed" "$recv" --bind "$RXE_ADDR" --port "$new_keyed_port" \
  --dir "$new_out-keyed" --senders "$secrets.senders" --allow-clear
start_daemon old-keyed "$old_log.keyed" "$old_recv" --bind "$RXE_ADDR" --port "$old_keyed_port" \
  --dir "$old_out-keyed" --senders "$secrets.senders"
start_daemon strict "$new_log.strict" "$recv" --bind "$RXE_ADDR" --port "$strict_port" \
  --dir "$new_out-strict" --senders "$secrets.senders"
start_daemon new "$new_log" "$recv" --bind "$RXE_ADDR" --port "$new_port" --dir "$new_out" \
  --secrets "$secrets"
start_daemon old "$old_log" "$old_recv" --bind "$RXE_ADDR" --port "$old_port" --dir "$old_out" \
  --secrets "$secrets"
wait_for_line 30 new "$new_log" 'listening on'
wait_for_line 30 old "$old_log" 'listening on'
wait_for_line 30 new-keyed "$new_log.keyed" 'listening on'
wait_for_line 30 old-keyed "$old_log.keyed" 'listening on'
wait_for_line 30 strict "$new_log.strict" 'listening on'
echo "release rdma-recv ($old_recv): $(grep -m1 'listening on' "$old_log")"

run_case new-to-old-file case_new_to_old_file
run_case new-to-old-tree case_new_to_old_tree
run_case new-to-old-already-there case_new_to_old_already_there
run_case new-to-old-blake3-asked case_new_to_old_blake3_asked
run_case old-to-new case_old_to_new
run_case new-to-new case_new_to_new
run_case keys-new-to-old case_keys_new_to_old
run_case keys-old-to-new case_keys_old_to_new
case_fetch_from_old() {
  rc=0
  timeout -k 5 60 "$recv" --from "$RXE_ADDR:$old_port" -o "$RXE_SCRATCH" one.bin \
    >"$send_out" 2>"$send_err" </dev/null || rc=$?
  last_send="rdma-recv --from (new) -> release rdma-recv"
  expect_status 1
  grep -q "not a fetch server" "$send_err" || fail "not told: $(tail -3 "$send_err")"
  pass "new fetcher -> release receiver: 'not a fetch server', exit 1"
}

case_old_pushes_to_server() {
  local serve_port=18522
  start_daemon serve "$RXE_SCRATCH/serve.log" "$send" --serve "$in" -p "$serve_port"
  wait_for 20 cm_listening "$serve_port"
  send_with "$old_send" "$serve_port" "$in/one.bin"
  ((rc != 0)) || fail "the release's push to a fetch server succeeded"
  grep -q "fetch server" "$send_err" || fail "the release's sender was not told: $(tail -3 "$send_err")"
  kill "$daemon_pid"
  wait_for 10 daemon_exited serve
  pass "release sender -> new rdma-send --serve: refused, told it reached a fetch server (exit $rc)"
}

run_case fetch-from-old case_fetch_from_old
run_case old-pushes-to-server case_old_pushes_to_server
run_case receivers-alive case_receivers_alive
echo "time in the test bed: ${SECONDS}s"
report_cases interop_release
