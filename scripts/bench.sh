#!/usr/bin/env bash
# Benchmark (issues 4, 9 and 13). First, on this machine outside the test bed, the hashing:
# rdma-send's fs-verity digest on 1 thread and on every CPU against sha256sum and fsverity
# digest (scripts/lib/bench-hashing.sh, BENCH_HASH_MIB, default 1024). Then in ONE Soft-RoCE
# boot, on the same rxe device and the same bytes,
# runs ib_write_bw (the link's ceiling), rcopy (rdma-core's rsockets file copy), a TCP copy
# (socat) over the same netdev, sha256sum (the hashing floor), and rdma-send -> rdma-recv
# for sizes from 4 KiB to BENCH_MAX_MIB (default 256) MiB, plus the receiver's peak RSS
# for a BENCH_RSS_MIB (default 1024) MiB file with a 16 MiB window. Prints a table with
# the ratios and rewrites the results section of docs/BENCHMARKS.md.
# The guest run adds the second send of the unchanged file (digest cached), --digest sha256,
# and the CPU time every tool costs per GiB (the guest's /proc/stat). Last, in the same
# boot, trees of 1000 x 4 KiB and 16 x 16 MiB (scripts/lib/bench-trees-guest.sh): rdma-send -r
# with -P 1 and -P 2 against one rdma-send per file and against tar | socat over TCP.
# First of all, natively (no device, no emulation): the transfer pipeline's CPU cost per GiB
# on each side against its floor (rdmax-pipeline-bench, tests/bench/pipeline_bench.cpp).
#   scripts/bench.sh                      (installs and builds first, like the other scripts)
#   BENCH_ONLY=trees scripts/bench.sh     (only the trees; prints, does not rewrite the doc)
#   BENCH_ONLY=pipeline scripts/bench.sh  (only the native pipeline, the receiver into tmpfs
#                                         and with --direct-io into BENCH_PIPELINE_DISK_DIR,
#                                         default /var/tmp; prints)
#   BENCH_ONLY=first-chunk scripts/bench.sh (only how soon a 1 GiB tree's first chunk
#                                         leaves, scripts/lib/bench-first-chunk-guest.sh)
#   BENCH_ONLY=direct scripts/bench.sh    (only one 1 GiB file onto ext4 and XFS with direct
#                                         I/O beside dd oflag=direct,
#                                         scripts/lib/bench-direct-guest.sh)
#   BENCH_ONLY=rails scripts/bench.sh     (only one 1 GiB file over one and two devices between
#                                         two hosts joined by two wires, beside ib_write_bw;
#                                         scripts/lib/bench-rails-guest.sh; prints)
#   BENCH_ONLY=disk scripts/bench.sh      (only what the disk sees: files on an ext4 virtio
#                                         disk read at BENCH_DISK_BPS, default 8000000 B/s;
#                                         scripts/lib/bench-disk-guest.sh; prints)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-programs.sh
export BENCH_MAX_MIB=${BENCH_MAX_MIB:-256} BENCH_RSS_MIB=${BENCH_RSS_MIB:-1024}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
export BENCH_RESULTS=$results
if [[ ${BENCH_ONLY:-} == trees || ${BENCH_ONLY:-} == first-chunk ]]; then
  export BENCH_ONLY
  scripts/rxe-run --mem 4096 --timeout 900 -- scripts/lib/bench-guest.sh
  exit 0
fi
if [[ ${BENCH_ONLY:-} == direct ]]; then
  # One 1 GiB file onto ext4 and XFS with direct I/O, beside dd oflag=direct; a few minutes.
  scripts/rxe-run --mem 4096 --disk 3072 --timeout 1500 -- scripts/lib/bench-direct-guest.sh
  exit 0
fi
if [[ ${BENCH_ONLY:-} == rails ]]; then
  # The file lives in memory on both hosts: 3 GiB each. About 8 minutes.
  scripts/rxe-run --hosts 2 --rails 2 --mem 3072 --timeout 1500 -- scripts/lib/bench-rails-guest.sh
  exit 0
fi
if [[ ${BENCH_ONLY:-} == disk ]]; then
  # 512 MiB of data on a 1 GiB disk; about 7 minutes, most of it reading at 8 MB/s.
  scripts/rxe-run --mem 4096 --disk "1024:${BENCH_DISK_BPS:-8000000}" --timeout 1500 -- \
    scripts/lib/bench-disk-guest.sh
  exit 0
fi
cmake --build "$build" -j "$(nproc)" --target rdmax-pipeline-bench >/dev/null
pipeline=$("$build/bin/rdmax-pipeline-bench" --mib "${BENCH_PIPELINE_MIB:-1024}" --runs 3)
# Again with the receiver writing into a disk's file system, direct (rdma-recv --direct-io).
pipeline+=$'\n\n'$("$build/bin/rdmax-pipeline-bench" --mib "${BENCH_PIPELINE_MIB:-1024}" --runs 3 \
  --out "${BENCH_PIPELINE_DISK_DIR:-/var/tmp}" --direct-io)
# And with BLAKE3 at both ends (--digest blake3), against its own floor; each transfer also
# again with the receiver's --metrics scraped every 100 ms (docs/BENCHMARKS.md, issue 40).
pipeline+=$'\n\n'$("$build/bin/rdmax-pipeline-bench" --mib "${BENCH_PIPELINE_MIB:-1024}" --runs 3 \
  --digest blake3 --scrape 100)
echo "$pipeline"
[[ ${BENCH_ONLY:-} == pipeline ]] && exit 0
cmake --build "$build" -j "$(nproc)" --target rdmax-revoke-bench >/dev/null
hashing=$(scripts/lib/bench-hashing.sh "$build/bin/rdma-send" "${BENCH_HASH_MIB:-1024}")
echo "$hashing"
scripts/rxe-run --mem 4096 --timeout 900 -- scripts/lib/bench-guest.sh
printf '\n%s\n\n%s\n' "$hashing" "$pipeline" >>"$results"
cat "$results"
scripts/lib/bench-publish "$results" docs/BENCHMARKS.md
echo "bench: results written to docs/BENCHMARKS.md"
