#!/usr/bin/env bash
# Fetching (issue 52, docs/PROTOCOL.md 7.13): rdma-send --serve DIR exports a tree, and
# rdma-recv --from fetches from it: a tree with nested and empty directories, modes, times,
# a non-UTF-8 name, an empty file and a sparse file, identical to the source; fetched again,
# nothing moves; the hostile and mistaken requests refused, with the server still serving; a
# file that grows while read abandoned, nothing kept; the server killed halfway and resumed;
# --files-from; a hostile fetcher (rdmax-attacker fetch); --serve --check; -P 3; --metrics;
# the server under a notify socket (Type=notify) and stopped by SIGTERM.
source "$(dirname "$0")/lib.sh"
need_programs send recv attacker

port=18771
recv_port=18772
metrics_port=19471
work=$(mktemp -d "${RXE_SCRATCH:-/tmp}/rdmax-fetch.XXXXXX")
export_dir=$work/export
dest=$work/dest
mkdir -p "$export_dir" "$dest"
# The daemons first (the notify socket's recorder writes into $work while they run).
trap '_cleanup; rm -rf "$work"' EXIT
log=$shared/serve.log
fail_context() {
  echo "--- server log:"
  tail -n 40 "$log"
  echo "--- fetcher:"
  tail -n 40 "$shared/fetch.log" 2>/dev/null
}

# The sparse file's size: 40 MiB in CI (the emulated wire moves ~40 MB/s, holes included);
# RDMAX_FETCH_SPARSE_MIB=3072 with rxe-run --mem 8192 fetches a multi-GiB one.
sparse_mib=${RDMAX_FETCH_SPARSE_MIB:-40}

# Not UTF-8: the protocol carries names as UTF-8 (docs/PROTOCOL.md 7.5), so the server
# leaves it out as a push does, and says so.
odd=caf$(printf '\xe9')

make_export() {
  local t=$export_dir/data
  mkdir -p "$t/nested/deeper" "$t/empty dir" "$t/many"
  head -c $((3 << 20)) /dev/urandom >"$t/nested/three.bin"
  : >"$t/empty file"
  echo "deep" >"$t/nested/deeper/leaf"
  printf 'latin-1\n' >"$t/$odd"
  truncate -s "${sparse_mib}M" "$t/sparse.img"
  printf 'middle' | dd of="$t/sparse.img" bs=1 seek=$((sparse_mib << 19)) conv=notrunc status=none
  printf 'end' | dd of="$t/sparse.img" bs=1 seek=$(((sparse_mib << 20) - 3)) conv=notrunc status=none
  random_files "$t/many" f%03d 40 1 65536
  chmod 0600 "$t/nested/three.bin"
  chmod 0750 "$t/nested/deeper"
  touch -d '2001-02-03 04:05:06.123456789' "$t/empty file" "$t/nested/deeper/leaf"
  touch -d '1999-12-31 23:59:59' "$t/nested" "$t/empty dir"
  ln -s /etc/passwd "$t/a link"
  mkfifo "$t/a fifo"
  echo "not exported" >"$work/outside"
}

# compare SRC DST: same names, kinds, contents, permission bits and modification times.
compare() {
  local a=$1 b=$2
  (cd "$a" && find . ! -type l ! -type p ! -name "$odd" -printf '%y %m %T@ %p\n' | sort) >"$shared/a.list"
  (cd "$b" && find . -printf '%y %m %T@ %p\n' | sort) >"$shared/b.list"
  diff "$shared/a.list" "$shared/b.list" >&2 || return 1
  diff -r --no-dereference -x 'a link' -x 'a fifo' -x "$odd" "$a" "$b" >&2
}

# fetch EXPECTED_STATUS ARGS...: rdma-recv --from with ARGS into $dest, its log in fetch.log.
fetch() {
  local want=$1 rc=0
  shift
  "$recv" --from "$RXE_ADDR:$port" -o "$dest" "$@" >"$shared/fetch.log" 2>&1 || rc=$?
  ((rc == want)) || fail "rdma-recv --from $* exited $rc, not $want: $(tail -3 "$shared/fetch.log")"
}

make_export
# Under systemd (Type=notify, packaging/rdma-send-serve.service.in): READY=1 once it listens,
# STATUS= lines that count what it sent, WATCHDOG=1 pings, STOPPING=1 at SIGTERM (case stop).
notes=$work/notify.log
start_notify_socket "$work/notify.sock" "$notes"
start_daemon serve "$log" env NOTIFY_SOCKET="$work/notify.sock" WATCHDOG_USEC=1000000 \
  "$send" --serve "$export_dir" -p "$port" -v --metrics "127.0.0.1:$metrics_port"
wait_for 20 cm_listening "$port"
grep -q "no keys: any fetcher" "$log" || fail "the server did not say it serves without keys"
wait_for 10 grep -qx 'READY=1' "$notes"
grep -qx 'STATUS=0 connections, 0 B sent, 0 files sent' "$notes" ||
  fail "no first STATUS= line: $(head -n 5 "$notes" | tr '\n' ' ')"

case_tree() {
  fetch 0 -r data
  compare "$export_dir/data" "$dest/data" || fail "the tree differs"
  grep -Eq "fetched 44 file\(s\)" "$shared/fetch.log" || fail "summary: $(grep fetched "$shared/fetch.log")"
  [[ ! -e "$dest/data/a link" && ! -e "$dest/data/a fifo" ]] || fail "a link or a fifo arrived"
  grep -aq "left out '.*caf.*': name cannot be sent" "$log" || fail "the odd name was not reported"
  # The sparse file's holes stay holes where the file system allows it.
  local used
  used=$(du -k "$dest/data/sparse.img" | cut -f1)
  ((used < sparse_mib * 1024)) || echo "note: sparse.img takes ${used} KiB here"
}
run_case tree case_tree

case_again() {
  fetch 0 -r data
  # Not a byte moves: every file is here already (the empty one is made again: it has no
  # bytes to compare).
  grep -Eq "fetched 1 file\(s\), 0 B; 43 already here" "$shared/fetch.log" ||
    fail "fetched again: $(grep fetched "$shared/fetch.log")"
  compare "$export_dir/data" "$dest/data" || fail "the tree differs after the second fetch"
  # A file that changed at the server is fetched again, and only it.
  echo "changed" >"$export_dir/data/nested/deeper/leaf"
  fetch 0 -r data
  grep -Eq "fetched 2 file\(s\), 8 B; 42 already here" "$shared/fetch.log" ||
    fail "one change: $(grep fetched "$shared/fetch.log")"
  compare "$export_dir/data" "$dest/data" || fail "the change did not arrive"
}
run_case again case_again

case_one_file() {
  rm -rf "$dest"/*
  fetch 0 data/nested/three.bin
  cmp "$export_dir/data/nested/three.bin" "$dest/three.bin" || fail "the file differs"
  [[ $(stat -c %a "$dest/three.bin") == 600 ]] || fail "mode $(stat -c %a "$dest/three.bin")"
}
run_case one_file case_one_file

# --files-from LIST -0: each listed name arrives under its path, the directories above it and
# a listed directory (alone) with the server's modes and times, nothing unlisted; fetched
# again, nothing moves. A list that leaves the export is a usage error before connecting; a
# name the server lacks refuses the fetch, naming it.
case_listed() {
  rm -rf "$dest"/*
  printf '%s\0' ./data/nested/deeper/leaf "data/empty dir/" data/many/f001 data//many/f002 . \
    >"$work/list"
  fetch 0 --files-from "$work/list" -0
  local f d
  for f in nested/deeper/leaf many/f001 many/f002; do
    cmp "$export_dir/data/$f" "$dest/data/$f" || fail "data/$f differs"
  done
  [[ -d "$dest/data/empty dir" && -z $(ls -A "$dest/data/empty dir") ]] || fail "the listed directory"
  [[ $(cd "$dest" && find . -type f | wc -l) == 3 ]] || fail "unlisted files arrived: $(cd "$dest" && find . -type f)"
  for d in data data/nested data/nested/deeper "data/empty dir" data/many; do
    [[ $(stat -c '%a %Y' "$export_dir/$d") == $(stat -c '%a %Y' "$dest/$d") ]] ||
      fail "$d: $(stat -c '%a %Y' "$dest/$d") here, $(stat -c '%a %Y' "$export_dir/$d") there"
  done
  fetch 0 --files-from "$work/list" -0
  grep -Eq "fetched 0 file\(s\), 0 B; 3 already here" "$shared/fetch.log" ||
    fail "fetched again: $(grep fetched "$shared/fetch.log")"
  printf 'data/many/f001\n../outside\n' >"$work/bad.list"
  fetch 2 --files-from - <"$work/bad.list"
  grep -q "entry 2 '../outside' holds a \"..\" component" "$shared/fetch.log" ||
    fail "a list leaving the export: $(tail -2 "$shared/fetch.log")"
  fetch 2 --files-from "$work/list" -0 -r
  printf 'data/many/f001\ndata/many/none\n' >"$work/missing.list"
  fetch 4 --files-from "$work/missing.list"
  grep -q "data/many/none.*no such file" "$shared/fetch.log" ||
    fail "a missing name: $(tail -2 "$shared/fetch.log")"
}
run_case listed case_listed

# -P 3: three connections, each fetching its part of the tree (PROTOCOL.md 7.13, 0x8008); the
# directories' modes and times, set once all three are done, are the source's.
case_parallel() {
  rm -rf "$dest"/*
  local rc=0
  "$recv" --from "$RXE_ADDR:$port" -o "$dest" -r -P 3 --json-lines data >"$shared/fetch.jsonl" \
    2>"$shared/fetch.log" || rc=$?
  ((rc == 0)) || fail "rdma-recv --from -P 3 exited $rc: $(tail -3 "$shared/fetch.log")"
  compare "$export_dir/data" "$dest/data" || fail "the tree differs"
  grep -Eq "fetched 44 file\(s\)" "$shared/fetch.log" || fail "summary: $(grep fetched "$shared/fetch.log")"
  # --json-lines: stdout is JSON only, an entry per file and directory (each once), then the
  # summary.
  local entries dirs
  entries=$(jq -r 'select(.entry) | .entry.name' "$shared/fetch.jsonl" | sort | uniq | wc -l)
  dirs=$(cd "$export_dir" && find data -type d | wc -l)
  ((entries == 44 + dirs)) || fail "--json-lines listed $entries entries, not $((44 + dirs))"
  jq -e -s 'map(select(.summary)) | .[0].summary | .exit_code == 0 and .connections == 3 and
    .good == .files + .directories and .files == 44 and .bytes_received == .bytes' \
    "$shared/fetch.jsonl" >/dev/null || fail "the summary line: $(tail -n 1 "$shared/fetch.jsonl")"
  local served
  served=$(grep -c "fetch: share 1/1, part [123]/3" "$log" || true)
  ((served == 3)) || fail "the server did not serve three parts ($served)"
}
run_case parallel case_parallel

# Four fetchers, each its own share of one request (the server cuts them): every file once,
# whatever -P each gives (its connections fetch parts of its share).
case_shards() {
  local i rc
  for i in 0 1 2 3; do
    rm -rf "$work/share$i" && mkdir -p "$work/share$i"
    rc=0
    if ((i == 3)); then  # auto: as Slurm would start it
      SLURM_PROCID=3 SLURM_NTASKS=4 "$recv" --from "$RXE_ADDR:$port" -o "$work/share$i" -r \
        --shard auto -P 3 data >"$shared/fetch$i.log" 2>&1 || rc=$?
    elif ((i == 1)); then
      "$recv" --from "$RXE_ADDR:$port" -o "$work/share$i" -r --shard "$i/4" -P 2 data \
        >"$shared/fetch$i.log" 2>&1 || rc=$?
    else
      "$recv" --from "$RXE_ADDR:$port" -o "$work/share$i" -r --shard "$i/4" data \
        >"$shared/fetch$i.log" 2>&1 || rc=$?
    fi
    ((rc == 0)) || fail "share $i/4 exited $rc: $(tail -3 "$shared/fetch$i.log")"
  done
  (for i in 0 1 2 3; do (cd "$work/share$i" && find . -type f); done) | sort >"$shared/shares.list"
  (cd "$export_dir" && find data -type f ! -name "$odd" | sed 's|^|./|') | sort >"$shared/all.list"
  diff "$shared/all.list" "$shared/shares.list" >&2 || fail "the shares are not each file once"
  for i in 0 1 2 3; do
    [[ -n $(find "$work/share$i" -type f) ]] || fail "share $i fetched no file"
  done
}
run_case shards case_shards

# Each refused before anything is written, and the server serves the next fetcher.
case_refused() {
  rm -rf "$dest"/*
  fetch 4 -r no/such/thing
  grep -q "refused the fetch: .*no/such/thing" "$shared/fetch.log" || fail "missing: $(tail -2 "$shared/fetch.log")"
  fetch 4 ../outside
  fetch 4 /etc/passwd
  fetch 4 "data/a link"
  grep -q "refused" "$shared/fetch.log" || fail "a link: $(tail -2 "$shared/fetch.log")"
  fetch 4 "data/a fifo"
  fetch 4 data/nested
  grep -q "recursive\|-r" "$shared/fetch.log" || fail "a directory without -r: $(tail -2 "$shared/fetch.log")"
  [[ -z $(ls -A "$dest") ]] || fail "something was written: $(ls -A "$dest")"
  fetch 0 data/nested/deeper/leaf
  [[ -s $dest/leaf ]] || fail "the server did not serve after the refusals"
}
run_case refused case_refused

# A fetcher that is not ours (rdmax-attacker fetch, raw messages): every name outside the
# export or not served gets Reject(BadName), every message out of place
# Error(ProtocolViolation), each with a disconnect; one leaves mid-file. The server serves the
# next fetcher, and nothing outside the export changed.
case_hostile() {
  rm -rf "$dest"/*
  local rc=0 attempts
  "$attacker" fetch -H "$RXE_ADDR" -p "$port" --receiver-timeout 30 >"$shared/hostile.log" 2>&1 || rc=$?
  cat "$shared/hostile.log"
  ((rc == 0)) || fail "rdmax-attacker fetch exited $rc"
  attempts=$(grep -c "^hostile fetch/.*: ok" "$shared/hostile.log" || true)
  ((attempts == 21)) || fail "$attempts of 21 attempts answered as they must"
  [[ $(cat "$work/outside") == "not exported" ]] || fail "the file outside the export changed"
  fetch 0 data/many/f001
  cmp "$export_dir/data/many/f001" "$dest/f001" || fail "the server did not serve after the attacks"
}
run_case hostile case_hostile

# Each program tells the other role where to go: a push to the server, a fetch from a
# receiver.
case_roles() {
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" "$work/outside" >"$shared/push.log" 2>&1 || rc=$?
  ((rc != 0)) || fail "a push to the server succeeded"
  grep -q "fetch server" "$shared/push.log" || fail "the push was not told: $(tail -3 "$shared/push.log")"
  mkdir -p "$work/pushed"
  start_daemon recv "$shared/recv.log" "$recv" --port "$recv_port" --dir "$work/pushed"
  wait_for 20 cm_listening "$recv_port"
  rc=0
  "$recv" --from "$RXE_ADDR:$recv_port" -o "$dest" data >"$shared/fetch.log" 2>&1 || rc=$?
  ((rc == 1)) || fail "a fetch from a receiver exited $rc"
  grep -q "not a fetch server" "$shared/fetch.log" || fail "not told: $(tail -3 "$shared/fetch.log")"
  kill "$daemon_pid"
  wait_for 10 daemon_exited recv
}
run_case roles case_roles

# The server killed halfway (kill -9): the fetch exits 3 and keeps what arrived; a server
# started again, the same fetch completes and only the rest moves.
case_killed() {
  local slow_port=18774
  head -c $((24 << 20)) /dev/urandom >"$export_dir/big.bin"
  rm -rf "$dest"/*
  start_daemon slow "$shared/slow.log" "$send" --serve "$export_dir" -p "$slow_port" --bwlimit 4M
  wait_for 20 cm_listening "$slow_port"
  local rc=0
  "$recv" --from "$RXE_ADDR:$slow_port" -o "$dest" big.bin >"$shared/fetch.log" 2>&1 &
  local fetcher=$!
  # At 4 MiB/s the file takes 6 s: killed 2 s after it started, most of it is still to come.
  wait_for 30 grep -q "receiving 'big.bin'" "$shared/fetch.log"
  sleep 2
  kill -KILL "$daemon_pid"
  wait "$fetcher" || rc=$?
  ((rc == 3)) || fail "the fetch from a killed server exited $rc: $(tail -3 "$shared/fetch.log")"
  [[ ! -e $dest/big.bin ]] || fail "a half file appeared under its name"
  start_daemon slow2 "$shared/slow2.log" "$send" --serve "$export_dir" -p "$slow_port"
  wait_for 20 cm_listening "$slow_port"
  rc=0
  "$recv" --from "$RXE_ADDR:$slow_port" -o "$dest" big.bin >"$shared/fetch.log" 2>&1 || rc=$?
  ((rc == 0)) || fail "the fetch run again exited $rc: $(tail -3 "$shared/fetch.log")"
  cmp "$export_dir/big.bin" "$dest/big.bin" || fail "big.bin differs"
  local moved
  moved=$(grep -o 'fetched 1 file(s), [0-9.]* MiB' "$shared/fetch.log" | grep -o '[0-9.]* MiB' | cut -d' ' -f1)
  [[ -n $moved ]] || fail "no summary: $(grep fetched "$shared/fetch.log")"
  awk -v m="$moved" 'BEGIN { exit !(m < 23) }' || fail "the whole file moved again ($moved MiB)"
  grep -q "resuming .big.bin. (24.0 MiB) at" "$shared/fetch.log" || fail "not resumed: $(grep big.bin "$shared/fetch.log" | tail -2)"
  kill "$daemon_pid"
  wait_for 10 daemon_exited slow2
  rm -f "$export_dir/big.bin" "$dest/big.bin"
}
run_case killed case_killed

# A file that grows while the server reads it (a log being written, or a hostile export): the
# server abandons it (FileAbort, Changed), the fetcher keeps nothing under its name and says
# why, exits non-zero; once the file is still, the same fetch brings it.
case_growing() {
  local grow_port=18776
  head -c $((12 << 20)) /dev/urandom >"$export_dir/growing.log"
  rm -rf "$dest"/*
  start_daemon grow "$shared/grow.log" "$send" --serve "$export_dir" -p "$grow_port" --bwlimit 4M
  wait_for 20 cm_listening "$grow_port"
  local rc=0
  "$recv" --from "$RXE_ADDR:$grow_port" -o "$dest" growing.log >"$shared/fetch.log" 2>&1 &
  local fetcher=$!
  wait_for 30 grep -q "receiving 'growing.log'" "$shared/fetch.log"
  local i
  for i in $(seq 1 10); do
    head -c 4096 /dev/urandom >>"$export_dir/growing.log"
    sleep 0.2
  done
  wait "$fetcher" || rc=$?
  local grown_rc=$rc
  ((rc != 0)) || fail "a fetch of a file that grew while it was read exited 0"
  grep -q "the sender abandoned 'growing.log': it changed while it was read" "$shared/fetch.log" ||
    fail "the fetcher did not say why: $(grep growing "$shared/fetch.log" | tail -3)"
  [[ ! -e $dest/growing.log ]] || fail "a file that changed while read arrived under its name"
  rc=0
  "$recv" --from "$RXE_ADDR:$grow_port" -o "$dest" growing.log >"$shared/fetch.log" 2>&1 || rc=$?
  ((rc == 0)) || fail "the fetch of the still file exited $rc: $(tail -3 "$shared/fetch.log")"
  cmp "$export_dir/growing.log" "$dest/growing.log" || fail "growing.log differs"
  kill "$daemon_pid"
  wait_for 10 daemon_exited grow
  rm -f "$export_dir/growing.log" "$dest/growing.log"
  pass "growing: abandoned while it grew (exit $grown_rc, nothing kept), fetched whole once still"
}
run_case growing case_growing

# --serve --check: what the server needs, one line each, nothing served.
case_check() {
  local rc=0
  "$send" --serve "$export_dir" -p 18775 --check >"$shared/check.out" 2>&1 || rc=$?
  ((rc == 0)) || fail "--serve --check exited $rc: $(cat "$shared/check.out")"
  grep -q '^ok   listen on 0.0.0.0 port 18775: the port is free' "$shared/check.out" &&
    grep -q '^ok   export .*: a directory this user can open' "$shared/check.out" &&
    grep -q '^ok   readers file: none' "$shared/check.out" ||
    fail "--serve --check said: $(cat "$shared/check.out")"
  rc=0
  "$send" --serve "$work/no-such-dir" -p "$port" --check --metrics "127.0.0.1:$metrics_port" \
    >"$shared/check.out" 2>&1 || rc=$?
  ((rc == 1)) || fail "--serve --check of a busy port and a missing DIR exited $rc"
  grep -q "^FAIL metrics on http://127.0.0.1:$metrics_port/metrics: the port is in use" "$shared/check.out" ||
    fail "--serve --check with the metrics port in use said: $(grep metrics "$shared/check.out")"
  # (rxe answers a second wildcard bind of a port with EADDRNOTAVAIL, not EADDRINUSE.)
  grep -q "^FAIL listen on 0.0.0.0 port $port: " "$shared/check.out" &&
    grep -q '^FAIL export .*no-such-dir: No such file or directory' "$shared/check.out" ||
    fail "--serve --check said: $(cat "$shared/check.out")"
  cm_listening "$port" || fail "--check disturbed the server"
}
run_case check case_check

# --deny: refused in the connection manager, with the server's words.
case_denied() {
  local denied_port=18773
  start_daemon denied "$shared/denied.log" "$send" --serve "$export_dir" -p "$denied_port" \
    --deny "$RXE_ADDR"
  wait_for 20 cm_listening "$denied_port"
  local rc=0
  "$recv" --from "$RXE_ADDR:$denied_port" -o "$dest" data/empty >"$shared/fetch.log" 2>&1 || rc=$?
  ((rc == 3)) || fail "a denied fetch exited $rc"
  grep -q "may not fetch" "$shared/fetch.log" || fail "not told: $(tail -3 "$shared/fetch.log")"
  grep -q "refused a connection from $RXE_ADDR" "$shared/denied.log" || fail "not logged"
  kill "$daemon_pid"
  wait_for 10 daemon_exited denied
}
run_case denied case_denied

# --metrics: the server's page counts what it sent and what it refused (each second), in the
# text format promtool accepts.
case_metrics() {
  rm -rf "$dest"/*
  fetch 4 ../outside
  fetch 0 data/nested/three.bin
  page() { curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$shared/serve-metrics.txt"; }
  counted() {
    page && awk -v name="$1" -v least="$2" '$1 == name && $2 >= least { found = 1 } END { exit !found }' \
      "$shared/serve-metrics.txt"
  }
  eventually 10 counted 'rdmax_serve_requests_refused_total{reason="bad_name"}' 1 ||
    fail "no refusal counted: $(grep refused "$shared/serve-metrics.txt")"
  eventually 10 counted rdmax_serve_sent_bytes_total $((3 << 20)) ||
    fail "the bytes sent: $(grep sent_bytes "$shared/serve-metrics.txt")"
  counted rdmax_serve_files_sent_total 1 || fail "the files sent: $(grep files_sent "$shared/serve-metrics.txt")"
  counted rdmax_serve_connections_accepted_total 2 || fail "$(grep accepted "$shared/serve-metrics.txt")"
  if command -v promtool >/dev/null; then
    promtool check metrics <"$shared/serve-metrics.txt" >"$shared/promtool.out" 2>&1 ||
      fail "promtool check metrics: $(cat "$shared/promtool.out")"
  fi
  grep -q "metrics on http://127.0.0.1:$metrics_port/metrics" "$log" || fail "the metrics address is not logged"
}
run_case metrics case_metrics

case_stop() {
  grep -qE '^STATUS=0 connections, [0-9.]+ MiB sent, [0-9]+ files sent$' "$notes" ||
    fail "no STATUS= line counting what was sent: $(grep STATUS= "$notes" | tail -n 3 | tr '\n' ' ')"
  grep -qx 'WATCHDOG=1' "$notes" || fail "no WATCHDOG=1 ping"
  kill -TERM "$(cat "$shared/daemon.serve/pid")"
  wait_for 10 daemon_exited serve
  [[ $(daemon_status serve) == 0 ]] || fail "the server exited $(daemon_status serve) on SIGTERM"
  eventually 5 grep -qx 'STOPPING=1' "$notes" || fail "no STOPPING=1"
  pass "stop: SIGTERM, exit 0; sd_notify READY=1, $(grep STATUS= "$notes" | tail -n 2 | head -n 1), WATCHDOG=1, STOPPING=1"
}
run_case stop case_stop

report_cases fetch
