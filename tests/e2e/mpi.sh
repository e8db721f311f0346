#!/usr/bin/env bash
# Shards under a real launcher (issue 24): Open MPI's `mpirun -np 4` on host A starts four
# rdma-send --shard auto on one tree of a few hundred files of mixed sizes, to two rdma-recv
# daemons on host B writing into one directory (-H B:p1,B:p2: as two nodes that mount one
# file system; over the wire between the two guests when the test bed has them). The tree arrives
# identical, every file was sent by exactly one shard (from --json-lines), the shards' bytes
# are within 20% of each other, and a second run of the same job moves no data and reports
# every file identical. Then the other way (issue 52): host B serves the tree, mpirun -np 4 on
# host A fetches it back (--shard auto -P 2), and a server killed on B mid-file is resumed.
source "$(dirname "$0")/lib.sh"
need_programs send recv
command -v mpirun >/dev/null ||
  fail "mpirun is needed (Debian's openmpi-bin; scripts/install-deps.sh installs it)"
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps.sh installs it)"

port=18791
port2=18792
work=$(mktemp -d "${RXE_SCRATCH:-/tmp}/rdmax-mpi.XXXXXX")
src=$work/src
# On host B (the same host when both "hosts" share one device).
out=${RXE_SCRATCH:-/tmp}/rdmax-mpi-out.$$
peer=${RXE_PEER_ADDR:-$RXE_ADDR}
mkdir -p "$src"
rxe-peer mkdir -p "$out"
bg_pids=()
cleanup_mpi() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rxe-peer pkill -x rdma-recv 2>/dev/null || true
  rxe-peer pkill -x rdma-send 2>/dev/null || true
  rxe-peer rm -rf "$out" 2>/dev/null || true
  rm -rf "$work"
}
trap 'cleanup_mpi; _cleanup' EXIT
log=$shared/recv.log
log2=$shared/recv2.log
fail_context() {
  echo "--- receiver log:"; tail -n 30 "$log"
  local f
  for f in "$shared"/*.log; do [[ -e $f && $f != "$log" ]] && { echo "--- $f:"; tail -n 20 "$f"; }; done
}

# Two daemons, one directory: neither may half-write, clash on a partial or commit a path
# the other committed.
for p in "$port:$log" "$port2:$log2"; do
  rxe-peer bash -c "exec $recv -a \"\$RXE_ADDR\" --port ${p%%:*} --dir $out -v 2>>${p#*:}" &
  bg_pids+=($!)
done
wait_for 30 grep -q 'listening on' "$log"
wait_for 30 grep -q 'listening on' "$log2"

# A few hundred files: some large, many small, some empty, in nested directories.
t=$src/tree
mkdir -p "$t/big" "$t/small/deeper" "$t/empty dir" "$t/ünï"
# Eight large files of 0.75 to 4.25 MiB (20 MiB): the shards balance by bytes whatever the
# scale (unit tests: Shard.*), and the wire between two emulated guests is slow.
for i in 1 2 3 4 5 6 7 8; do head -c $(((i * 2 + 1) << 18)) /dev/urandom >"$t/big/b$i.bin"; done
random_files "$t/small" s%03d 260 0 65534
for i in $(seq -w 1 40); do : >"$t/small/deeper/e$i"; done
echo "ü" >"$t/ünï/grüße.txt"
chmod 0750 "$t/small"
touch -d '1999-12-31 23:59:59' "$t/small/deeper" "$t/empty dir"
files=$(find "$t" -type f | wc -l)
echo "time: the daemons and the tree took ${SECONDS}s"

# mpirun as root (the test bed's user) must be told it is meant.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# job NAME: the four shards, each writing NAME.RANK.jsonl and NAME.RANK.log.
job() {
  local name=$1 rc=0
  # shellcheck disable=SC2016 # expanded by each rank's shell
  timeout -k 5 240 mpirun -np 4 --oversubscribe sh -c \
    'exec "$0" -H "$1" -r --shard auto --json-lines "$2" >"$3.$OMPI_COMM_WORLD_RANK.jsonl" 2>"$3.$OMPI_COMM_WORLD_RANK.log"' \
    "$send" "$peer:$port,$peer:$port2" "$t" "$shared/$name" >"$shared/mpirun-$name.out" 2>&1 || rc=$?
  ((rc == 0)) || fail "mpirun -np 4 ($name) exited $rc: $(tail -n 5 "$shared/mpirun-$name.out")"
  local r
  for r in 0 1 2 3; do
    [[ -s $shared/$name.$r.jsonl ]] || fail "rank $r wrote no JSON lines"
    grep -q "shard $r of 4" "$shared/$name.$r.log" || fail "rank $r did not send shard $r of 4"
  done
}

# compare SRC DST [nodirtimes]: names, kinds, modes, times (of directories too unless asked)
# and contents; SRC here, DST on host B. The lists of SRC are written here and compared on
# B, so that only diff's few lines and its status come back: a long output streamed from B
# through the job spool was once cut short.
compare() {
  local a=$1 b=$2 dirfmt='%y %m %T@ %p\n'
  [[ ${3:-} == nodirtimes ]] && dirfmt='d %m %p\n'
  local list="find . \\( -type d -printf '$dirfmt' \\) -o -printf '%y %m %T@ %p\\n' | LC_ALL=C sort"
  local sums="find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum"
  (cd "$a" && eval "$list") >"$shared/a.list"
  (cd "$a" && eval "$sums") >"$shared/a.sums"
  rxe-peer bash -c "cd '$b' && ($list) | diff '$shared/a.list' - >&2 && ($sums) | diff '$shared/a.sums' - >&2"
}

started=$SECONDS
job first
echo "time: the first job took $((SECONDS - started))s"
compare "$t" "$out/tree" nodirtimes || fail "the tree differs after the four shards"
jq -r 'select(.entry.kind == "file") | .entry.name' "$shared"/first.[0-3].jsonl | sort >"$shared/sent"
[[ $(wc -l <"$shared/sent") == "$files" ]] ||
  fail "the shards settled $(wc -l <"$shared/sent") files, the tree has $files"
dup=$(uniq -d "$shared/sent")
[[ -z $dup ]] || fail "sent by two shards: $dup"
bytes=()
for r in 0 1 2 3; do
  bytes+=("$(jq -s 'map(select(.summary)) | .[0].summary.bytes' "$shared/first.$r.jsonl")")
done
low=$(printf '%s\n' "${bytes[@]}" | sort -n | head -n 1)
high=$(printf '%s\n' "${bytes[@]}" | sort -n | tail -n 1)
((low > 0 && high * 10 <= low * 12)) || fail "the shards' bytes are not within 20%: ${bytes[*]}"
receivers=$(jq -r 'select(.entry.kind == "file") | .entry.receiver' "$shared"/first.[0-3].jsonl | sort | uniq -c | awk '{printf "%s %s; ", $2, $1}')
[[ $(jq -r 'select(.entry.kind == "file") | .entry.receiver' "$shared"/first.[0-3].jsonl | sort -u | wc -l) == 2 ]] ||
  fail "the files did not go to both receivers: $receivers"
[[ -z $(rxe-peer find "$out" -path '*/.rdmax-partial/*' -type f 2>/dev/null) ]] || fail "partials left behind"
pass "mpirun -np 4 on host A: $files files, each sent by one shard, to two daemons on host B in one directory ($receivers); bytes per shard ${bytes[*]}"

started=$SECONDS
job again
echo "time: the second job took $((SECONDS - started))s"
for r in 0 1 2 3; do
  jq -e -s 'map(select(.summary)) | .[0].summary | .bytes_sent == 0 and .identical == .files' \
    "$shared/again.$r.jsonl" >/dev/null || fail "re-run, rank $r: $(tail -n 1 "$shared/again.$r.jsonl")"
done
compare "$t" "$out/tree" || fail "the tree differs after the re-run"
pass "the same job again moved no data, every file identical, and set the directory times"

# Fetching (issue 52), across the wire: host B serves the tree the job pushed there
# (rdma-send --serve), and mpirun -np 4 on host A fetches it back into one directory, each
# rank its share (--shard auto) over two connections (-P 2): every file once across the
# ranks, the tree identical to the source.
serve_port=18793
serve_log=$shared/serve.log
rxe-peer bash -c "exec $send --serve $out -a \"\$RXE_ADDR\" -p $serve_port -v 2>>$serve_log" &
bg_pids+=($!)
wait_for 30 grep -q 'serving' "$serve_log"
fetched=$work/fetched
mkdir -p "$fetched"
started=$SECONDS
rc=0
# shellcheck disable=SC2016 # expanded by each rank's shell
timeout -k 5 240 mpirun -np 4 --oversubscribe sh -c \
  'exec "$0" --from "$1" -r --shard auto -P 2 tree -o "$2" 2>"$3.$OMPI_COMM_WORLD_RANK.log"' \
  "$recv" "$peer:$serve_port" "$fetched" "$shared/fetch" >"$shared/mpirun-fetch.out" 2>&1 || rc=$?
((rc == 0)) || fail "mpirun -np 4 rdma-recv --from exited $rc: $(tail -n 5 "$shared/mpirun-fetch.out")"
echo "time: the fetching job took $((SECONDS - started))s"
total=0
counts=()
for r in 0 1 2 3; do
  n=$(grep -o 'fetched [0-9]* file(s)' "$shared/fetch.$r.log" | grep -o '[0-9]*')
  [[ -n $n ]] || fail "rank $r: no summary: $(tail -n 3 "$shared/fetch.$r.log")"
  ((n > 0)) || fail "rank $r fetched no file"
  counts+=("$n")
  total=$((total + n))
done
((total == files)) || fail "the ranks fetched ${counts[*]} files ($total), the tree has $files"
for r in 0 1 2 3; do
  for k in 1 2; do
    grep -q "fetch: share $((r + 1))/4, part $k/2" "$serve_log" || fail "the server did not serve rank $r's part $k"
  done
done
list="find . \\( -type d -printf 'd %m %p\\n' \\) -o -printf '%y %m %T@ %p\\n' | LC_ALL=C sort"
# (Files, not <(...): the guest has no /dev/fd.)
(cd "$t" && eval "$list") >"$shared/source.list"
(cd "$fetched/tree" && eval "$list") >"$shared/fetched.list"
diff "$shared/source.list" "$shared/fetched.list" >&2 || fail "the fetched tree's names, modes or times differ"
diff -r "$t" "$fetched/tree" >&2 || fail "the fetched tree's contents differ"
[[ -z $(find "$fetched" -path '*/.rdmax-partial/*' -type f) ]] || fail "partials left behind"
pass "mpirun -np 4 rdma-recv --from B --shard auto -P 2 on host A: $files files (${counts[*]} per rank), each once, identical to the source"

# The server on host B killed halfway (kill -9): the fetch exits 3 and keeps what arrived;
# run again against a server started again, it fetches only the rest.
slow_port=18794
# As fetch.sh's one-host case, whose margins hold: 24 MiB at 4 MiB/s (6 s), killed 2 s after
# it started. (The tree's largest file, 4.25 MiB, is one slot burst from done at any rate the
# wire allows: once it ended before the kill, once nothing was stored before it.)
rxe-peer bash -c "head -c $((24 << 20)) /dev/urandom >$out/big.bin"
rxe-peer bash -c "exec $send --serve $out -a \"\$RXE_ADDR\" -p $slow_port --bwlimit 4M 2>>$shared/slow.log" &
bg_pids+=($!)
wait_for 30 grep -q 'serving' "$shared/slow.log"
# The killer waits on host B, posted before the fetch: a command posted to B while it serves
# reaches it late (once more than 4 s late, and the whole file had arrived before the kill).
# It kills 2 s after the server began sending. (Anchored: its own shell holds the pattern.)
rm -f "$shared/killer-ready"
rxe-peer bash -c "touch $shared/killer-ready
  until grep -q 'sending 1 file' $shared/slow.log; do sleep 0.1; done
  sleep 2; pkill -KILL -f '^$send --serve $out -a [^ ]* -p $slow_port'" &
bg_pids+=($!)
wait_for 30 test -e "$shared/killer-ready"
rc=0
"$recv" --from "$peer:$slow_port" -o "$fetched" big.bin >"$shared/killed.log" 2>&1 || rc=$?
((rc == 3)) || fail "the fetch from a server killed on host B exited $rc: $(tail -n 3 "$shared/killed.log")"
[[ ! -e $fetched/big.bin ]] || fail "a half file appeared under its name"
rxe-peer bash -c "exec $send --serve $out -a \"\$RXE_ADDR\" -p $slow_port 2>>$shared/slow2.log" &
bg_pids+=($!)
wait_for 30 grep -q 'serving' "$shared/slow2.log"
rc=0
"$recv" --from "$peer:$slow_port" -o "$fetched" big.bin >"$shared/resumed.log" 2>&1 || rc=$?
((rc == 0)) || fail "the fetch run again exited $rc: $(tail -n 3 "$shared/resumed.log")"
[[ $(rxe-peer sha256sum "$out/big.bin" | cut -d' ' -f1) == $(sha256sum "$fetched/big.bin" | cut -d' ' -f1) ]] ||
  fail "big.bin differs"
grep -q "resuming .big.bin. (.*) at" "$shared/resumed.log" ||
  fail "not resumed: $(grep big.bin "$shared/resumed.log" | tail -n 2)"
pass "the server killed on host B mid-file: the fetch exited 3, and run again resumed ($(grep -o 'resuming .* at [^,;]*' "$shared/resumed.log"))"
