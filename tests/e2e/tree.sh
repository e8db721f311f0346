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
  for i in $(seq -w 1 1000); do head -c 4096 /dev/urandom >"$t/many/f$i"; done
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
  grep -Eq "1004 files and 7 directories: 1011 good, 0 failed, 2 skipped" "$shared/send.log" ||
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
}
run_case parallel case_parallel

case_mixed() {
  # Some files exist already: each is refused (Exists), the others arrive; exit status 4.
  rm -rf "$out/data"
  mkdir -p "$out/data/many"
  echo old >"$out/data/many/f0001"
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" -r --json "$src/data" >"$shared/send.json" 2>"$shared/send.log" || rc=$?
  ((rc == 4)) || fail "a run with a refused file exited $rc, not 4"
  [[ $(cat "$out/data/many/f0001") == old ]] || fail "an existing file was overwritten"
  cmp -s "$src/data/many/f0002" "$out/data/many/f0002" || fail "the other files did not arrive"
  grep -q '"failed":1' "$shared/send.json" || fail "--json: failed count"
  grep -q 'f0001.*refused by the receiver (Exists' "$shared/send.log" || fail "no refusal reported"
}
run_case mixed case_mixed

case_usage() {
  local rc=0
  "$send" -H "$RXE_ADDR" -p "$port" "$src/data" 2>"$shared/err" || rc=$?
  ((rc == 2)) || fail "a directory without -r exited $rc"
  grep -q -- "-r" "$shared/err" || fail "the error does not name -r: $(cat "$shared/err")"
  rc=0
  "$send" -H "$RXE_ADDR" -p "$port" "$src/none" 2>"$shared/err" || rc=$?
  ((rc == 2)) || fail "a missing PATH exited $rc"
}
run_case usage case_usage

report_cases tree
