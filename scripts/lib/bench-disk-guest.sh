#!/usr/bin/env bash
# What the disk sees (issue 25): files on a real block device, not in the page cache. Runs
# inside `scripts/rxe-run --disk MIB:BYTES_PER_S` (one guest; BENCH_ONLY=disk scripts/bench.sh),
# with the files on $RXE_DISK (ext4 on a virtio disk whose reads qemu throttles) and every
# copy written to $RXE_SCRATCH (tmpfs), sender and receiver on the same rxe device.
# Data: one file of BENCH_DISK_MIB (default 256) MiB, and a tree of BENCH_DISK_FILES (16)
# files of BENCH_DISK_FILE_MIB (16) MiB. Tools: dd to /dev/null (the disk's own rate), rcopy
# (rdma-core's rsockets copy; one run per file for the tree), rdma-send with the digest at the
# end and with --digest-first, always --no-digest-cache (a first send). Each run, once (a
# median of 1), starts with the page cache dropped and runs in a cgroup whose memory.max
# (BENCH_DISK_MEMORY_MAX, default 64M) is far below the data, as for a dataset far bigger
# than RAM. One run gives both measures:
#   (a) bytes read from the device per byte sent: the cgroup's io.stat rbytes for the disk;
#   (b) the whole run's rate against dd's of the same bytes in the same boot.
# Every copy is checked against a reference in tmpfs (cmp, diff -r); a failing tool stops
# the run with a message and status 1. Echoes two Markdown tables, and appends them to
# $BENCH_RESULTS when that is set.
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
die() { echo "bench-disk: $*" >&2; exit 1; }
[[ -n ${RXE_DISK:-} ]] || die "RXE_DISK is not set: run under scripts/rxe-run --disk MIB:BYTES_PER_S"
((EUID == 0)) || die "needs root (cgroups, drop_caches)"
D=$RXE_DISK/bench-disk S=$RXE_SCRATCH/bench-disk
send=$RDMAX_BIN/rdma-send recv=$RDMAX_BIN/rdma-recv
mib=${BENCH_DISK_MIB:-256} files=${BENCH_DISK_FILES:-16} file_mib=${BENCH_DISK_FILE_MIB:-16}
memory_max=${BENCH_DISK_MEMORY_MAX:-64M}
port=18730 rcopy_port=18731
mibs() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
rate() { awk -v b="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.2f", b / s / 1048576; else print "n/a" }'; }

# The tools' digest cache would be the host's ~/.cache over 9p: keep it in the guest.
export XDG_CACHE_HOME=$S/cache
rm -rf "$S" "$D"
mkdir -p "$S/ref/tree" "$D/tree" "$XDG_CACHE_HOME"

# rdma-send before the digest-at-end default landed has --digest-at-end and no --digest-first.
if "$send" --help | grep -q -- --digest-first; then
  at_end=() first=(--digest-first)
else
  at_end=(--digest-at-end) first=()
fi

# The cgroup. Reads of the device are charged to the cgroup of the task that issues them (a
# read(2), a page fault on a mapping, readahead, a worker thread of the same process), and
# io.stat counts them per device whatever the process's lifetime: reading it after the
# command has exited is exact, where /proc/PID/io is gone by then. The disk is the only
# thing read from it, so rbytes for its MAJ:MIN is what the command made the disk read.
cg_root=/sys/fs/cgroup
grep -q "^[^ ]* $cg_root cgroup2 " /proc/mounts || mount -t cgroup2 cgroup2 "$cg_root"
echo "+memory +io" >"$cg_root/cgroup.subtree_control"
cg=$cg_root/rdmax-bench-disk
[[ -d $cg ]] || mkdir "$cg"
echo "$memory_max" >"$cg/memory.max"
disk_dev=$(findmnt -no MAJ:MIN --target "$RXE_DISK" | tr -d " ")
[[ -n $disk_dev ]] || die "no device under $RXE_DISK"
# (n printed as the string it is: awk would print a sum past 2^31 as 2.1e+09.)
rbytes() { awk -v d="$disk_dev" '$1 == d { for (i = 2; i <= NF; i++) if (sub(/^rbytes=/, "", $i)) n = $i }
  END { print (n == "" ? 0 : n) }' "$cg/io.stat"; }
oom_kills() { awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events"; }
# in_cgroup CMD...: CMD as a member of the cgroup from its first instruction.
in_cgroup() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"; }

echo "bench-disk: preparing $mib MiB and $files x $file_mib MiB on $RXE_DISK ($disk_dev)" >&2
head -c $((mib << 20)) /dev/urandom >"$S/ref/one.bin"
for i in $(seq 1 "$files"); do head -c $((file_mib << 20)) /dev/urandom >"$S/ref/tree/f$i"; done
cp "$S/ref/one.bin" "$D/one.bin"
cp "$S/ref/tree/"* "$D/tree/"
sync
one_bytes=$((mib << 20)) tree_bytes=$((files * file_mib << 20))

# A receiver of its own for each rdma-send run, into a fresh directory: nothing it holds
# (a file, a partial) can spare the sender a byte. It should leave no partial behind.
recv_pid=""
start_receiver() {
  rm -rf "$S/out" && mkdir -p "$S/out"
  "$recv" -a "$RXE_ADDR" -p "$port" -o "$S/out" --slot-size 1M --slots 16 --overwrite -q \
    2>>"$S/recv.log" &
  recv_pid=$!
  wait_cm_listening "$port" || die "rdma-recv is not listening: $(tail -n 3 "$S/recv.log")"
}
stop_receiver() {
  local left=0
  [[ -d $S/out/.rdmax-partial ]] && left=$(find "$S/out/.rdmax-partial" -type f | wc -l)
  ((left == 0)) || echo "bench-disk: $1: the receiver kept $left partial file(s) after a good run" >&2
  kill "$recv_pid" 2>/dev/null || true
  wait "$recv_pid" || true
  recv_pid=""
}
(cd / && exec rcopy -p "$rcopy_port") >"$S/rcopy-server.log" 2>&1 &
rcopy_pid=$!
trap 'kill $recv_pid $rcopy_pid 2>/dev/null || true' EXIT
wait_cm_listening "$rcopy_port" || die "rcopy's server is not listening: $(tail -n 3 "$S/rcopy-server.log")"

# For the reading of the figures: the guest's hashing and sending rates with no disk at all
# (the reference in tmpfs), which the throttled disk must stay below.
t=$(now)
"$send" --checksum --no-digest-cache "$S/ref/one.bin" >/dev/null || die "rdma-send --checksum failed"
hash_s=$(elapsed "$t")
start_receiver
t=$(now)
"$send" -H "$RXE_ADDR" -p "$port" --no-digest-cache -q "${at_end[@]}" "$S/ref/one.bin" >/dev/null ||
  die "rdma-send from tmpfs failed"
tmpfs_s=$(elapsed "$t")
cmp -s "$S/ref/one.bin" "$S/out/one.bin" || die "rdma-send from tmpfs: the copy differs"
stop_receiver tmpfs

# shellcheck disable=SC2317 # both run through export -f
rcopy_tree() {
  local f
  mkdir -p "$S/out/tree"
  for f in "$D/tree/"*; do rcopy "$f" "$RXE_ADDR:$S/out/tree/${f##*/}" -p "$rcopy_port" || return; done
}
# shellcheck disable=SC2317
dd_tree() {
  local f
  for f in "$D/tree/"*; do dd if="$f" of=/dev/null bs=1M status=none || return; done
}
# The functions above run in a child shell inside the cgroup.
export -f rcopy_tree dd_tree
export D S RXE_ADDR rcopy_port

# sent_all BYTES: rdma-send's --json (in $S/run.out) says every byte went on the wire: no
# file resumed or found identical, the bytes sent add up to the data's.
sent_all() {
  jq -e --argjson b "$1" '.resumed == 0 and .identical == 0 and .failed == 0 and .not_sent == 0 and
    ([.entries[] | select(.kind == "file") | .bytes_sent] | add) == $b' "$S/run.out" >/dev/null
}
seconds_of() { jq -r --arg p "$1" '.seconds[$p] * 10 | round / 10' "$S/run.out"; }

# measure DATA TOOL CMD...: CMD with the page cache dropped, in the cgroup, into a fresh
# $S/out; the copy checked. Sets secs[DATA/TOOL] and from_disk[DATA/TOOL] (bytes read from
# the device).
declare -A secs from_disk
measure() {
  local data=$1 key=$1/$2 r0 k0 t0 rc=0 bytes=$one_bytes phases=""
  shift 2
  [[ $data == tree ]] && bytes=$tree_bytes
  # (A receiver made its fresh directory itself, and holds it open.)
  [[ -n $recv_pid ]] || { rm -rf "$S/out" && mkdir -p "$S/out"; }
  sync
  echo 3 >/proc/sys/vm/drop_caches
  r0=$(rbytes) k0=$(oom_kills) t0=$(now)
  in_cgroup "$@" >"$S/run.out" 2>"$S/run.log" || rc=$?
  secs[$key]=$(elapsed "$t0")
  from_disk[$key]=$(($(rbytes) - r0))
  (($(oom_kills) == k0)) || die "$key: killed by the cgroup's OOM killer (memory.max $memory_max)"
  ((rc == 0)) || die "$key failed (status $rc): $(tail -n 5 "$S/run.log" "$S/run.out")"
  case $key in
    */dd) ;;
    one/*) cmp -s "$S/ref/one.bin" "$S/out/one.bin" || die "$key: the copy differs" ;;
    tree/*) diff -r "$S/ref/tree" "$S/out/tree" >/dev/null || die "$key: the copy differs" ;;
  esac
  case $key in
    */at-end | */first)
      sent_all "$bytes" || die "$key: not every byte was sent: $(head -c 600 "$S/run.out")"
      phases=" (rdma-send: hashing $(seconds_of hash) s, data $(seconds_of data) s)"
      ;;
  esac
  echo "bench-disk: $key ${secs[$key]} s, $(mibs "${from_disk[$key]}") MiB read from the disk$phases" >&2
}

tools=(dd rcopy at-end first)
for data in one tree; do
  for tool in "${tools[@]}"; do
    case $data/$tool in
      one/dd) measure one dd dd if="$D/one.bin" of=/dev/null bs=1M status=none ;;
      tree/dd) measure tree dd bash -c dd_tree ;;
      one/rcopy) measure one rcopy rcopy "$D/one.bin" "$RXE_ADDR:$S/out/one.bin" -p "$rcopy_port" ;;
      tree/rcopy) measure tree rcopy bash -c rcopy_tree ;;
      one/at-end | one/first | tree/at-end | tree/first)
        flags=("${at_end[@]}")
        [[ $tool == first ]] && flags=("${first[@]}")
        what=("$D/one.bin")
        [[ $data == tree ]] && what=(-r "$D/tree")
        start_receiver
        measure "$data" "$tool" "$send" -H "$RXE_ADDR" -p "$port" --no-digest-cache -q --json \
          "${flags[@]}" "${what[@]}"
        stop_receiver "$data/$tool"
        ;;
    esac
  done
done

label() {
  case $1 in
    dd) echo 'dd if=FILE of=/dev/null bs=1M (the disk itself)' ;;
    rcopy) echo 'rcopy (rsockets)' ;;
    at-end) echo 'rdma-send, digest at the end (default)' ;;
    first) echo 'rdma-send --digest-first' ;;
  esac
}
data_label() {
  if [[ $1 == one ]]; then echo "1 x $mib MiB"; else echo "$files x $file_mib MiB (-r)"; fi
}
table_a="#### (a) Bytes read from the disk per byte sent (first send, page cache dropped, sender's memory.max $memory_max)

| data | tool | read from the disk (MiB) | sent (MiB) | read / sent |
|---|---|---|---|---|"
table_b="#### (b) Whole run from the throttled disk against the disk's own rate (same boot)

| data | tool | whole run (s) | MiB/s | x dd |
|---|---|---|---|---|"
for data in one tree; do
  bytes=$one_bytes
  [[ $data == tree ]] && bytes=$tree_bytes
  for tool in "${tools[@]}"; do
    key=$data/$tool
    table_a+=$'\n'"| $(data_label "$data") | $(label "$tool") | $(mibs "${from_disk[$key]}") | $(mibs "$bytes") | $(ratio "${from_disk[$key]}" "$bytes") |"
    table_b+=$'\n'"| $(data_label "$data") | $(label "$tool") | ${secs[$key]} | $(rate "$bytes" "${secs[$key]}") | $(ratio "${secs[$data/dd]}" "${secs[$key]}") |"
  done
done
note="Run: $(date -u +%Y-%m-%dT%H:%MZ), $RXE_MODE mode, $(nproc) vCPU, kernel $(uname -r), ext4 on a virtio disk; one run each (a median of 1). Without the disk, in the same boot (the $mib MiB file in tmpfs): \`rdma-send --checksum\` $hash_s s ($(rate "$one_bytes" "$hash_s") MiB/s hashing), rdma-send to rdma-recv $tmpfs_s s ($(rate "$one_bytes" "$tmpfs_s") MiB/s).

Targets (issue 25), rdma-send with the digest at the end: (a) read / sent 1.0; (b) >= 0.85x dd."
out=$(printf '%s\n\n%s\n\n%s\n' "$table_a" "$table_b" "$note")
echo "$out"
[[ -n ${BENCH_RESULTS:-} ]] && printf '\n%s\n' "$out" >>"$BENCH_RESULTS"
exit 0
