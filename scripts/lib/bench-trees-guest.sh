#!/usr/bin/env bash
# The trees part of scripts/bench.sh (issue 13); runs inside scripts/rxe-run, after
# bench-guest.sh in the same boot or alone (BENCH_ONLY=trees). Two trees, each sent with
# `rdma-send -r` (-P 1 and -P 2), with one rdma-send per file in a loop, and with
# `tar c | socat` -> `socat | tar x` over TCP on the same netdev; the 16-file tree is also
# compared with one file of the same total size. Every copy is checked with diff -r.
# Appends a Markdown table to $BENCH_RESULTS (a host path) and echoes it.
#   BENCH_TREE_SMALL (default 1000) files of 4 KiB; BENCH_TREE_LARGE (default 16) of 16 MiB.
#   BENCH_LOOP_SAMPLE (default 100): one rdma-send per file costs about half a second in the
#   emulated test bed, so the loop over the small tree sends this many of its files and
#   scales the time to the whole tree (the table says so); 0 sends them all.
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
S=$RXE_SCRATCH/bench-trees
rm -rf "$S"
mkdir -p "$S/out"
send=$RDMAX_BIN/rdma-send recv=$RDMAX_BIN/rdma-recv
small=${BENCH_TREE_SMALL:-1000} large=${BENCH_TREE_LARGE:-16} sample=${BENCH_LOOP_SAMPLE:-100}
port=18710
rate() { awk -v b="$1" -v s="$2" 'BEGIN{ if (s > 0) printf "%.1f", b/s/1048576; else print "n/a"}'; }
verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN{ ok = op == ">=" ? v >= t : v <= t; print ok ? "met" : "NOT met" }'; }
die() { echo "bench-trees: $*" >&2; exit 1; }

echo "bench-trees: preparing $small x 4 KiB and $large x 16 MiB" >&2
mkdir -p "$S/src/small/d1" "$S/src/small/d2" "$S/src/large"
for i in $(seq 1 "$small"); do head -c 4096 /dev/urandom >"$S/src/small/d$((i % 2 + 1))/f$i"; done
for i in $(seq 1 "$large"); do head -c $((16 << 20)) /dev/urandom >"$S/src/large/f$i"; done
head -c $((large * 16 << 20)) /dev/urandom >"$S/src/one.bin"
cat "$S/src/large/"* "$S/src/one.bin" >/dev/null # in the page cache for every tool alike
small_bytes=$((small * 4096)) large_bytes=$((large * 16 << 20))

# Every rdma-send hashes (no digest cache), as the first send of a tree would.
"$recv" -a "$RXE_ADDR" -p "$port" -o "$S/out" --slot-size 1M --slots 16 -q 2>"$S/recv.log" &
recv_pid=$!
trap 'kill $recv_pid 2>/dev/null || true' EXIT
wait_cm_listening "$port" || die "rdma-recv is not listening: $(tail -n 3 "$S/recv.log")"

# timed NAME COMMAND...: runs COMMAND, sets seconds[NAME].
declare -A seconds
timed() {
  local name=$1 t; shift
  t=$(now)
  "$@" >"$S/$name.log" 2>&1 || die "$name failed: $(tail -n 3 "$S/$name.log")"
  seconds[$name]=$(elapsed "$t")
  echo "bench-trees: $name ${seconds[$name]} s" >&2
}
check() { diff -r "$S/src/$1" "$S/out/$1" >/dev/null || die "$2: the copy of $1 differs"; rm -rf "${S:?}/out/$1"; }

send_tree() { "$send" -H "$RXE_ADDR" -p "$port" --no-digest-cache -q -r -P "$2" "$S/src/$1"; }
# send_each TREE [N]: one rdma-send per file (the first N files only, when N > 0).
send_each() {
  local tree=$1 limit=${2:-0} f rel
  find "$S/src/$tree" -type f | sort >"$S/$tree.files" # (no /dev/fd in the guest for <(...))
  ((limit > 0)) && { head -n "$limit" "$S/$tree.files" >"$S/$tree.files.part"; mv "$S/$tree.files.part" "$S/$tree.files"; }
  while IFS= read -r f; do
    rel=${f#"$S/src/"}
    mkdir -p "$S/out/$(dirname "$rel")"
    # One run per file: the receiver stores it under its base name; move it into place.
    "$send" -H "$RXE_ADDR" -p "$port" --no-digest-cache -q --name "loop-$$" "$f"
    mv "$S/out/loop-$$" "$S/out/$rel"
  done <"$S/$tree.files"
}
tar_socat() {
  local tree=$1
  socat -u "TCP-LISTEN:$((port + 1)),bind=$RXE_ADDR,reuseaddr" STDOUT | tar x -C "$S/out" &
  local server=$!
  wait_tcp_listening $((port + 1)) || die "socat is not listening"
  tar c -C "$S/src" "$tree" | socat -u STDIN "TCP:$RXE_ADDR:$((port + 1))"
  wait $server
}

# check_part TREE: the files the sampled loop sent arrived intact.
check_part() {
  local f rel
  while IFS= read -r f; do
    rel=${f#"$S/src/"}
    cmp -s "$f" "$S/out/$rel" || die "one rdma-send per file: $rel differs"
  done <"$S/$1.files"
  rm -rf "${S:?}/out/$1"
}
loop_note=""
for tree in small large; do
  timed "$tree-r-P1" send_tree "$tree" 1 && check "$tree" "-r -P 1"
  timed "$tree-r-P2" send_tree "$tree" 2 && check "$tree" "-r -P 2"
  if [[ $tree == small ]] && ((sample > 0 && sample < small)); then
    timed small-loop send_each small "$sample" && check_part small
    seconds[small-loop]=$(awk -v s="${seconds[small-loop]}" -v n="$sample" -v t="$small" 'BEGIN{printf "%.3f", s * t / n}')
    loop_note=" (measured on $sample of the $small files, scaled)"
  else
    timed "$tree-loop" send_each "$tree" && check "$tree" "one rdma-send per file"
  fi
  timed "$tree-tar" tar_socat "$tree" && check "$tree" "tar | socat"
done
timed one-file "$send" -H "$RXE_ADDR" -p "$port" --no-digest-cache -q "$S/src/one.bin"
cmp -s "$S/src/one.bin" "$S/out/one.bin" || die "one.bin differs"
kill $recv_pid
wait $recv_pid || true

best_small=$(awk -v a="${seconds[small-r-P1]}" -v b="${seconds[small-r-P2]}" 'BEGIN{print (a < b) ? a : b}')
best_large=$(awk -v a="${seconds[large-r-P1]}" -v b="${seconds[large-r-P2]}" 'BEGIN{print (a < b) ? a : b}')
speedup=$(ratio "${seconds[small-loop]}" "$best_small")
vs_tar=$(ratio "${seconds[small-tar]}" "$best_small")
vs_one=$(ratio "$best_large" "${seconds[one-file]}")
{
  echo
  echo "Trees ($RXE_MODE mode, $(nproc) vCPU, one receiver with a 16 x 1 MiB window, no digest cache):"
  echo
  echo "| tree | tool | time | files/s | MiB/s |"
  echo "| ---- | ---- | ---: | ------: | ----: |"
  for tree in small large; do
    n=$small bytes=$small_bytes label="$small x 4 KiB"
    [[ $tree == large ]] && n=$large bytes=$large_bytes label="$large x 16 MiB"
    for tool in r-P1 r-P2 loop tar; do
      case $tool in
        r-P1) what='rdma-send -r -P 1' ;; r-P2) what='rdma-send -r -P 2' ;;
        loop)
          what='one rdma-send per file'
          [[ $tree == small ]] && what+=$loop_note
          ;; tar) what='tar c \| socat -> socat \| tar x (TCP)' ;;
      esac
      s=${seconds[$tree-$tool]}
      echo "| $label | $what | $s s | $(awk -v n="$n" -v s="$s" 'BEGIN{printf "%.0f", n/s}') | $(rate "$bytes" "$s") |"
    done
  done
  echo "| one file of $((large * 16)) MiB | rdma-send | ${seconds[one-file]} s | | $(rate "$large_bytes" "${seconds[one-file]}") |"
  echo
  echo "| ratio | measured | target | |"
  echo "| ----- | -------: | -----: | - |"
  echo "| $small-file tree: one rdma-send per file / best rdma-send -r (time) | $speedup | >= 10 | $(verdict "$speedup" 10 ">=") |"
  echo "| $small-file tree: tar over TCP / best rdma-send -r (time; 1 = as fast as tar) | $vs_tar | >= 0.5 | $(verdict "$vs_tar" 0.5 ">=") |"
  echo "| $large-file tree: best rdma-send -r / one file of the same size (time) | $vs_one | <= 1.10 | $(verdict "$vs_one" 1.10 "<=") |"
} | tee -a "$BENCH_RESULTS"
