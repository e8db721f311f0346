#!/usr/bin/env bash
# How soon the first chunk leaves (issue 25): a tree of BENCH_FIRST_FILES (default 16) files
# of BENCH_FIRST_MIB (default 64) MiB, none in the digest cache, sent with `rdma-send -r`
# with the digest at the end and with the digest first. Runs inside scripts/rxe-run (one
# guest, BENCH_ONLY=first-chunk scripts/bench.sh). The time is from the command's start to
# its first Take (the first chunk is written at once after it; -vv traces each event with
# its time), and the whole run's; every copy is checked with diff -r. Echoes a Markdown
# table, and appends it to $BENCH_RESULTS when that is set.
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
S=$RXE_SCRATCH/bench-first-chunk
rm -rf "$S"
mkdir -p "$S/src" "$S/out"
send=$RDMAX_BIN/rdma-send recv=$RDMAX_BIN/rdma-recv
files=${BENCH_FIRST_FILES:-16} mib=${BENCH_FIRST_MIB:-64}
port=18720
die() { echo "bench-first-chunk: $*" >&2; exit 1; }

echo "bench-first-chunk: preparing $files x $mib MiB" >&2
for i in $(seq 1 "$files"); do head -c $((mib << 20)) /dev/urandom >"$S/src/f$i"; done
cat "$S/src/"* >/dev/null  # in the page cache, as for every tool in bench.sh
"$recv" -a "$RXE_ADDR" -p "$port" -o "$S/out" --slot-size 1M --slots 16 --overwrite -q \
  2>"$S/recv.log" &
recv_pid=$!
trap 'kill $recv_pid 2>/dev/null || true; rm -rf "$S"' EXIT
wait_cm_listening "$port" || die "rdma-recv is not listening: $(tail -n 3 "$S/recv.log")"

# Seconds since midnight of `date +%s.%N` output, and of a log line's HH:MM:SS.mmm.
of_day() { awk -v t="$1" 'BEGIN { printf "%.3f", t % 86400 }'; }
rows=""
for mode in digest-at-end digest-first; do
  rm -rf "$S/out/src"
  flag=(--digest-at-end)
  [[ $mode == digest-first ]] && flag=()
  start=$(date -u +%s.%N)
  "$send" -H "$RXE_ADDR" -p "$port" -r "$S/src" --no-digest-cache "${flag[@]}" -vv \
    2>"$S/$mode.log" >/dev/null || die "$mode: rdma-send failed: $(tail -n 5 "$S/$mode.log")"
  end=$(date -u +%s.%N)
  diff -r "$S/src" "$S/out/src" >/dev/null || die "$mode: the copy differs"
  # A session's first answer to a fresh tree is a Take (GotAnswer: the session's answers).
  first=$(grep -m 1 -o '^[0-9:.]* trace: .*InSession --GotAnswer-->' "$S/$mode.log" | cut -d' ' -f1) ||
    die "$mode: no Take in the log"
  # TZ is UTC in the guest: the log's clock and date -u agree.
  took=$(awk -v s="$(of_day "$start")" -v f="$first" 'BEGIN {
    split(f, p, ":"); t = p[1] * 3600 + p[2] * 60 + p[3]; d = t - s; if (d < 0) d += 86400
    printf "%.2f", d }')
  whole=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  rows+="| $mode | $took | $whole |"$'\n'
done
table="#### First chunk of a $files x $mib MiB tree (none in the digest cache)

| rdma-send -r | first chunk after (s) | whole run (s) |
|---|---|---|
$rows
Target (issue 25): the first chunk within 1.5 s of the start."
echo "$table"
[[ -n ${BENCH_RESULTS:-} ]] && printf '\n%s\n' "$table" >>"$BENCH_RESULTS"
exit 0
