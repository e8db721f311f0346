#!/usr/bin/env bash
# The hashing half of scripts/bench.sh, on this machine outside the test bed: the digest
# rdma-send computes, on 1 thread and on every CPU, against sha256sum, fsverity digest and
# b3sum on the same file in the page cache. Checks that rdma-send prints exactly fsverity's
# and b3sum's lines.
# Prints a Markdown table.
#   bench-hashing.sh RDMA_SEND MIB
set -euo pipefail
send=$1 mib=$2
file=$(mktemp "${TMPDIR:-/tmp}/rdmax-hash-bench.XXXXXX")
trap 'rm -f "$file"' EXIT
head -c $((mib << 20)) /dev/urandom >"$file"
cat "$file" >/dev/null  # in the page cache for every tool alike
cpus=$(nproc)
# best of three wall-clock seconds for COMMAND...
best() {
  local best_s=999999 t0 s
  for _ in 1 2 3; do
    t0=$(date +%s.%N)
    "$@" >/dev/null
    s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.3f", b-a}')
    best_s=$(awk -v a="$best_s" -v b="$s" 'BEGIN{print (b < a) ? b : a}')
  done
  echo "$best_s"
}
rate() { awk -v m="$mib" -v s="$1" 'BEGIN{printf "%.0f", m/s}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
fsv_line=$(fsverity digest --hash-alg=sha256 --block-size=4096 "$file")
ours_line=$("$send" --checksum --no-digest-cache --digest fsverity "$file")
[[ $ours_line == "$fsv_line" ]] || { echo "bench: rdma-send --checksum --digest fsverity printed '$ours_line', fsverity digest '$fsv_line'" >&2; exit 1; }
b3_line=$(b3sum "$file")
ours_b3=$("$send" --checksum --no-digest-cache --digest blake3 "$file")
[[ $ours_b3 == "$b3_line" ]] || { echo "bench: rdma-send --checksum --digest blake3 printed '$ours_b3', b3sum '$b3_line'" >&2; exit 1; }
sha_s=$(best sha256sum "$file")
b3_one_ref=$(best b3sum --num-threads 1 "$file")
b3_all_ref=$(best b3sum "$file")
b3_one=$(best "$send" --checksum --no-digest-cache --digest blake3 --hash-threads 1 "$file")
b3_all=$(best "$send" --checksum --no-digest-cache --digest blake3 --hash-threads "$cpus" "$file")
fsv_s=$(best fsverity digest --hash-alg=sha256 --block-size=4096 "$file")
one_s=$(best "$send" --checksum --no-digest-cache --digest fsverity --hash-threads 1 "$file")
all_s=$(best "$send" --checksum --no-digest-cache --digest fsverity --hash-threads "$cpus" "$file")
whole_s=$(best "$send" --checksum --no-digest-cache --digest sha256 "$file")
echo "Hashing on this machine (outside the test bed): $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), SHA extensions: $(grep -q sha_ni /proc/cpuinfo && echo yes || echo no); a $mib MiB file in the page cache; best of three."
echo
echo "| hashing | MiB/s | seconds |"
echo "| ------- | ----: | ------: |"
echo "| sha256sum | $(rate "$sha_s") | $sha_s |"
echo "| fsverity digest (fs-verity, 1 thread) | $(rate "$fsv_s") | $fsv_s |"
echo "| rdma-send --checksum --digest sha256 (whole-file SHA-256, OpenSSL) | $(rate "$whole_s") | $whole_s |"
echo "| rdma-send --checksum, fs-verity digest, 1 thread | $(rate "$one_s") | $one_s |"
echo "| rdma-send --checksum, fs-verity digest, $cpus threads | $(rate "$all_s") | $all_s |"
echo "| b3sum --num-threads 1 (BLAKE3) | $(rate "$b3_one_ref") | $b3_one_ref |"
echo "| b3sum (BLAKE3, $cpus threads) | $(rate "$b3_all_ref") | $b3_all_ref |"
echo "| rdma-send --checksum --digest blake3, 1 thread | $(rate "$b3_one") | $b3_one |"
echo "| rdma-send --checksum --digest blake3, $cpus threads | $(rate "$b3_all") | $b3_all |"
echo
echo "| ratio | measured | target |"
echo "| ----- | -------: | -----: |"
echo "| fs-verity digest on $cpus threads / sha256sum (throughput) | $(ratio "$sha_s" "$all_s") | >= 1.8 |"
echo "| fs-verity digest on $cpus threads / on 1 thread (throughput) | $(ratio "$one_s" "$all_s") | |"
echo "| fs-verity digest on 1 thread / fsverity digest (throughput) | $(ratio "$fsv_s" "$one_s") | |"
echo "| BLAKE3 on $cpus threads / fs-verity on $cpus threads (throughput) | $(ratio "$all_s" "$b3_all") | |"
echo "| rdma-send BLAKE3 on $cpus threads / b3sum (throughput) | $(ratio "$b3_all_ref" "$b3_all") | |"
echo "| rdma-send's line = fsverity digest's line, = b3sum's with --digest blake3 | yes | yes |"
