#!/usr/bin/env bash
# One big file into a disk with direct I/O (issue 49): a file of BENCH_DIRECT_MIB (default
# 1024) MiB sent with rdma-send to rdma-recv (its default --direct-io) writing onto the
# guest's virtio disk, ext4 then XFS, beside `dd oflag=direct` of the same bytes onto the
# same file system in the same boot. Runs inside scripts/rxe-run --disk (one guest:
# BENCH_ONLY=direct scripts/bench.sh). With BENCH_DIRECT_BEFORE=DIR, the programs in DIR
# (another build, such as the one before the write lanes) are timed alternately with ours.
# Each copy is checked with cmp. Echoes a Markdown table, and appends it to $BENCH_RESULTS
# when that is set.
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
[[ -n ${RXE_DISK:-} ]] || { echo "bench-direct: needs scripts/rxe-run --disk" >&2; exit 2; }
mib=${BENCH_DIRECT_MIB:-1024}
S=$RXE_SCRATCH/bench-direct
dev=$(findmnt -no SOURCE "$RXE_DISK")
port=18730
die() { echo "bench-direct: $*" >&2; exit 1; }
mkdir -p "$S"
echo "bench-direct: preparing $mib MiB" >&2
head -c $((mib << 20)) /dev/urandom >"$S/src.bin"
builds=(ours="$RDMAX_BIN")
[[ -n ${BENCH_DIRECT_BEFORE:-} ]] && builds=(before="$BENCH_DIRECT_BEFORE" "${builds[@]}")
rows=""
for fs in ext4 xfs; do
  if [[ $fs == xfs ]]; then
    umount "$RXE_DISK"
    modprobe xfs || die "modprobe xfs failed"
    mkfs.xfs -f -q "$dev" || die "mkfs.xfs failed"
    mount -t xfs "$dev" "$RXE_DISK" || die "mounting XFS failed"
  fi
  for run in 1 2; do
    rm -f "$RXE_DISK/dd.bin"
    sync
    start=$(now)
    dd if="$S/src.bin" of="$RXE_DISK/dd.bin" bs=1M oflag=direct conv=fsync status=none
    dd_s=$(elapsed "$start")
    cmp -s "$S/src.bin" "$RXE_DISK/dd.bin" || die "$fs: dd's copy differs"
    rm -f "$RXE_DISK/dd.bin"
    rows+="| $fs | $run | dd oflag=direct | $dd_s | $(ratio "$mib" "$dd_s") | 1.00 |"$'\n'
    for b in "${builds[@]}"; do
      name=${b%%=*} bin=${b#*=}
      rm -rf "$RXE_DISK/out"; mkdir -p "$RXE_DISK/out"
      sync
      "$bin/rdma-recv" -a "$RXE_ADDR" -p "$port" -o "$RXE_DISK/out" -q 2>"$S/recv.log" &
      pid=$!
      wait_cm_listening "$port" || die "rdma-recv is not listening: $(tail -n 3 "$S/recv.log")"
      start=$(now)
      "$bin/rdma-send" -H "$RXE_ADDR" -p "$port" "$S/src.bin" --no-digest-cache -q >/dev/null ||
        die "$fs: rdma-send ($name) failed"
      took=$(elapsed "$start")
      kill "$pid"; wait "$pid" || true
      cmp -s "$S/src.bin" "$RXE_DISK/out/src.bin" || die "$fs: the copy ($name) differs"
      rows+="| $fs | $run | rdma-send ($name) | $took | $(ratio "$mib" "$took") | $(ratio "$dd_s" "$took") |"$'\n'
    done
  done
done
table="#### One file of $mib MiB onto a virtio disk, direct I/O

| file system | run | tool | seconds | MiB/s | x dd |
|---|---|---|---|---|---|
$rows"
echo "$table"
[[ -n ${BENCH_RESULTS:-} ]] && printf '\n%s\n' "$table" >>"$BENCH_RESULTS"
exit 0
