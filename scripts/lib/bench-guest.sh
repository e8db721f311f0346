#!/usr/bin/env bash
# The measuring half of scripts/bench.sh; runs inside scripts/rxe-run. Writes a Markdown
# table to $BENCH_RESULTS (a host path) and echoes it.
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
# BENCH_ONLY=trees: only the trees (scripts/lib/bench-trees-guest.sh).
[[ ${BENCH_ONLY:-} == trees ]] && exec "$(dirname "$0")/bench-trees-guest.sh"
# BENCH_ONLY=first-chunk: only how soon a tree's first chunk leaves (bench-first-chunk-guest.sh).
[[ ${BENCH_ONLY:-} == first-chunk ]] && exec "$(dirname "$0")/bench-first-chunk-guest.sh"
S=$RXE_SCRATCH/bench
mkdir -p "$S/out" "$S/rcopy" "$S/tcp"
send=$RDMAX_BIN/rdma-send recv=$RDMAX_BIN/rdma-recv
mib=$BENCH_MAX_MIB
bytes=$((mib << 20))
rate() { awk -v b="$1" -v s="$2" 'BEGIN{ if (s > 0) printf "%.1f", b/s/1048576; else print "n/a"}'; }
json_num() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
# CPU time of the whole guest (both ends, the kernel's rxe work, interrupts), in seconds:
# on this emulated machine the two vCPUs are shared by the "NIC" and the hashing, so the
# CPU a tool costs per GiB says what wall-clock ratios cannot.
hz=$(getconf CLK_TCK)
cpu_now() { awk -v hz="$hz" '/^cpu / {printf "%.2f", ($2+$3+$4+$7+$8)/hz}' /proc/stat; }
per_gib() { awk -v c="$1" -v b="$2" 'BEGIN{printf "%.2f", c/(b/1073741824)}'; }
# The digest cache of these runs.
export XDG_CACHE_HOME=$S/cache
rm -rf "$XDG_CACHE_HOME"

echo "bench: preparing a $mib MiB file" >&2
head -c "$bytes" /dev/urandom >"$S/file"
cat "$S/file" >/dev/null  # resident in the page cache for every tool alike

# The hashing floor.
t=$(now); c=$(cpu_now); sha256sum "$S/file" >/dev/null; sha_s=$(elapsed "$t"); sha_cpu=$(awk -v a="$c" -v b="$(cpu_now)" 'BEGIN{print b-a}')

# The link's ceiling: RDMA WRITE of 1 MiB messages (our slot size), same device.
ib_write_bw -d "$RXE_DEV" -s 1048576 -n "$mib" -F -p 18700 >"$S/ibw-server.log" 2>&1 &
wait_tcp_listening 18700
c=$(cpu_now)
ib_write_bw -d "$RXE_DEV" -s 1048576 -n "$mib" -F -p 18700 "$RXE_ADDR" >"$S/ibw.log" 2>&1
wait
ibw_cpu=$(awk -v a="$c" -v b="$(cpu_now)" 'BEGIN{print b-a}')
ibw_mbs=$(awk '$1 == 1048576 && NF >= 5 {print $4}' "$S/ibw.log" | tail -1)  # MB/s (10^6)
ibw_bps=$(awk -v m="$ibw_mbs" 'BEGIN{printf "%.0f", m*1000000}')
ibw_s=$(awk -v b="$bytes" -v r="$ibw_bps" 'BEGIN{printf "%.3f", b/r}')

# rdma-core's own file copy over rsockets.
(cd "$S/rcopy" && exec rcopy -p 18701) >"$S/rcopy-server.log" 2>&1 &
rcopy_server=$!
sleep 0.5
# rcopy parses its options itself: -p must follow the positional arguments.
t=$(now); c=$(cpu_now); rcopy "$S/file" "$RXE_ADDR:$S/rcopy/file" -p 18701 >"$S/rcopy.log" 2>&1; rcopy_s=$(elapsed "$t")
rcopy_cpu=$(awk -v a="$c" -v b="$(cpu_now)" 'BEGIN{print b-a}')
kill $rcopy_server 2>/dev/null || true
cmp -s "$S/file" "$S/rcopy/file" || { echo "bench: rcopy's copy differs" >&2; rcopy_s=0; }

# A TCP copy over the same netdev.
socat -u "TCP-LISTEN:18702,bind=$RXE_ADDR,reuseaddr" "CREATE:$S/tcp/file" &
tcp_server=$!
wait_tcp_listening 18702
t=$(now); c=$(cpu_now); socat -u "FILE:$S/file" "TCP:$RXE_ADDR:18702"; wait $tcp_server; tcp_s=$(elapsed "$t")
tcp_cpu=$(awk -v a="$c" -v b="$(cpu_now)" 'BEGIN{print b-a}')
cmp -s "$S/file" "$S/tcp/file" || { echo "bench: the TCP copy differs" >&2; tcp_s=0; }
rm -f "$S/rcopy/file" "$S/tcp/file"

# rdma-send -> rdma-recv, 16 x 1 MiB window.
"$recv" -a "$RXE_ADDR" -p 18703 -o "$S/out" --slot-size 1M --slots 16 --overwrite -q 2>"$S/recv.log" &
recv_pid=$!
wait_cm_listening 18703 || { echo "bench: rdma-recv is not listening: $(tail -n 3 "$S/recv.log")" >&2; exit 1; }
ours_rows=""
sizes=()
for size in 4K 1M 16M 64M; do (($(numfmt --from=iec "$size") < bytes)) && sizes+=("$size"); done
sizes+=("${mib}M")
for size in "${sizes[@]}"; do head -c "$(numfmt --from=iec "$size")" "$S/file" >"$S/in-$size"; done
# The digest cache does not remember a file changed within the last 2 s (a change within one
# timestamp tick would be invisible): let the inputs age past that, as any real file has.
sleep 2.2
# send_one NAME ARGS...: rdma-send --json of $S/NAME plus ARGS; checks the copy, removes it.
# Sets out (the JSON) and cpu (guest CPU seconds of the run).
send_one() {
  local name=$1; shift
  c=$(cpu_now)
  out=$("$send" -H "$RXE_ADDR" -p 18703 --json -q "$@" "$S/$name")
  cpu=$(awk -v a="$c" -v b="$(cpu_now)" 'BEGIN{print b-a}')
  cmp -s "$S/$name" "$S/out/$name" || { echo "bench: $name ($*) differs" >&2; exit 1; }
  rm -f "$S/out/$name"
}
for size in "${sizes[@]}"; do
  n=$(numfmt --from=iec "$size")
  send_one "in-$size"
  data=$(json_num data <<<"$out") total=$(json_num total <<<"$out") hash=$(json_num hash <<<"$out")
  ours_rows+="| rdma-send $size | $(rate "$n" "$data") MiB/s data | $total s total ($hash s hashing) |"$'\n'
  [[ $size == "${mib}M" ]] && { ours_data=$data ours_total=$total ours_hash=$hash ours_cpu=$cpu; }
done
# The largest file again, unchanged: its digest comes from the cache.
send_one "in-${mib}M"
grep -q '"from_cache":true' <<<"$out" || { echo "bench: the second send was hashed again: $out" >&2; exit 1; }
again_data=$(json_num data <<<"$out") again_total=$(json_num total <<<"$out") again_cpu=$cpu
# The whole-file SHA-256 (version 1's digest, one core per end), not cached.
send_one "in-${mib}M" --digest sha256 --no-digest-cache
sha_data=$(json_num data <<<"$out") sha_total=$(json_num total <<<"$out") sha_run_cpu=$cpu
# --zero-copy (the file's pages registered instead of copied), hashed as the first send was.
send_one "in-${mib}M" --zero-copy --no-digest-cache
grep -q '"zero_copy":true' <<<"$out" || { echo "bench: --zero-copy did not go zero-copy: $out" >&2; exit 1; }
zc_data=$(json_num data <<<"$out") zc_total=$(json_num total <<<"$out")
kill $recv_pid; wait $recv_pid || true

# Revoking a slot's key: re-registration (what rdma-recv does) against type-2 memory
# windows, with the safety checks (tests/bench/revoke_bench.cpp). Its tables go to the
# results; a failed check shows there as "no" (rxe does not confine a window to its own
# bounds when its region spans several slots), so its exit status does not stop the run.
revoke=$(RDMAX_BIN=$RDMAX_BIN scripts/lib/bench-revoke.sh --cycles 1000 2>"$S/revoke.err" |
  grep -E '^(\||$|## Slot|Ratio)' | sed 's/^## \(.*\)/**\1**/' || true)
[[ -n $revoke ]] || { echo "bench: the revocation benchmark printed nothing:" >&2; cat "$S/revoke.err" >&2; }

# Receiver memory for a large file with a 16 MiB window.
rss_mib=$BENCH_RSS_MIB
rm -f "$S/in-"* "$S/out/"* "$S/file"
head -c $((rss_mib << 20)) /dev/urandom >"$S/big"
"$recv" -a "$RXE_ADDR" -p 18704 -o "$S/out" --slot-size 1M --slots 16 -q 2>"$S/recv2.log" &
recv_pid=$!
wait_cm_listening 18704 || { echo "bench: rdma-recv is not listening: $(tail -n 3 "$S/recv2.log")" >&2; exit 1; }
big=$("$send" -H "$RXE_ADDR" -p 18704 --json -q "$S/big")
cmp -s "$S/big" "$S/out/big" || { echo "bench: the big transfer differs" >&2; exit 1; }
hwm_kib=$(awk '/VmHWM/ {print $2}' "/proc/$recv_pid/status")
kill $recv_pid; wait $recv_pid || true
big_rate=$(rate $((rss_mib << 20)) "$(json_num data <<<"$big")")

sha_rate=$(rate "$bytes" "$sha_s")
ours_rate=$(rate "$bytes" "$ours_data")
{
  echo "Run: $(date -u +%Y-%m-%dT%H:%MZ), $RXE_MODE mode, $(nproc) vCPU, kernel $(uname -r), device $RXE_DEV, netdev MTU $(cat /sys/class/net/"$RXE_NETDEV"/mtu), ${mib} MiB file."
  echo
  echo "| tool | throughput | time for $mib MiB |"
  echo "| ---- | ---------: | ---------: |"
  echo "| ib_write_bw (1 MiB writes) | $(rate "$bytes" "$ibw_s") MiB/s | $ibw_s s |"
  echo "| rcopy (rsockets) | $(rate "$bytes" "$rcopy_s") MiB/s | $rcopy_s s |"
  echo "| TCP (socat) | $(rate "$bytes" "$tcp_s") MiB/s | $tcp_s s |"
  echo "| sha256sum | $sha_rate MiB/s | $sha_s s |"
  echo "| rdma-send data phase | $ours_rate MiB/s | $ours_data s |"
  echo "| rdma-send whole run (hash + connect + data + verify) | $(rate "$bytes" "$ours_total") MiB/s | $ours_total s |"
  echo "| rdma-send second send of the unchanged file, whole run (digest cached) | $(rate "$bytes" "$again_total") MiB/s | $again_total s |"
  echo "| rdma-send --digest sha256 data phase | $(rate "$bytes" "$sha_data") MiB/s | $sha_data s |"
  echo "| rdma-send --digest sha256 whole run | $(rate "$bytes" "$sha_total") MiB/s | $sha_total s |"
  echo "| rdma-send --zero-copy data phase | $(rate "$bytes" "$zc_data") MiB/s | $zc_data s |"
  echo "| rdma-send --zero-copy whole run | $(rate "$bytes" "$zc_total") MiB/s | $zc_total s |"
  echo
  echo "| rdma-send by size | data phase | whole run |"
  echo "| ---- | ---: | ---: |"
  printf '%s' "$ours_rows"
  echo
  echo "| ratio | measured | target |"
  echo "| ----- | -------: | -----: |"
  echo "| data phase / ib_write_bw (throughput) | $(ratio "$ibw_s" "$ours_data") | >= 0.85 |"
  echo "| whole run / (sha256sum + ib_write_bw) (time) | $(ratio "$ours_total" "$(awk -v a="$sha_s" -v b="$ibw_s" 'BEGIN{print a+b}')") | <= 0.95 |"
  echo "| rdma-send whole run / rcopy (throughput) | $(ratio "$rcopy_s" "$ours_total") | > 1 |"
  echo "| second send (digest cached) whole run / rcopy (throughput) | $(ratio "$rcopy_s" "$again_total") | > 1 |"
  echo "| --digest sha256 whole run / (sha256sum + ib_write_bw) (time) | $(ratio "$sha_total" "$(awk -v a="$sha_s" -v b="$ibw_s" 'BEGIN{print a+b}')") | reference |"
  echo "| rdma-send data phase / rcopy (throughput) | $(ratio "$rcopy_s" "$ours_data") | > 1 |"
  echo "| rdma-send whole run / TCP copy (throughput) | $(ratio "$tcp_s" "$ours_total") | reference |"
  echo "| sender hashing share of the whole run | $(ratio "$ours_hash" "$ours_total") | |"
  echo
  echo "CPU time of the whole guest per GiB moved (both ends, the kernel's rxe work; 2 vCPUs = at most 2 s per second):"
  echo
  echo "| tool | CPU s per GiB | wall s per GiB |"
  echo "| ---- | ------------: | -------------: |"
  echo "| sha256sum (hashing only) | $(per_gib "$sha_cpu" "$bytes") | $(per_gib "$sha_s" "$bytes") |"
  echo "| ib_write_bw | $(per_gib "$ibw_cpu" "$bytes") | $(per_gib "$ibw_s" "$bytes") |"
  echo "| rcopy | $(per_gib "$rcopy_cpu" "$bytes") | $(per_gib "$rcopy_s" "$bytes") |"
  echo "| TCP (socat) | $(per_gib "$tcp_cpu" "$bytes") | $(per_gib "$tcp_s" "$bytes") |"
  echo "| rdma-send (BLAKE3 digest, the default, both ends hashing) | $(per_gib "$ours_cpu" "$bytes") | $(per_gib "$ours_total" "$bytes") |"
  echo "| rdma-send, digest cached (the receiver still hashes) | $(per_gib "$again_cpu" "$bytes") | $(per_gib "$again_total" "$bytes") |"
  echo "| rdma-send --digest sha256 | $(per_gib "$sha_run_cpu" "$bytes") | $(per_gib "$sha_total" "$bytes") |"
  echo
  echo "Receiver peak RSS (VmHWM) for a $rss_mib MiB file with a 16 MiB window: $((hwm_kib / 1024)) MiB (target < 64 MiB); that transfer's data phase ran at $big_rate MiB/s."
  echo
  echo "Revoking a slot's key, per cycle (revoke + grant), in the same boot:"
  echo
  echo "$revoke"
} | tee "$BENCH_RESULTS"

# The trees, in the same boot (issue 13).
"$(dirname "$0")/bench-trees-guest.sh"
"$(dirname "$0")/bench-first-chunk-guest.sh"
