#!/usr/bin/env bash
# End-to-end: one rdma-recv daemon serves many rdma-send transfers on one rxe device.
# A 256 KiB window (4 slots of 64 KiB) makes "many times the window" cheap under
# emulation. Each case is a function run by run_case in its own subshell, so one
# failing case does not hide the others; the last line counts them.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv

port=18515 dead_port=18999 max_size=4194304 # --max-size 4M
in=$RXE_SCRATCH/in out=$RXE_SCRATCH/out
recv_log=$RXE_SCRATCH/rdma-recv.log secrets=$RXE_SCRATCH/secrets
send_out=$RXE_SCRATCH/send.out send_err=$RXE_SCRATCH/send.err
rm -rf "$in" "$out" "$RXE_SCRATCH/evil"
mkdir -p "$in" "$out"
# rdma-send's digest cache: this run's own, not the home directory's.
export XDG_CACHE_HOME=$RXE_SCRATCH/cache
rm -rf "$XDG_CACHE_HOME"

# Every name a passing case leaves in $out; the final listing may hold nothing else.
expected_names=(empty.bin one.bin odd-65535.bin odd-65537.bin odd-262145.bin odd-1000003.bin
  large.bin large-json.bin 'my file ü 日本.bin' 'source file with spaces.bin' alice.bin mallory.bin dup.bin
  final.bin digest-fsverity.bin digest-sha256.bin digest-blake3.bin cached-1.bin cached-2.bin cached-3.bin
  kept.bin kept-named.bin)

# ---------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------
describe_status() {
  case $1 in
    0) echo success ;; 1) echo "other error" ;; 2) echo "usage error / unreadable file" ;;
    3) echo "cannot connect / connection broke" ;; 4) echo "rejected by the receiver" ;;
    5) echo "bad verdict (hash mismatch)" ;; 6) echo "ID denied" ;;
    124 | 137) echo "killed by the test's timeout" ;; *) echo "unexpected" ;;
  esac
}

# Shown by fail: the last rdma-send run and the receiver's recent log.
fail_context() {
  echo "  last run: ${last_send:-none} -> status ${rc:-?} ($(describe_status "${rc:-x}")), ${elapsed:-?}s"
  if [[ -s $send_out ]]; then echo "  its stdout:" && sed 's/^/    | /' "$send_out"; fi
  if [[ -s $send_err ]]; then echo "  its stderr (last 15 lines):" && tail -n 15 "$send_err" | sed 's/^/    | /'; fi
  echo "  rdma-recv log (last 20 lines of $recv_log):"
  tail -n 20 "$recv_log" 2>/dev/null | sed 's/^/    | /'
  echo "  $out holds: $(listing | tr '\n' '/')"
}

# make_input NAME SIZE: random bytes in $in/NAME.
make_input() { head -c "$2" /dev/urandom >"$in/$1"; }

# send_file ARGS...: rdma-send to our receiver, bounded by SEND_TIMEOUT (default 60 s).
# Sets rc, elapsed (seconds) and last_send; stdout in $send_out, stderr in $send_err.
send_file() {
  local t0 t1
  last_send="rdma-send --host $RXE_ADDR --port $port $(printf '%q ' "$@")"
  rc=0
  t0=$(date +%s.%N)
  timeout -k 5 "${SEND_TIMEOUT:-60}" "$send" --host "$RXE_ADDR" --port "$port" "$@" \
    >"$send_out" 2>"$send_err" </dev/null || rc=$?
  t1=$(date +%s.%N)
  elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

expect_status() {
  ((rc == $1)) || fail "expected exit $1 ($(describe_status "$1")), got $rc ($(describe_status "$rc"))"
}
expect_empty_stdout() {
  [[ ! -s $send_out ]] || fail "expected empty stdout, got $(wc -c <"$send_out") bytes"
}

# expect_delivered SRC NAME: $out/NAME is a regular file identical to SRC.
expect_delivered() {
  local src=$1 dst=$out/$2 want got
  [[ -f $dst ]] || fail "'$2' was not delivered into $out"
  want=$(sha256sum <"$src" | cut -d' ' -f1)
  got=$(sha256sum <"$dst" | cut -d' ' -f1)
  [[ $want == "$got" ]] || fail "'$2': sha256 $got, sent $want ($(stat -c %s "$dst") of $(stat -c %s "$src") bytes)"
  cmp -s "$src" "$dst" || fail "'$2': cmp finds a difference from $src"
}

expect_absent() { [[ ! -e $out/$1 && ! -L $out/$1 ]] || fail "'$1' exists in $out but must not"; }

# One name per line, sorted bytewise; hidden names included (like ls -A).
listing() { find "$out" -mindepth 1 -maxdepth 1 -printf '%f\n' | LC_ALL=C sort; }
# Temporaries: hidden names (.NAME.rdmax-*.part) or anything with .rdmax- in it.
temporaries() { listing | grep -E '^\.|\.rdmax-' || true; }
no_temporaries() { [[ -z $(temporaries) ]]; }
# The receiver may remove a temporary just after its verdict reaches the sender.
expect_no_temporaries() {
  eventually 5 no_temporaries || fail "temporaries left in $out: $(temporaries | tr '\n' ' ')"
}

# ---------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------
case_empty_file() {
  make_input empty.bin 0
  send_file "$in/empty.bin"
  expect_status 0
  expect_empty_stdout
  expect_delivered "$in/empty.bin" empty.bin
  pass "empty file (${elapsed}s)"
}

case_one_byte() {
  make_input one.bin 1
  send_file "$in/one.bin"
  expect_status 0
  expect_empty_stdout
  expect_delivered "$in/one.bin" one.bin
  pass "1-byte file (${elapsed}s)"
}

# Sizes that are no multiple of a slot, the window, a page or a hash block.
case_odd_sizes() {
  local n times=()
  for n in 65535 65537 262145 1000003; do
    make_input "odd-$n.bin" "$n"
    send_file "$in/odd-$n.bin"
    expect_status 0
  expect_empty_stdout
    expect_delivered "$in/odd-$n.bin" "odd-$n.bin"
    times+=("$n:${elapsed}s")
  done
  pass "odd sizes ${times[*]}"
}

case_many_windows() {
  # 12+ receive windows of 256 KiB; the sender registers its file in 2 MiB windows (8 x
  # what can be in flight), so this also crosses from one of those to the next.
  local size=$((3 * 1048576 + 123))
  make_input large.bin "$size"
  send_file "$in/large.bin"
  expect_status 0
  expect_empty_stdout
  expect_delivered "$in/large.bin" large.bin
  # --zero-copy: the data goes straight from the file's registered mapping (--json says so).
  send_file --json --zero-copy "$in/large.bin" --name large-json.bin
  expect_status 0
  grep -q '"zero_copy":true' "$send_out" || fail "expected a zero-copy transfer: $(cat "$send_out")"
  grep -q "\"bytes\":$size," "$send_out" || fail "--json bytes wrong: $(cat "$send_out")"
  expect_delivered "$in/large.bin" large-json.bin
  pass "3 MiB + 123 bytes ($((size / 262144))+ windows), copied and zero-copy (${elapsed}s)"
}

case_unusual_names() {
  local src='source file with spaces.bin' name='my file ü 日本.bin'
  make_input "$src" 70001
  send_file --name "$name" "$in/$src"
  expect_status 0
  expect_delivered "$in/$src" "$name"
  # Without --name the file keeps its own (spaced) name.
  send_file "$in/$src"
  expect_status 0
  expect_delivered "$in/$src" "$src"
  pass "names with spaces and non-ASCII: '$name', '$src'"
}

# A single file is a session of one entry: it keeps its permission bits and modification
# time (to the nanosecond) like every file of a tree, under its own name or --name's.
case_mode_and_time() {
  local src=$in/kept.bin
  make_input kept.bin 70001
  chmod 0640 "$src"
  touch -d '2001-02-03 04:05:06.123456789' "$src"
  send_file "$src"
  expect_status 0
  send_file --name kept-named.bin "$src"
  expect_status 0
  local want name got
  want=$(stat -c '%a %.9Y' "$src")
  for name in kept.bin kept-named.bin; do
    expect_delivered "$src" "$name"
    got=$(stat -c '%a %.9Y' "$out/$name")
    [[ $got == "$want" ]] || fail "'$name' has mode and time '$got', the source '$want'"
  done
  pass "one file keeps its mode and time ($want), also under --name"
}

case_secret_for_known_id() {
  local stdout
  make_input alice.bin 100000
  send_file --id alice "$in/alice.bin"
  expect_status 0
  stdout=$(cat "$send_out" && echo x) # keep trailing newlines: compare exactly
  stdout=${stdout%x}
  [[ $stdout == 's3cr3t-alice' || $stdout == $'s3cr3t-alice\n' ]] ||
    fail "stdout must be exactly the secret 's3cr3t-alice' (one optional newline), got: $(od -c "$send_out" | head -3)"
  expect_delivered "$in/alice.bin" alice.bin
  pass "--id alice: stdout is exactly the secret, file verified"
}

# The id is offered only after a Good verdict (docs/PROTOCOL.md), so the file is delivered.
case_unknown_id_denied() {
  make_input mallory.bin 50000
  send_file --id mallory "$in/mallory.bin"
  expect_status 6
  expect_empty_stdout
  expect_delivered "$in/mallory.bin" mallory.bin
  expect_no_temporaries
  pass "--id mallory: denied (exit 6), empty stdout; the file itself verified"
}

case_bad_hash() {
  make_input corrupt.bin 200000
  send_file --inject-corruption 70000 "$in/corrupt.bin"
  expect_status 5
  expect_empty_stdout
  expect_absent corrupt.bin
  expect_no_temporaries
  pass "byte flipped at 70000 after hashing: exit 5, no file, no temporary"
}

# The digest --json reports: "algorithm","value","from_cache" in that order.
json_digest() { grep -o '"digest":{[^}]*}' "$send_out"; }
expect_json_digest() {  # ALGORITHM HEX FROM_CACHE
  local want="\"digest\":{\"algorithm\":\"$1\",\"value\":\"$2\",\"from_cache\":$3}"
  [[ $(json_digest) == "$want" ]] || fail "--json digest: expected $want, got $(json_digest || cat "$send_out")"
}
# The receiver's log line for NAME names the algorithm and the digest it computed.
expect_receiver_logged() {  # NAME ALGORITHM HEX
  eventually 5 grep -q "'$1'.*$2 $3, verdict Good" "$recv_log" ||
    fail "rdma-recv's log has no \"'$1' ... $2 $3, verdict Good\": $(grep -F "'$1'" "$recv_log" | tail -2)"
}

case_digest_algorithms() {
  make_input digest-fsverity.bin $((1048576 + 3))
  send_file --json --digest fsverity "$in/digest-fsverity.bin"
  expect_status 0
  local fsv; fsv=$(fsverity digest --hash-alg=sha256 --block-size=4096 "$in/digest-fsverity.bin" | cut -d' ' -f1)
  fsv=${fsv#sha256:}
  expect_json_digest fsverity-sha256 "$fsv" false
  expect_delivered "$in/digest-fsverity.bin" digest-fsverity.bin
  expect_receiver_logged digest-fsverity.bin fsverity-sha256 "$fsv"
  make_input digest-sha256.bin $((1048576 + 5))
  send_file --json --digest sha256 "$in/digest-sha256.bin"
  expect_status 0
  local sha; sha=$(sha256sum <"$in/digest-sha256.bin" | cut -d' ' -f1)
  expect_json_digest sha256 "$sha" false
  expect_delivered "$in/digest-sha256.bin" digest-sha256.bin
  expect_receiver_logged digest-sha256.bin sha256 "$sha"
  # BLAKE3, the default (the Open's extension 0x8004): a chunk and a bit, hashed by both ends
  # as b3sum does.
  make_input digest-blake3.bin $((1048576 + 7))
  send_file --json "$in/digest-blake3.bin"
  expect_status 0
  local b3; b3=$(b3sum "$in/digest-blake3.bin" | cut -d' ' -f1)
  expect_json_digest blake3 "$b3" false
  expect_delivered "$in/digest-blake3.bin" digest-blake3.bin
  expect_receiver_logged digest-blake3.bin blake3 "$b3"
  # A flipped byte fails any digest.
  make_input corrupt-sha.bin 300000
  send_file --digest sha256 --inject-corruption 123 "$in/corrupt-sha.bin"
  expect_status 5
  expect_absent corrupt-sha.bin
  make_input corrupt-b3.bin 300000
  send_file --inject-corruption 200000 "$in/corrupt-b3.bin"
  expect_status 5
  expect_absent corrupt-b3.bin
  pass "the three digests: the default BLAKE3 (= b3sum), --digest fsverity (= fsverity digest) and --digest sha256 (= sha256sum), at both ends; a flipped byte fails blake3 and sha256 too"
}

case_digest_cache() {
  make_input cached.bin $((2 * 1048576 + 7))
  touch -d '-1 hour' "$in/cached.bin"
  sleep 2.2  # the ctime touch set must leave the cache's 2 s racy window
  local fsv
  send_file --json --name cached-1.bin "$in/cached.bin"
  expect_status 0
  fsv=$(json_digest | grep -o '"value":"[0-9a-f]*"')
  json_digest | grep -q '"from_cache":false' || fail "the first send came from the cache: $(json_digest)"
  expect_delivered "$in/cached.bin" cached-1.bin
  send_file --json --name cached-2.bin "$in/cached.bin"
  expect_status 0
  json_digest | grep -q "$fsv,\"from_cache\":true" || fail "the second send of the unchanged file was hashed again: $(json_digest)"
  expect_delivered "$in/cached.bin" cached-2.bin
  # Same size, same mtime, other content: only the ctime tells, and the cache must see it.
  printf 'X' | dd of="$in/cached.bin" bs=1 seek=1000000 conv=notrunc status=none
  touch -d '-1 hour' "$in/cached.bin"
  send_file --json --name cached-3.bin "$in/cached.bin"
  expect_status 0
  json_digest | grep -q '"from_cache":false' || fail "a changed file came from the cache: $(json_digest)"
  ! json_digest | grep -q "$fsv" || fail "a changed file kept its old digest: $(json_digest)"
  expect_delivered "$in/cached.bin" cached-3.bin
  pass "digest cache: a second send of the unchanged file skipped hashing; a same-size change with the mtime put back was hashed again and verified"
}

case_rejected_requests() {
  make_input dup.bin 30000
  make_input dup-other.bin 30001
  send_file "$in/dup.bin"
  expect_status 0
  expect_delivered "$in/dup.bin" dup.bin
  send_file --name dup.bin "$in/dup-other.bin"
  expect_status 4
  expect_delivered "$in/dup.bin" dup.bin # the original, unchanged
  expect_no_temporaries
  make_input too-large.bin $((max_size + 1))
  send_file "$in/too-large.bin"
  expect_status 4
  expect_absent too-large.bin
  expect_no_temporaries
  pass "existing name without --overwrite and size over --max-size rejected (exit 4); original unchanged"
}

case_no_receiver() {
  make_input nobody.bin 1000
  local port=$dead_port
  SEND_TIMEOUT=20 send_file "$in/nobody.bin"
  expect_status 3
  awk -v t="$elapsed" 'BEGIN { exit !(t < 10) }' || fail "exit 3 took ${elapsed}s, limit 10 s"
  pass "nobody on port $dead_port: exit 3 after ${elapsed}s"
}

case_still_serving() {
  ! daemon_exited recv || fail "rdma-recv exited with status $(daemon_status recv) during the cases"
  kill -0 "$recv_pid" || fail "rdma-recv (pid $recv_pid) is gone"
  make_input final.bin 500000
  send_file "$in/final.bin"
  expect_status 0
  expect_delivered "$in/final.bin" final.bin
  pass "rdma-recv still serving after every case (${elapsed}s)"
}

# SIGTERM while a file is under way (rdma-recv(1), "Stopping"): within --grace the transfer
# finishes and is delivered, a new sender is turned away meanwhile, and rdma-recv exits 0
# once it is done; past --grace 1s a longer one is stopped, its sender is told the receiver
# shut down, and what arrived is kept for a resume, nothing under the final name.
case_shutdown_grace() {
  local p2=$((port + 1)) dir2=$RXE_SCRATCH/grace log2=$RXE_SCRATCH/grace.log spid gpid src=$in/grace.bin
  rm -rf "$dir2" && mkdir -p "$dir2"
  make_input grace.bin $((8 << 20))
  start_daemon grace "$log2" "$recv" --bind "$RXE_ADDR" --port "$p2" --dir "$dir2" --grace 60s
  gpid=$daemon_pid
  wait_for_line 30 grace "$log2" 'listening on'
  "$send" --host "$RXE_ADDR" --port "$p2" --bwlimit 2M "$src" >"$send_out" 2>"$send_err" </dev/null &
  spid=$!
  wait_for_line 30 grace "$log2" "receiving 'grace.bin'"
  kill -TERM "$gpid"
  wait_for_line 10 grace "$log2" "shutting down once the transfers under way end"
  rc=0
  "$send" --host "$RXE_ADDR" --port "$p2" "$in/one.bin" >/dev/null 2>&1 </dev/null || rc=$?
  ((rc == 3)) || fail "a sender that came during the grace exited $rc, expected 3 (refused)"
  rc=0
  wait "$spid" || rc=$?
  ((rc == 0)) || fail "the transfer under way exited $rc when the receiver was stopped with a grace"
  cmp -s "$src" "$dir2/grace.bin" || fail "grace.bin was not delivered whole"
  eventually 10 daemon_exited grace || fail "rdma-recv still running after its last transfer ended"
  (($(daemon_status grace) == 0)) || fail "rdma-recv exited $(daemon_status grace) after SIGTERM"
  rm -f "$dir2/grace.bin"
  log2=$RXE_SCRATCH/grace2.log
  start_daemon grace2 "$log2" "$recv" --bind "$RXE_ADDR" --port "$p2" --dir "$dir2" --grace 1s -v
  gpid=$daemon_pid
  wait_for_line 30 grace2 "$log2" 'listening on'
  "$send" --host "$RXE_ADDR" --port "$p2" --bwlimit 1M "$src" >"$send_out" 2>"$send_err" </dev/null &
  spid=$!
  # Once some of it is durable (a checkpoint), so that there is something to keep: the
  # first chunk goes only after a second at 1M, and a signal before it would leave nothing.
  wait_for_line 30 grace2 "$log2" "partial 'grace.bin': [0-9]+ bytes durable"
  kill -TERM "$gpid"
  rc=0
  wait "$spid" || rc=$?
  ((rc != 0)) || fail "a transfer longer than --grace 1s still succeeded"
  grep -qi "shutting down" "$send_err" || fail "the sender was not told the receiver shut down: $(tail -n 3 "$send_err")"
  eventually 10 daemon_exited grace2 || fail "rdma-recv still running 10 s after --grace 1s"
  [[ ! -e $dir2/grace.bin ]] || fail "an unfinished grace.bin is under its final name"
  grep -q "kept .* of 'grace.bin'" "$log2" || fail "what arrived was not kept for a resume"
  rm -rf "$dir2"
  pass "SIGTERM: a transfer under way finished within --grace (exit 0, delivered), one past --grace 1s was stopped (sender exit $rc) and kept for a resume"
}

case_clean_shutdown() {
  local t0=$SECONDS status name known unexpected=()
  daemon_exited recv && fail "rdma-recv had already exited with status $(daemon_status recv)"
  kill -TERM "$recv_pid"
  eventually 10 daemon_exited recv || fail "rdma-recv still running 10 s after SIGTERM"
  status=$(daemon_status recv)
  ((status == 0)) || fail "rdma-recv exited with status $status after SIGTERM, expected 0"
  [[ -z $(temporaries) ]] || fail "temporaries left after shutdown: $(temporaries | tr '\n' ' ')"
  # No process substitution: the guest has no /dev/fd.
  while IFS= read -r name; do
    [[ -n $name ]] || continue
    for known in "${expected_names[@]}"; do [[ $name == "$known" ]] && continue 2; done
    unexpected+=("'$name'")
  done <<<"$(listing)"
  ((${#unexpected[@]} == 0)) || fail "unexpected entries in $out: ${unexpected[*]}"
  pass "SIGTERM: exit 0 after $((SECONDS - t0))s, $out holds only the delivered files"
}

# ---------------------------------------------------------------------------------
# One receiver for all cases
# ---------------------------------------------------------------------------------
(
  umask 077
  printf '%s\n' '# rdmax e2e identities: ID SECRET' 'alice s3cr3t-alice' '' 'bob hunter2' >"$secrets"
)
start_daemon recv "$recv_log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$out" \
  --secrets "$secrets" --max-size 4M --slot-size 64K --slots 4
recv_pid=$daemon_pid
wait_for_line 30 recv "$recv_log" 'listening on'
echo "rdma-recv (pid $recv_pid): $(grep -m1 'listening on' "$recv_log")"

run_case empty-file case_empty_file
run_case one-byte case_one_byte
run_case odd-sizes case_odd_sizes
run_case many-windows case_many_windows
run_case unusual-names case_unusual_names
run_case mode-and-time case_mode_and_time
run_case secret-for-known-id case_secret_for_known_id
run_case unknown-id-denied case_unknown_id_denied
run_case bad-hash case_bad_hash
run_case digest-algorithms case_digest_algorithms
run_case digest-cache case_digest_cache
run_case rejected-requests case_rejected_requests
run_case no-receiver case_no_receiver
run_case still-serving case_still_serving
run_case shutdown-grace case_shutdown_grace
run_case clean-shutdown case_clean_shutdown
report_cases transfer
