#!/usr/bin/env bash
# Many machines (issue 24), on one test host: --files-from with NUL-separated odd names, and
# one tree sent by two rdma-send commands as --shard 0/2 and 1/2 at once (the second from a
# launcher's environment, --shard auto), each with --json-lines: the tree arrives whole, every
# file was sent by exactly one shard, the shards' bytes are within 20% of each other, and a
# re-run moves nothing.
source "$(dirname "$0")/lib.sh"
need_programs send recv
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps.sh installs it)"

port=18781
work=$(mktemp -d "${RXE_SCRATCH:-/tmp}/rdmax-many.XXXXXX")
out=$work/out
src=$work/src
mkdir -p "$out" "$src"
trap 'rm -rf "$work"; _cleanup' EXIT
log=$shared/recv.log
fail_context() {
  echo "--- receiver log:"; tail -n 40 "$log"
  local f
  for f in "$shared"/send*.log; do [[ -e $f ]] && { echo "--- $f:"; tail -n 30 "$f"; }; done
}

start_daemon recv "$log" "$recv" --port "$port" --dir "$out" -v
wait_for 20 cm_listening "$port"

# --files-from - -0: names with spaces, non-ASCII and a newline, relative and absolute under
# --base. Listed files arrive under their paths relative to --base, and nothing else does; a
# name with a newline is read whole and arrives whole (PROTOCOL.md 7.5: a session's names may
# hold control bytes but NUL); a name that is not UTF-8 is left out, reported; a listed file
# that vanished fails alone, with a non-zero status.
case_files_from() {
  local b=$src/listed
  mkdir -p "$b/dir with space/ünï 日本" "$b/not listed"
  echo "one" >"$b/dir with space/a file"
  head -c 300000 /dev/urandom >"$b/dir with space/ünï 日本/grüße.bin"
  echo "abs" >"$b/absolute one"
  echo "nl" >"$b/new"$'\n'"line"
  echo "latin" >"$b/caf"$'\xe9'
  echo "never" >"$b/not listed/x"
  chmod 0750 "$b/dir with space"
  local rc=0
  printf '%s\0' "dir with space/a file" "./dir with space/ünï 日本/grüße.bin" "$b/absolute one" \
    "new"$'\n'"line" "caf"$'\xe9' "vanished file" |
    (cd / && "$send" -H "$RXE_ADDR" -p "$port" --files-from - -0 --base "$b" --json-lines) \
      >"$shared/list.jsonl" 2>"$shared/send-list.log" || rc=$?
  ((rc == 1)) || fail "a list with a vanished entry exited $rc, not 1"
  cmp "$b/dir with space/a file" "$out/dir with space/a file" || fail "a file with spaces differs"
  cmp "$b/dir with space/ünï 日本/grüße.bin" "$out/dir with space/ünï 日本/grüße.bin" ||
    fail "a non-ASCII file differs"
  cmp "$b/absolute one" "$out/absolute one" || fail "an absolute name did not arrive relative to --base"
  [[ $(stat -c %a "$out/dir with space") == 750 ]] || fail "a parent's mode was not kept"
  cmp "$b/new"$'\n'"line" "$out/new"$'\n'"line" || fail "the name with a newline did not arrive whole"
  [[ ! -e "$out/not listed" && ! -e $out/new && ! -e $out/line && ! -e "$out/caf"$'\xe9' ]] ||
    fail "something not listed arrived: $(ls -A "$out")"
  grep -q "skipping '.*caf\\\\xe9': name cannot be sent.*UTF-8" "$shared/send-list.log" ||
    fail "the name that is not UTF-8 is not reported"
  grep -q "'$b/vanished file': cannot read: No such file" "$shared/send-list.log" ||
    fail "the vanished entry is not reported"
  local failed good
  failed=$(jq -r 'select(.entry.status == "failed") | .entry.name' "$shared/list.jsonl")
  [[ $failed == "vanished file" ]] || fail "--json-lines failed entries: '$failed'"
  good=$(jq -c -s 'map(select(.entry.kind == "file" and .entry.status == "good") | .entry.name) | sort' \
    "$shared/list.jsonl")
  [[ $good == '["absolute one","dir with space/a file","dir with space/ünï 日本/grüße.bin","new\nline"]' ]] ||
    fail "--json-lines good files: '$good'"
  jq -e -s 'map(select(.summary)) | .[0].summary | .failed == 1 and .left_out == 1 and .exit_code == 1' \
    "$shared/list.jsonl" >/dev/null || fail "summary line: $(tail -n 1 "$shared/list.jsonl")"
  jq -e -s 'all(.[]; has("entry") or has("summary"))' "$shared/list.jsonl" >/dev/null ||
    fail "stdout holds something other than JSON lines"
  rm -rf "${out:?}"/*
  pass "--files-from -0: spaces, non-ASCII, a newline, absolute names and parents' modes; the name that is not UTF-8 left out; the vanished one failed alone (exit 1)"
}
run_case files-from case_files_from

# A tree of a few hundred files of mixed sizes (a few large, many small, some empty).
make_tree() {
  local t=$src/tree i
  mkdir -p "$t/big" "$t/small/deeper" "$t/empty dir" "$t/ünï"
  for i in 1 2 3 4 5 6; do head -c $(((i * 3 + 2) << 20)) /dev/urandom >"$t/big/b$i.bin"; done
  random_files "$t/small" s%03d 240 0 65534
  for i in $(seq -w 1 40); do : >"$t/small/deeper/e$i"; done
  echo "ü" >"$t/ünï/grüße.txt"
  chmod 0750 "$t/small"
  touch -d '1999-12-31 23:59:59' "$t/small/deeper" "$t/empty dir"
}

# compare SRC DST: same names, kinds, contents, permission bits and modification times.
compare() {
  local a=$1 b=$2
  (cd "$a" && find . -printf '%y %m %T@ %p\n' | sort) >"$shared/a.list"
  (cd "$b" && find . -printf '%y %m %T@ %p\n' | sort) >"$shared/b.list"
  diff "$shared/a.list" "$shared/b.list" >&2 || return 1
  diff -r "$a" "$b" >&2
}

# compare_but_directory_times SRC DST: as compare, directories without their times.
compare_but_directory_times() {
  local a=$1 b=$2
  (cd "$a" && find . \( -type d -printf 'd %m %p\n' \) -o -printf '%y %m %T@ %p\n' | sort) >"$shared/a.list"
  (cd "$b" && find . \( -type d -printf 'd %m %p\n' \) -o -printf '%y %m %T@ %p\n' | sort) >"$shared/b.list"
  diff "$shared/a.list" "$shared/b.list" >&2 || return 1
  diff -r "$a" "$b" >&2
}

# shard_pair NAME: shard 0/2 and shard auto (Open MPI's rank 1 of 2) of the tree at once.
shard_pair() {
  local name=$1 rc0=0 rc1=0 pid
  "$send" -H "$RXE_ADDR" -p "$port" -r --shard 0/2 --json-lines "$src/tree" \
    >"$shared/$name.0.jsonl" 2>"$shared/send-$name.0.log" &
  pid=$!
  OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 \
    "$send" -H "$RXE_ADDR" -p "$port" -r --shard auto --json-lines "$src/tree" \
    >"$shared/$name.1.jsonl" 2>"$shared/send-$name.1.log" || rc1=$?
  wait "$pid" || rc0=$?
  ((rc0 == 0 && rc1 == 0)) || fail "$name: the shards exited $rc0 and $rc1"
}

case_shards() {
  make_tree
  shard_pair first
  # Directory times: the last shard to add a file may change a directory after the other
  # set its time (rdma-send(1)); files and every mode are right after the first run.
  compare_but_directory_times "$src/tree" "$out/tree" || fail "the tree differs after two shards"
  local files dup
  files=$(cd "$src/tree" && find . -type f | wc -l)
  jq -r 'select(.entry.kind == "file") | .entry.name' "$shared"/first.[01].jsonl | sort >"$shared/sent"
  [[ $(wc -l <"$shared/sent") == "$files" ]] ||
    fail "the shards settled $(wc -l <"$shared/sent") files, the tree has $files"
  dup=$(uniq -d "$shared/sent")
  [[ -z $dup ]] || fail "sent by both shards: $dup"
  # (No process substitution: the test guest has no /dev/fd.)
  (cd "$src" && find tree -type f | sort) >"$shared/tree.files"
  diff "$shared/tree.files" "$shared/sent" >&2 || fail "the shards' files are not the tree's"
  local b0 b1
  b0=$(jq -s 'map(select(.summary)) | .[0].summary.bytes' "$shared/first.0.jsonl")
  b1=$(jq -s 'map(select(.summary)) | .[0].summary.bytes' "$shared/first.1.jsonl")
  ((b0 > 0 && b1 > 0 && b0 * 10 <= b1 * 12 && b1 * 10 <= b0 * 12)) ||
    fail "the shards' bytes are not within 20%: $b0 and $b1"
  # (-s: jq 1.6's -e judges only the last input's output, here the summary's.)
  jq -e -s 'map(select(.entry)) | length > 0 and all(.[]; .entry.receiver == "'"$RXE_ADDR:$port"'")' \
    "$shared/first.0.jsonl" >/dev/null || fail "an entry line does not name its receiver"
  jq -e -s 'map(select(.summary)) | length == 1' "$shared/first.1.jsonl" >/dev/null ||
    fail "shard 1 printed no summary line, or several"
  # Again: nothing moves, every file is identical, and now the directory times are right too.
  shard_pair again
  local s
  for s in 0 1; do
    jq -e -s 'map(select(.summary)) | .[0].summary | .bytes_sent == 0 and .identical == .files' \
      "$shared/again.$s.jsonl" >/dev/null || fail "re-run of shard $s: $(tail -n 1 "$shared/again.$s.jsonl")"
  done
  compare "$src/tree" "$out/tree" || fail "the tree differs after the re-run"
  pass "two shards sent $files files, each once (bytes $b0 and $b1); the re-run moved nothing and set the directory times"
}
run_case shards case_shards

# -H A,B: two receivers (two daemons on two ports here, two directories), one connection
# each, the files balanced by bytes; each file arrives where its entry says. Then B is killed
# in the middle of a run: A's files all arrive, B's are reported not sent (exit 3); after B
# is back, the same command sends what B missed.
case_two_receivers() {
  local pa=$((port + 1)) pb=$((port + 2)) outa=$work/out-a outb=$work/out-b t=$src/two rc=0
  mkdir -p "$outa" "$outb" "$t/sub"
  for i in 1 2 3 4; do head -c $((6 << 20)) /dev/urandom >"$t/sub/big$i"; done
  random_files "$t" s%02d 30 1 32768
  start_daemon recva "$shared/recv-a.log" "$recv" --port "$pa" --dir "$outa" -v
  start_daemon recvb "$shared/recv-b.log" "$recv" --port "$pb" --dir "$outb" -v
  local pid_b=$daemon_pid
  wait_for 20 cm_listening "$pa"
  wait_for 20 cm_listening "$pb"
  local receivers="$RXE_ADDR:$pa,$RXE_ADDR:$pb"
  "$send" -H "$receivers" -r --json "$t" >"$shared/two.json" 2>"$shared/send-two.log" || rc=$?
  ((rc == 0)) || fail "two receivers: exit $rc"
  local name where missing=0
  jq -r '.entries[] | select(.kind == "file") | [.name, .receiver] | @tsv' "$shared/two.json" \
    >"$shared/two.where"
  while IFS=$'\t' read -r name where; do
    case $where in
      "$RXE_ADDR:$pa") cmp -s "$src/$name" "$outa/$name" || missing=$((missing + 1)) ;;
      "$RXE_ADDR:$pb") cmp -s "$src/$name" "$outb/$name" || missing=$((missing + 1)) ;;
      *) fail "'$name' went to '$where'" ;;
    esac
  done <"$shared/two.where"
  ((missing == 0)) || fail "$missing files are not where their entries say"
  local ba bb
  ba=$(jq '.receivers[] | select(.receiver == "'"$RXE_ADDR:$pa"'") | .bytes' "$shared/two.json")
  bb=$(jq '.receivers[] | select(.receiver == "'"$RXE_ADDR:$pb"'") | .bytes' "$shared/two.json")
  ((ba > 0 && bb > 0 && ba * 10 <= bb * 12 && bb * 10 <= ba * 12)) ||
    fail "the receivers' bytes are not within 20%: $ba and $bb"

  # Again into empty directories, slowly, and B killed once it is receiving.
  rm -rf "${outa:?}"/* "${outb:?}"/*
  local before
  before=$(grep -c "receiving 'two/" "$shared/recv-b.log" || true)
  rc=0
  "$send" -H "$receivers" -r --json --bwlimit 8M --timeout 5 "$t" >"$shared/two-cut.json" \
    2>"$shared/send-two-cut.log" &
  local pid=$!
  # shellcheck disable=SC2317 # called by wait_for
  receiving_more() { (($(grep -c "receiving 'two/" "$shared/recv-b.log" || true) > before)); }
  wait_for 30 receiving_more  # B is receiving a file: killed now, that one and the rest fail
  kill -9 "$pid_b"
  wait "$pid" || rc=$?
  ((rc == 3)) || fail "a killed receiver: exit $rc, not 3"
  jq -e '[.entries[] | select(.receiver == "'"$RXE_ADDR:$pa"'") | .status == "good"] | all' \
    "$shared/two-cut.json" >/dev/null || fail "A's entries are not all good"
  jq -e '[.entries[] | select(.receiver == "'"$RXE_ADDR:$pb"'" and .kind == "file") | .status != "good"] | any' \
    "$shared/two-cut.json" >/dev/null || fail "no file of B's failed: was it killed too late?"
  grep -Eq "$RXE_ADDR:$pb: .* [1-9][0-9]* not sent" "$shared/send-two-cut.log" ||
    fail "the closing lines do not name B: $(tail -n 4 "$shared/send-two-cut.log")"
  for name in $(jq -r '.entries[] | select(.receiver == "'"$RXE_ADDR:$pa"'" and .kind == "file") | .name' "$shared/two-cut.json"); do
    cmp -s "$src/$name" "$outa/$name" || fail "A's file '$name' did not arrive"
  done

  # B back: the same command completes the rest.
  start_daemon recvb2 "$shared/recv-b2.log" "$recv" --port "$pb" --dir "$outb" -v
  wait_for 20 cm_listening "$pb"
  rc=0
  "$send" -H "$receivers" -r --json "$t" >"$shared/two-again.json" 2>"$shared/send-two-again.log" || rc=$?
  ((rc == 0)) || fail "the re-run after B came back: exit $rc"
  jq -e '.good == (.files + .directories)' "$shared/two-again.json" >/dev/null ||
    fail "re-run: $(jq -c 'del(.entries)' "$shared/two-again.json")"
  pass "two receivers: files where their entries say (bytes $ba and $bb); B killed: A's all arrived, exit 3, B named; B back: the re-run completed"
}
run_case two-receivers case_two_receivers

report_cases many
