#!/usr/bin/env bash
# Directories and many files in one command (issue 13): rdma-send -r over version-2
# sessions, with -P, compared with the source (content, modes, times); per-file outcomes
# and the exit status of a mixed run.
source "$(dirname "$0")/lib.sh"
need_programs send recv

port=18761
# Local to the guest (tmpfs): its 9p share of the host cannot hold a fifo.
work=$(mktemp -d "${RXE_SCRATCH:-/tmp}/rdmax-tree.XXXXXX")
out=$work/out
src=$work/src
mkdir -p "$out" "$src"
trap 'rm -rf "$work"; _cleanup' EXIT
log=$shared/recv.log
fail_context() { echo "--- receiver log:"; tail -n 40 "$log"; echo "--- sender:"; cat "$shared/send.log" 2>/dev/null | tail -n 40; }

start_daemon recv "$log" "$recv" --port "$port" --dir "$out" -v
wait_for 20 cm_listening "$port"

# The tree: nested directories, names with spaces and non-ASCII characters, empty files
# and directories, a 40 MiB file, 1000 small files, modes and times of their own.
make_tree() {
  local t=$src/data
  mkdir -p "$t/nested/deeper/deepest" "$t/empty dir" "$t/ünïcödé 日本" "$t/many"
  head -c $((40 << 20)) /dev/urandom >"$t/nested/large.bin"
  : >"$t/empty file"
  echo "hello" >"$t/ünïcödé 日本/grüße.txt"
  echo "deep" >"$t/nested/deeper/deepest/leaf"
  random_files "$t/many" f%04d 1000 4096 4096
  chmod 0600 "$t/nested/large.bin"
  chmod 0750 "$t/nested/deeper"
  chmod 0755 "$t/ünïcödé 日本/grüße.txt"
  touch -d '2001-02-03 04:05:06.123456789' "$t/empty file" "$t/nested/deeper/deepest/leaf"
  touch -d '1999-12-31 23:59:59' "$t/nested" "$t/empty dir"
  ln -s /etc/passwd "$t/a link"
  mkfifo "$t/a fifo"
}

# compare SRC DST: same names, kinds, contents, permission bits and modification times.
compare() {
  local a=$1 b=$2
  (cd "$a" && find . ! -type l ! -type p -printf '%y %m %T@ %p\n' | sort) >"$shared/a.list"
  (cd "$b" && find . -printf '%y %m %T@ %p\n' | sort) >"$shared/b.list"
  diff "$shared/a.list" "$shared/b.list" >&2 || return 1
  diff -r --no-dereference -x 'a link' -x 'a fifo' "$a" "$b" >&2
}

case_tree() {
  make_tree
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -r "$src/data" >"$shared/send.log" 2>&1 || rc=$?
  ((rc == 0)) || fail "rdma-send -r exited $rc"
  compare "$src/data" "$out/data" || fail "the tree differs"
  grep -q "skipping '.*a link': symbolic link" "$shared/send.log" || fail "no warning for the link"
  grep -q "skipping '.*a fifo': special file" "$shared/send.log" || fail "no warning for the fifo"
  grep -Eq "1004 files and 7 directories: 1011 good, 0 failed, 0 not sent; .*; 2 left out" "$shared/send.log" ||
    fail "summary: $(grep directories "$shared/send.log")"
  [[ ! -e "$out/data/a link" ]] || fail "the link arrived"
}
run_case tree case_tree

case_parallel() {
  rm -rf "$out/data"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -r -P 3 --json "$src/data" >"$shared/send.json" 2>"$shared/send.log" || rc=$?
  ((rc == 0)) || fail "rdma-send -r -P 3 exited $rc"
  compare "$src/data" "$out/data" || fail "the tree differs with -P 3"
  grep -q '"good":1011' "$shared/send.json" || fail "--json: $(head -c 300 "$shared/send.json")"
  # That was BLAKE3 (the default), each file's digest at its end, verified by the receiver as
  # it stores.
  grep -q 'the receiver does not take BLAKE3' "$shared/send.log" && fail "BLAKE3 was refused"
  # Again, over two connections: every file is there already (the receiver's records and our
  # digest cache are BLAKE3's now): nothing moves.
  "$send" -H "$RXE_ADDR" -p "$port" -r -P 2 --digest blake3 --json "$src/data" \
    >"$shared/send-b3.json" 2>"$shared/send-b3.log" || fail "the BLAKE3 re-run failed: $(tail -3 "$shared/send-b3.log")"
  grep -q '"identical":1004[,}]' "$shared/send-b3.json" ||
    fail "the BLAKE3 re-run did not skip every file: $(grep -o '"identical":[0-9]*' "$shared/send-b3.json" | tail -1)"
  grep -q '"bytes_sent":0[,}]' "$shared/send-b3.json" ||
    fail "the BLAKE3 re-run moved data: $(grep -o '"bytes_sent":[0-9]*' "$shared/send-b3.json")"
}
run_case parallel case_parallel

# Issue 22: an ordinary user at the usual 8 MiB memlock limit (ulimit -l 8192) sends a tree,
# and with -P 2, to a default receiver (16 slots of 1 MiB). Each connection pins its control
# buffers and a staging buffer of what fits besides them: 7 slots for one connection, 3 on
# each of two, said in one line; everything arrives. --check under that limit predicts it.
# Below one slot (1 MiB) the command fails with the remedy.
# as_user_at KIB PROGRAM ARGS...: as an ordinary user (nobody, when run as root) whose
# RLIMIT_MEMLOCK is KIB.
as_user_at() {
  local kib=$1 as=()
  shift
  ((EUID != 0)) || as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  # shellcheck disable=SC2016 # expanded by the inner shell
  "${as[@]}" bash -c 'ulimit -l "$0" && exec "$@"' "$kib" "$@"
}
case_memlock_8m() {
  local t=$work/memlock rc=0 said
  mkdir -p "$t/sub"
  for i in 1 2 3; do head -c $((12 << 20)) /dev/urandom >"$t/sub/big$i"; done
  for i in 1 2 3 4 5; do echo "small $i" >"$t/s$i"; done
  chmod 755 "$work" && chmod -R a+rX "$t"
  rm -rf "$out/memlock"
  as_user_at 8192 "$send" -H "$RXE_ADDR" -p "$port" -r --no-digest-cache "$t" \
    >"$shared/send.log" 2>&1 || rc=$?
  ((rc == 0)) || fail "a tree at ulimit -l 8192 exited $rc"
  compare "$t" "$out/memlock" || fail "the tree differs at ulimit -l 8192"
  said=$(grep -c "RLIMIT_MEMLOCK 8.0 MiB holds 7 of the 16 slots of 1.0 MiB" "$shared/send.log" || true)
  ((said == 1)) || fail "the reduction was said $said times, not once"
  grep -q "ulimit -l 17184" "$shared/send.log" || fail "no remedy with the figure"
  rm -rf "$out/memlock"
  rc=0
  as_user_at 8192 "$send" -H "$RXE_ADDR" -p "$port" -r -P 2 --no-digest-cache "$t" \
    >"$shared/send.log" 2>&1 || rc=$?
  ((rc == 0)) || fail "a tree over -P 2 at ulimit -l 8192 exited $rc"
  compare "$t" "$out/memlock" || fail "the tree differs over -P 2 at ulimit -l 8192"
  said=$(grep -c "RLIMIT_MEMLOCK" "$shared/send.log" || true)
  ((said == 1)) || fail "-P 2: the limit was named $said times, not once"
  grep -q "holds 3 of the 16 slots of 1.0 MiB in flight the receiver grants on each of 2 connections" \
    "$shared/send.log" || fail "-P 2: $(grep RLIMIT_MEMLOCK "$shared/send.log")"
  rc=0
  as_user_at 8192 "$send" --check -H "$RXE_ADDR" -p "$port" -r >"$shared/check.out" 2>&1 || rc=$?
  ((rc == 0)) || fail "--check -r at ulimit -l 8192 exited $rc: $(cat "$shared/check.out")"
  grep -Eq '^ok   locked memory: RLIMIT_MEMLOCK 8\.0 MiB is below the 16\.8 MiB .*7 of 16 slots in flight .*ulimit -l 17184' \
    "$shared/check.out" || fail "--check -r: $(grep locked "$shared/check.out")"
  as_user_at 8192 "$send" --check -H "$RXE_ADDR" -p "$port" -r -P 2 >"$shared/check.out" 2>&1 || rc=$?
  ((rc == 0)) || fail "--check -r -P 2 at ulimit -l 8192 exited $rc"
  grep -Eq '^ok   locked memory: .*2 connections.*3 of 16 slots in flight' "$shared/check.out" ||
    fail "--check -r -P 2: $(grep locked "$shared/check.out")"
  rm -rf "$out/memlock"
  # Below one slot (ulimit -l 1024: the control buffers and one 1.0 MiB slot are 1.8 MiB):
  # the command stops before any data, says why once, with the remedy, exit status 1.
  rc=0
  as_user_at 1024 "$send" -H "$RXE_ADDR" -p "$port" -r -P 2 --no-digest-cache "$t" \
    >"$shared/send.log" 2>&1 || rc=$?
  ((rc == 1)) || fail "a tree at ulimit -l 1024 exited $rc, not 1"
  said=$(grep -c "RLIMIT_MEMLOCK 1.0 MiB cannot hold a connection with one 1.0 MiB slot" "$shared/send.log" || true)
  ((said == 1)) || fail "ulimit -l 1024: said $said times: $(grep RLIMIT "$shared/send.log")"
  grep -q "ulimit -l unlimited" "$shared/send.log" || fail "ulimit -l 1024: no remedy"
  [[ -z $(find "$out/memlock" -type f 2>/dev/null) ]] || fail "ulimit -l 1024: files arrived"
  rc=0
  as_user_at 1024 "$send" --check -H "$RXE_ADDR" -p "$port" -r >"$shared/check.out" 2>&1 || rc=$?
  ((rc == 1)) || fail "--check at ulimit -l 1024 exited $rc"
  grep -Eq '^FAIL locked memory: RLIMIT_MEMLOCK 1\.0 MiB cannot hold one 1\.0 MiB slot.*: .*ulimit -l unlimited' \
    "$shared/check.out" || fail "--check at ulimit -l 1024: $(grep locked "$shared/check.out")"
  pass "as uid 65534 at ulimit -l 8192: a tree (7 of 16 slots) and -P 2 (3 each) arrived identical, the limit named once; --check predicted both; at ulimit -l 1024 exit 1 with the remedy, said once, and --check FAIL"
}
run_case memlock-8m case_memlock_8m

# -d DEV1,DEV2: the connections spread over the listed devices, each connecting from its
# device's address (the test bed has one device, so both connections name it); an empty
# name in the list is a usage error. (Forty files: enough for both connections to carry
# some; the thousand of the tree above add only time here.)
# make_few: forty of the tree's small files in $src/few.
make_few() {
  [[ -d $src/few ]] && return 0
  [[ -d $src/data ]] || make_tree
  mkdir -p "$src/few"
  cp -p "$src"/data/many/f00[0-3]? "$src/few/"
}
case_devices() {
  local few=$src/few
  make_few
  rm -rf "$out/few" "$out/deeper"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -r -P 2 -d "$RXE_DEV,$RXE_DEV" -v "$few" \
    "$src/data/nested/deeper" >"$shared/send.log" 2>&1 || rc=$?
  ((rc == 0)) || fail "rdma-send -P 2 -d $RXE_DEV,$RXE_DEV exited $rc"
  diff -r "$few" "$out/few" >&2 || fail "few/ differs"
  diff -r "$src/data/nested/deeper" "$out/deeper" >&2 || fail "deeper/ differs"
  rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -r -d "$RXE_DEV,,$RXE_DEV" "$few" \
    2>"$shared/err" || rc=$?
  ((rc == 2)) || fail "-d with an empty device name exited $rc"
  grep -q "empty device name" "$shared/err" || fail "the error: $(cat "$shared/err")"
  rm -rf "$out/few" "$out/deeper"
}
run_case devices case_devices

case_mixed() {
  # Some files exist already: each is refused (Exists), the others arrive; exit status 4.
  make_few
  rm -rf "$out/few"
  mkdir -p "$out/few"
  echo old >"$out/few/f0001"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -r --json "$src/few" >"$shared/send.json" 2>"$shared/send.log" || rc=$?
  ((rc == 4)) || fail "a run with a refused file exited $rc, not 4"
  [[ $(cat "$out/few/f0001") == old ]] || fail "an existing file was overwritten"
  cmp -s "$src/few/f0002" "$out/few/f0002" || fail "the other files did not arrive"
  grep -q '"failed":1' "$shared/send.json" || fail "--json: failed count"
  grep -q 'f0001.*refused by the receiver (Exists' "$shared/send.log" || fail "no refusal reported"
}
run_case mixed case_mixed

# --bwlimit holds for the command as a whole: two connections share one bucket, so a tree
# of 10 MiB in 8 files over -P 2 at 2M (2 MiB/s) takes 5 s of data phase: within 2% of the
# rate and never above it, as for one file (issue 20).
case_bwlimit() {
  local limit=$((2 << 20)) rate rc=0
  mkdir -p "$src/limited"
  for i in 1 2 3 4 5 6 7 8; do head -c $((1280 << 10)) /dev/urandom >"$src/limited/f$i"; done
  rm -rf "$out/limited"
  "$send" -H "$RXE_ADDR" -p "$port" -r -P 2 --bwlimit 2M --json "$src/limited" \
    >"$shared/send.json" 2>"$shared/send.log" || rc=$?
  ((rc == 0)) || fail "rdma-send -r -P 2 --bwlimit 2M exited $rc"
  diff -r "$src/limited" "$out/limited" >&2 || fail "the limited tree differs"
  rate=$(grep -o '"data_bytes_per_second":[0-9.e+]*' "$shared/send.json" | cut -d: -f2)
  [[ -n $rate ]] || fail "no data rate in the JSON: $(head -c 300 "$shared/send.json")"
  awk -v r="$rate" -v l=$limit 'BEGIN { exit !(r <= l * 1.001 && r >= l * 0.98) }' ||
    fail "10 MiB over -P 2 at --bwlimit 2M ran at $rate B/s, not within 2% under the limit"
  pass "--bwlimit 2M over -P 2, 10 MiB in 8 files: $(awk -v r="$rate" -v l=$limit 'BEGIN { printf "%.0f B/s, %+.2f%% from the limit", r, (r - l) * 100 / l }')"
}
run_case bwlimit case_bwlimit

# Two of resume/sub's files have their verdict, and a third, not yet good, has bytes durable
# on the receiver, at most half of it: so that the kill lands with most of that file still to
# come. (Any durable point was once the test: a file found 5 of 8 MiB durable finished in the
# second the check and the kill took, nothing was kept, and the re-run had nothing to resume.)
# One awk over the log, the file's latest durable point counting.
two_good_one_under_way() {
  awk -v half=$((4 << 20)) -F"'" '
    /partial .resume\/sub\/f[0-9].: [0-9]+ bytes durable/ { durable[$2] = substr($3, 3) + 0 }
    /.resume\/sub\/f[0-9].: .*verdict Good/ { good[$2] = 1 }
    END {
      for (f in good) goods++
      if (goods < 2) exit 1
      for (f in durable) if (!(f in good) && durable[f] > 0 && durable[f] <= half) exit 0
      exit 1
    }' "$log"
}

# Issue 14: a tree transfer interrupted (the sender killed) and the same command again:
# the files committed before are skipped as identical (nothing of them moves), the file
# that was under way resumes, and the rest completes.
case_tree_resume() {
  local t=$src/resume rc=0 skipped
  mkdir -p "$t/sub"
  for i in 1 2 3 4 5 6; do head -c $((8 << 20)) /dev/urandom >"$t/sub/f$i"; done
  rm -rf "$out/resume"
  # 4 MB/s: a file takes 2 s, and the receiver makes a file's bytes durable once a second,
  # so the kill below lands while the file with a durable point is still under way. (At
  # 16 MB/s a file took 0.6-1 s: killed after two verdicts, the file under way had no
  # durable point yet, nothing was kept, and nothing could be resumed.)
  "$send" -H "$RXE_ADDR" -p "$port" -r --bwlimit 4M "$t" >"$shared/first.log" 2>&1 &
  local pid=$!
  wait_for 60 two_good_one_under_way
  # Interrupted (issue 22): it says so, says that the same command continues, and counts
  # what it did not send as not sent, not as failed.
  kill -TERM "$pid"  # (a script's background job ignores SIGINT, and so does rdma-send then)
  wait "$pid" 2>/dev/null || true
  grep -q "interrupted by signal 15: stopping. Run the same command again to continue" "$shared/first.log" ||
    fail "the interrupted run did not say how to continue: $(tail -n 3 "$shared/first.log")"
  grep -Eq "[2-9] good, 0 failed, [1-9][0-9]* not sent" "$shared/first.log" ||
    fail "the interrupted run's summary: $(grep directories "$shared/first.log")"
  "$send" -H "$RXE_ADDR" -p "$port" -r --json "$t" >"$shared/resume.json" 2>"$shared/send.log" || rc=$?
  ((rc == 0)) || fail "the re-run exited $rc: $(tail -n 5 "$shared/send.log")"
  compare "$t" "$out/resume" || fail "the tree differs after the re-run"
  skipped=$(grep -o '"status":"identical"' "$shared/resume.json" | wc -l)
  ((skipped >= 2)) || fail "the re-run skipped $skipped files: $(head -c 600 "$shared/resume.json")"
  grep -q '"resumed_from":[1-9]' "$shared/resume.json" ||
    fail "no file resumed: $(head -c 600 "$shared/resume.json")"
  pass "tree interrupted after $skipped of 6 files: the re-run skipped them as identical, resumed the one under way, completed the rest; the tree is identical"
}
run_case tree-resume case_tree_resume

# Issue 25, the digest at the end (docs/PROTOCOL.md 7.9, the default): files the digest cache
# does not know are hashed as they are sent, so each byte is read once: no hashing pass (the
# --digest-first run hashes through a mapping, then reads to send), and the sender's read(2) counter (rchar of a
# shell that reaped it) is the bytes sent. (Bytes read from a disk, with the page cache too
# small to hold the data, are issue 25's benchmark, on a virtio disk.) Then: a
# second send is skipped as identical (the digests were learned); an interrupted first send
# resumes from the receiver's partial once the sender has checked its prefix (Holds,
# Continue); a file written while it is sent is abandoned and nothing of it is kept.
rchar_of() { # rchar_of OUT CMD...: runs CMD (output to OUT), prints its rchar; 0 if it failed
  sh -c '"$@" >"$0" 2>&1 && sed -n "s/^rchar: //p" /proc/$$/io || echo 0' "$@"
}
case_digest_at_end() {
  local size=$((12 << 20)) first second rc=0
  for d in first second third fourth; do
    mkdir -p "$src/at-end/$d"
    head -c "$size" /dev/urandom >"$src/at-end/$d/big"
    head -c 100000 /dev/urandom >"$src/at-end/$d/small"
  done
  rm -rf "$out/first" "$out/second" "$out/third" "$out/fourth"
  first=$(XDG_CACHE_HOME=$work/cache1 rchar_of "$shared/send.log" \
    "$send" -H "$RXE_ADDR" -p "$port" -r --digest-first "$src/at-end/first")
  second=$(XDG_CACHE_HOME=$work/cache2 rchar_of "$shared/send2.log" \
    "$send" -H "$RXE_ADDR" -p "$port" -r "$src/at-end/second")
  ((first > 0 && second > 0)) || fail "a send failed: $(tail -n 5 "$shared/send.log" "$shared/send2.log")"
  compare "$src/at-end/first" "$out/first" || fail "the digests-first tree differs"
  compare "$src/at-end/second" "$out/second" || fail "the digest-at-end tree differs"
  local bytes=$((size + 100000))
  # Digests first: a hashing pass, then the send; at the end: the send's reads only.
  grep -q "hashed in" "$shared/send.log" || fail "the digests-first run had no hashing pass"
  ! grep -q "hashed in" "$shared/send2.log" || fail "the default (digest at the end) hashed before sending"
  ((first * 100 >= bytes * 95)) || fail "digests first read(2) $first bytes of $bytes sent"
  ((second * 100 >= bytes * 95 && second * 100 <= bytes * 115)) ||
    fail "--digest-at-end read(2) $second bytes for $bytes sent: expected about 1x"
  ! grep -q "checking ours" "$shared/send2.log" || fail "a first send was asked about held files"
  # Again: the digests were learned as the files were sent, so both are skipped, unread.
  XDG_CACHE_HOME=$work/cache2 "$send" -H "$RXE_ADDR" -p "$port" -r --digest-at-end --json \
    "$src/at-end/second" >"$shared/again.json" 2>"$shared/send.log" || fail "the second send failed"
  (($(grep -o '"status":"identical"' "$shared/again.json" | wc -l) == 2)) ||
    fail "the second send skipped fewer than 2 files: $(head -c 400 "$shared/again.json")"
  # Interrupted after a durable checkpoint, then again with nothing in the digest cache; with
  # BLAKE3 (its partial keeps BLAKE3's nodes; tree-resume above resumes fs-verity's).
  "$send" -H "$RXE_ADDR" -p "$port" --bwlimit 3M --digest-at-end --no-digest-cache --digest blake3 \
    "$src/at-end/third/big" >"$shared/send.log" 2>&1 &
  local pid=$!
  wait_for_line 60 recv "$log" "partial 'big': [0-9]+ bytes durable"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  wait_for_line 20 recv "$log" "kept .* of 'big' to resume from"
  "$send" -H "$RXE_ADDR" -p "$port" --digest-at-end --no-digest-cache --digest blake3 --json \
    "$src/at-end/third/big" >"$shared/resume.json" 2>"$shared/send.log" || rc=$?
  ((rc == 0)) || fail "the re-run exited $rc: $(tail -n 5 "$shared/send.log")"
  grep -q "checking ours" "$shared/send.log" || fail "the sender did not check the receiver's partial"
  grep -q '"resumed_from":[1-9]' "$shared/resume.json" || fail "not resumed: $(head -c 400 "$shared/resume.json")"
  grep -q '"algorithm":"blake3"' "$shared/resume.json" || fail "not BLAKE3: $(head -c 400 "$shared/resume.json")"
  cmp "$src/at-end/third/big" "$out/big" || fail "the resumed file differs"
  rm -f "$out/big"
  # Written while it is sent: abandoned (FileAbort), nothing kept, exit status 1.
  "$send" -H "$RXE_ADDR" -p "$port" --bwlimit 3M --digest-at-end --no-digest-cache \
    --name changing "$src/at-end/fourth/big" >"$shared/send.log" 2>&1 &
  pid=$!
  # Once a part of it is stored, so that the sender has read it before the change.
  wait_for_line 60 recv "$log" "partial 'changing': [0-9]+ bytes durable"
  printf 'changed' | dd of="$src/at-end/fourth/big" bs=1 seek=1000 conv=notrunc status=none
  rc=0
  wait "$pid" || rc=$?
  ((rc == 1)) || fail "a file changed while sent: exit $rc, expected 1: $(tail -n 3 "$shared/send.log")"
  grep -q "changed while it was being sent" "$shared/send.log" || fail "not said: $(tail -n 3 "$shared/send.log")"
  wait_for_line 20 recv "$log" "'changing': abandoned by the sender, nothing kept"
  [[ ! -e $out/changing ]] || fail "the changed file arrived"
  pass "digest at the end (the default): no hashing pass, read(2) $second bytes for $bytes sent; a second send skipped both; an interrupted send resumed after checking the receiver's prefix; a file written while sent was abandoned (exit 1, nothing kept)"
}
run_case digest-at-end case_digest_at_end

# Partials expire: a receiver with --partial-ttl 3s removes what an interrupted transfer
# left once it is that old, and --no-partial keeps nothing at all.
case_partial_expiry() {
  local p2=$((port + 1)) out2=$work/out2 log2=$shared/recv2.log
  mkdir -p "$out2"
  head -c $((64 << 20)) /dev/urandom >"$src/expiring.bin"
  start_daemon recv2 "$log2" "$recv" --port "$p2" --dir "$out2" --partial-ttl 3s -v
  local pid2=$daemon_pid
  wait_for 20 cm_listening "$p2"
  "$send" -H "$RXE_ADDR" -p "$p2" --bwlimit 16M "$src/expiring.bin" >/dev/null 2>&1 &
  local pid=$!
  wait_for 30 grep -q "partial 'expiring.bin': [0-9]* bytes durable" "$log2"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  wait_for 20 grep -q "kept .* of 'expiring.bin'" "$log2"
  [[ -n $(find "$out2/.rdmax-partial" -name '*.data' 2>/dev/null) ]] || fail "no partial kept"
  [[ $(stat -c %a "$out2/.rdmax-partial") == 700 ]] || fail "the partial area is not mode 0700"
  [[ ! -e $out2/expiring.bin ]] || fail "the partial is visible under the final name"
  wait_for 15 grep -q "removed 1 expired partial" "$log2"
  [[ -z $(find "$out2/.rdmax-partial" -name '*.data' 2>/dev/null) ]] || fail "the expired partial is still there"
  kill -TERM "$pid2"
  wait_for 15 daemon_exited recv2
  rm -rf "$out2"/.rdmax-partial
  start_daemon recv3 "$shared/recv3.log" "$recv" --port "$p2" --dir "$out2" --no-partial -v
  pid2=$daemon_pid
  wait_for 20 cm_listening "$p2"
  "$send" -H "$RXE_ADDR" -p "$p2" --bwlimit 16M --progress "$src/expiring.bin" >/dev/null \
    2>"$shared/expiring.err" &
  pid=$!
  # Killed once some of it is on the receiver's disk: a sending line past 0%.
  wait_for 30 grep -Eq '^sending +\[=*>? *\] +[1-9][0-9]?%' "$shared/expiring.err"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  wait_for 20 grep -q "'expiring.bin'.*abandoned" "$shared/recv3.log"
  [[ -z $(ls -A "$out2") ]] || fail "--no-partial left: $(ls -A "$out2")"
  kill -TERM "$pid2"
  wait_for 15 daemon_exited recv3
  pass "a partial kept (mode 0700 area, nothing under the final name) expired after --partial-ttl 3s; --no-partial kept nothing"
}
run_case partial-expiry case_partial_expiry

# Issues 21 and 22: one file larger than the receiver's free space is refused NoSpace, and
# only it: the small files offered with it (and behind it) are stored, nothing of the
# refused one stays (no temporary, no partial), and the run says which file failed.
case_full_disk() {
  local p2=$((port + 2)) small=$work/small log2=$shared/recv-small.log
  mkdir -p "$small" "$src/mix"
  mount -t tmpfs -o size=5m tmpfs "$small" || fail "cannot mount a 5 MiB tmpfs"
  head -c $((8 << 20)) /dev/urandom >"$src/mix/big.bin"
  for n in a b c; do printf '%s-file\n' "$n" >"$src/mix/$n.txt"; done
  start_daemon recv-small "$log2" "$recv" --port "$p2" --dir "$small" -v
  local pid2=$daemon_pid
  wait_for 20 cm_listening "$p2"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$p2" -r "$src/mix" >"$shared/send.log" 2>&1 || rc=$?
  ((rc != 0)) || fail "a refused file still exited 0"
  for n in a b c; do
    cmp -s "$src/mix/$n.txt" "$small/mix/$n.txt" || fail "$n.txt was not stored: $(cat "$shared/send.log")"
  done
  [[ ! -e $small/mix/big.bin ]] || fail "the refused file is there"
  grep -q "big.bin.*NoSpace\|NoSpace.*big.bin" "$shared/send.log" ||
    fail "the sender does not say big.bin was refused NoSpace: $(cat "$shared/send.log")"
  local left
  left=$(cd "$small" && find . -mindepth 1 ! -path ./mix ! -path './mix/?.txt')
  [[ -z $left ]] || fail "the refusal left: $left"
  [[ $(grep -c "refused.*NoSpace" "$log2") == 1 ]] || fail "the receiver refused more than one: $(grep refused "$log2")"
  kill -TERM "$pid2"
  wait_for 15 daemon_exited recv-small
  umount "$small"
  pass "a file larger than the free space alone was refused (exit $rc); the three small files behind it were stored; nothing of it stayed"
}
run_case full-disk case_full_disk

report_cases tree
