#!/usr/bin/env bash
# The soak (issue 53; scripts/soak.sh runs it, ctest a short one): one rdma-recv on host A
# and several rdma-send commands on host B, each sending its own tree round after round
# (tests/e2e/soak_sender.sh: sealed, in clear over -P 2, fs-verity, without the digest
# cache), while an injector driven by a printed seed overlaps faults at random times:
#   sender-kill     kill -9 of one sender's rdma-send (B)
#   receiver-kill   kill -9 of rdma-recv, started again 2 s later as its unit would
#   wire-cut        every frame dropped both ways (netem loss 100%) for 2-8 s
#   disk-full       the receiver's file system (its own small disk) filled for 3-10 s
#   slow-disk       the receiver's cgroup limited to 4 MiB/s of writes for 5-15 s
#   memory          the receiver's cgroup memory.max just above what it uses, 5-15 s
#   hostile         a hostile peer of rdmax-attacker connecting meanwhile
# Each sender runs its command again after each failure until it exits 0. Invariants:
#   - a file under its final name never differs from its source: b3sum of every file as it
#     appears, against the sender's manifest;
#   - each completed round's tree equals its source (names and digests), then is removed;
#     once the faults stop, every command completes (5 minutes at most);
#   - at the end nothing is left: no temporary, no partial file; the receiver's QPs, MRs,
#     cm_ids and descriptors back to their idle count, its VmRSS near its idle level;
#   - the receiver exits only when killed, and each start serves again;
#   - every exit status is one rdma-send(1) documents for what happened: 137 only when that
#     sender was killed; 3 (the connection broke, the receiver stopped or refused) only while
#     another fault was on, or within 15 s after; 1 (not stored) only while the disk was full
#     or memory short; 4 (refused) only for NoSpace while the disk was full and NoMemory
#     while memory was short, or while the receiver still held a killed sender's or a cut
#     wire's connections (their windows count against --max-memory until it sees them gone,
#     at most its --timeout); never another.
# Settings: RDMAX_SOAK_MINUTES (3), RDMAX_SOAK_SEED (drawn, printed), RDMAX_SOAK_SENDERS (4),
# RDMAX_SOAK_MAX_LARGE (the largest file of a tree, bytes; 24 MiB). Needs the two-host
# topology with a disk of its own on host A: rxe-run --hosts 2 --disk MIB.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
[[ ${RXE_WIRE:-none} == real ]] || { echo "SKIP: soak.sh needs the two-host topology (rxe-run --hosts 2 --disk MIB)"; exit 0; }
[[ -n ${RXE_DISK:-} ]] || { echo "SKIP: soak.sh needs a disk of its own on host A (rxe-run --disk MIB)"; exit 0; }
need_programs send recv attacker
# Not errexit: this is a monitor that runs for an hour, and what goes wrong is reported as a
# violation or by fail, never by a silent exit in the middle of a check.
set +e

minutes=${RDMAX_SOAK_MINUTES:-3} senders=${RDMAX_SOAK_SENDERS:-4}
seed=${RDMAX_SOAK_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000))}
max_large=${RDMAX_SOAK_MAX_LARGE:-$((24 * 1048576))}
[[ $minutes =~ ^[1-9][0-9]*$ && $senders =~ ^[1-9][0-9]?$ && $seed =~ ^[0-9]+$ && $max_large =~ ^[0-9]+$ ]] ||
  fail "bad settings: minutes '$minutes', senders '$senders', seed '$seed', max_large '$max_large'"
echo "soak: seed $seed, $minutes minute(s), $senders senders, largest file up to $((max_large / 1048576)) MiB" \
  "(replay: scripts/soak.sh --seed $seed --minutes $minutes --senders $senders)"
RANDOM=$seed

port=18530 timeout_s=10 grace_s=15
out=$RXE_DISK/out ctl=$shared/soak
mkdir -p "$out" "$ctl/keys" "$ctl/done"
: >"$ctl/violations"
now() { echo "$EPOCHREALTIME"; }
t_start=$(now)
at() { awk -v a="$t_start" -v b="${1:-$(now)}" 'BEGIN { printf "%.1f", b - a }'; }  # seconds into the soak
violation() { echo "[$(at)s] $*" | tee -a "$ctl/violations" >&2; }
nap() { sleep "$1"; }  # (a coprocess's pipe, as rxe-peer waits, is closed in the subshells below)

# ---------------------------------------------------------------------------------
# Keys: each sender its own id, key and subdirectory (s0, s1, ...).
# ---------------------------------------------------------------------------------
(
  umask 077
  for ((i = 0; i < senders; i++)); do
    key=$(openssl rand -hex 32)
    echo "s$i $key s$i" >>"$ctl/keys/senders"
    echo "s$i $key" >"$ctl/keys/s$i.key"
  done
)
cat >"$ctl/config" <<EOF
seed=$seed max_large=$max_large port=$port send=$send timeout_s=$timeout_s
EOF

# ---------------------------------------------------------------------------------
# The receiver, in a cgroup of its own (memory and I/O limits), started again 2 s after
# each exit as rdma-recv.service's Restart= would; an exit the injector did not cause is a
# violation.
# ---------------------------------------------------------------------------------
cg=/sys/fs/cgroup
if ! mountpoint -q "$cg"; then mount -t cgroup2 none "$cg" || fail "cannot mount cgroup2 at $cg"; fi
echo "+memory +io" >"$cg/cgroup.subtree_control" || fail "cannot enable the memory and io controllers"
cg=$cg/soak-recv
mkdir -p "$cg"
disk_dev=$(mountpoint -d "$RXE_DISK") || fail "$RXE_DISK is not a mount point"
recv_log=$RXE_SCRATCH/soak-recv.log  # on A itself: -v writes much, and 9p is slow
: >"$recv_log"
recv_cmd=("$recv" -a "$RXE_ADDR" -p "$port" -o "$out" --senders "$ctl/keys/senders" --allow-clear
  --timeout "$timeout_s" --max-memory 192M -v)
supervise() {
  local n=0 pid rc
  while [[ ! -e $ctl/end ]]; do
    ((++n))
    (echo "$BASHPID" >"$cg/cgroup.procs" && exec "${recv_cmd[@]}") 2>>"$recv_log" </dev/null &
    pid=$!
    echo "$pid" >"$ctl/recv.pid.tmp" && mv "$ctl/recv.pid.tmp" "$ctl/recv.pid"
    echo "$(now) start $n pid $pid" >>"$ctl/recv.events"
    rc=0
    wait "$pid" || rc=$?
    if [[ -e $ctl/killed.$pid ]]; then
      echo "$(now) killed $pid status $rc" >>"$ctl/recv.events"
    elif [[ -e $ctl/end ]]; then
      echo "$(now) stopped $pid status $rc" >>"$ctl/recv.events"
      break
    else
      violation "the receiver (pid $pid) exited with status $rc, and nobody killed it; its log: $(tail -n 5 "$recv_log" | tr '\n' '|')"
    fi
    nap 2
  done
}
recv_pid() { cat "$ctl/recv.pid" 2>/dev/null; }
times_listening() { grep -c 'listening on' "$recv_log" 2>/dev/null || true; }
listening_more_than() { (($(times_listening) > $1)); }
supervise 2>>"$ctl/supervisor.err" &  # (bash reports each killed receiver there)
supervisor=$!
bg_pids+=("$supervisor")
wait_for 30 listening_more_than 0

# The receiver's footprint (lib.sh), whichever process it is now.
resources() { footprint "$(recv_pid)"; }
rss_kib() { vmrss_kib "$(recv_pid)"; }
# The idle level, after a warm-up transfer (a receiver sets some things up at its first
# connection), which is then removed.
head -c 1048576 /dev/urandom >"$ctl/warmup.bin"
rxe-peer "$send" -H "$RXE_ADDR" -p "$port" --timeout "$timeout_s" --no-progress \
  --key-file "$ctl/keys/s0.key" "$ctl/warmup.bin" >/dev/null 2>"$ctl/warmup.err" ||
  fail "the warm-up transfer failed: $(tail -n 3 "$ctl/warmup.err")"
cmp -s "$ctl/warmup.bin" "$out/s0/warmup.bin" || fail "the warm-up file arrived different"
rm -f "$out/s0/warmup.bin"
no_qps() { [[ $(resources) == "qp 0 "* ]]; }
eventually 10 no_qps || fail "QPs still open after the warm-up: $(resources)"
idle_resources=$(resources) idle_rss=$(rss_kib)
echo "soak: receiver pid $(recv_pid) idle: $idle_resources, VmRSS $idle_rss KiB"

# ---------------------------------------------------------------------------------
# The watcher: every file that appears under a final name is hashed once and compared
# with its sender's manifest; each round a sender reports done is compared whole, then
# removed. It also samples the receiver's VmRSS and descriptors (peaks).
# ---------------------------------------------------------------------------------
declare -A checked=() manifest=() verified_rounds=()
peak_rss=0 peak_fd=0 files_moved=0 bytes_moved=0
load_manifests() {
  local i digest path
  for ((i = 0; i < senders; i++)); do
    [[ -n ${manifest[s$i/empty]:-} || ! -s $ctl/manifest.s$i ]] && continue
    while read -r digest path; do manifest[s$i/$path]=$digest; done <"$ctl/manifest.s$i"
  done
}
# check_files: hashes the files not checked yet (one b3sum for all of them).
check_files() {
  local ino size mtime path key rel sender want digest todo=() keys=()
  while read -r ino size mtime path; do
    [[ -n $path ]] || continue
    key="$ino $size $mtime $path"
    [[ -n ${checked[$key]:-} ]] && continue
    case $path in
      .rdmax-partial/*) continue ;;                   # partial files, kept for resuming
      */.*.rdmax-*.part | .*.rdmax-*.part) continue ;; # temporaries
    esac
    todo+=("$path") keys+=("$key")
  done <<<"$(find "$out" -type f -printf '%i %s %T@ %P\n' 2>/dev/null)"  # the guest has no /dev/fd
  ((${#todo[@]})) || return 0
  local -A got=()
  while read -r digest path; do
    [[ -n $path ]] && got[$path]=$digest
  done <<<"$(cd "$out" && b3sum -- "${todo[@]}" 2>/dev/null)"
  local k
  for k in "${!todo[@]}"; do
    path=${todo[$k]}
    # s1/s1-r4/a/small-2 -> sender s1, round s1-r4, s1's file a/small-2
    sender=${path%%/*} rel=${path#*/}
    rel=${rel#*/}
    want=${manifest[$sender/$rel]:-}
    if [[ -z ${got[$path]:-} ]]; then
      [[ -e $out/$path ]] || continue  # removed meanwhile (a round we removed)
      violation "$path: could not be hashed"
    elif [[ -z $want ]]; then
      violation "$path: a file under a final name that no sender sent"
    elif [[ ${got[$path]} != "$want" ]]; then
      violation "$path: under its final name, its content differs from the source (b3sum ${got[$path]}, source $want)"
    fi
    checked[${keys[$k]}]=1
  done
}
# check_rounds: a round a sender reported done must be there whole: every file of the
# manifest, equal (check_files), nothing else, no temporary; then it is removed.
check_rounds() {
  local marker name sender have want
  for marker in "$ctl"/done/s*-r*; do
    [[ -e $marker && $marker != *.tmp ]] || continue
    name=${marker##*/}
    [[ -n ${verified_rounds[$name]:-} ]] && continue
    sender=${name%%-*}
    check_files
    have=$(cd "$out/$sender/$name" 2>/dev/null && find . -printf '%P\n' | grep -v '^$' | LC_ALL=C sort)
    want=$( (cd "$ctl" && awk '{print $2}' "manifest.$sender") | while read -r p; do
      echo "$p"
      while [[ $p == */* ]]; do p=${p%/*}; echo "$p"; done
    done | LC_ALL=C sort -u)
    if [[ $have != "$want" ]]; then
      violation "$name: completed (exit 0), but $out/$sender/$name holds [$(echo "$have" | tr '\n' ' ')], not [$(echo "$want" | tr '\n' ' ')]"
    fi
    files_moved=$((files_moved + $(grep -c . "$ctl/manifest.$sender")))
    bytes_moved=$((bytes_moved + $(cd "$out/$sender/$name" 2>/dev/null && find . -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')))
    rm -rf "${out:?}/$sender/$name"
    verified_rounds[$name]=1
    mkdir -p "$ctl/removed" && : >"$ctl/removed/$name"  # the sender may go two rounds on
  done
}
space_sampled=-5
sample() {
  local rss fd
  # The receiver's free space, for a refusal (exit 4) that no fault explains: a disk full
  # of rounds and kept partials, or a bug. Every 5 s: two processes on host A, whose one
  # emulated CPU also runs the receiver.
  if ((SECONDS - space_sampled >= 5)); then
    space_sampled=$SECONDS
    echo "$(now) $(df --output=avail -B 1M "$RXE_DISK" 2>/dev/null | tail -n 1)" >>"$ctl/space"
  fi
  rss=$(rss_kib) fd=$(find "/proc/$(recv_pid)/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
  ((rss > peak_rss)) && peak_rss=$rss
  ((fd > peak_fd)) && peak_fd=$fd
  return 0
}
# A pass that takes long is noted (a stalled watcher removes no round, and the disk fills).
watch_once() {
  local t0=$SECONDS
  load_manifests; check_files; check_rounds; sample
  ((SECONDS - t0 < 5)) || echo "[$(at)s] a watcher pass took $((SECONDS - t0)) s" >>"$ctl/slow"
}

# ---------------------------------------------------------------------------------
# The injector: a fault every 2-10 s (from the seed), each of its own duration, so that
# they overlap; at most one of each kind at a time. Each is logged as
#   START|END KIND DETAIL TIME
# in $ctl/faults, which the judgement of exit statuses reads.
# ---------------------------------------------------------------------------------
kinds=(sender-kill receiver-kill wire-cut disk-full slow-disk memory hostile)
hostile_modes=(garbage flood wrong-version lying-length idle names)
log_fault() { echo "$1 $2 ${3:--} $(now)" >>"$ctl/faults"; }
fault_on() { [[ -e $ctl/on.$1 ]]; }
# fault KIND DURATION DETAIL: one fault, in the background of the injector.
fault() {
  local kind=$1 dur=$2 detail=$3 pid before avail
  : >"$ctl/on.$kind"
  log_fault START "$kind" "$detail"
  case $kind in
    sender-kill)
      rxe-peer pkill -9 -f "rdma-send .*soak-src/$detail/" >/dev/null 2>&1 || true ;;
    receiver-kill)
      pid=$(recv_pid) before=$(times_listening)
      : >"$ctl/killed.$pid"
      kill -9 "$pid" 2>/dev/null || true
      eventually 40 listening_more_than "$before" ||
        violation "the receiver killed (pid $pid) did not serve again within 40 s: $(tail -n 3 "$recv_log" | tr '\n' '|')" ;;
    wire-cut)
      tc qdisc add dev eth0 root netem loss 100% 2>/dev/null || true
      rxe-peer tc qdisc add dev eth0 root netem loss 100% 2>/dev/null || true
      nap "$dur"
      tc qdisc del dev eth0 root 2>/dev/null || true
      rxe-peer tc qdisc del dev eth0 root 2>/dev/null || true ;;
    disk-full)
      avail=$(df --output=avail -B 1 "$RXE_DISK" | tail -n 1)
      fallocate -l $((avail > 65536 ? avail - 65536 : 4096)) "$RXE_DISK/filler" 2>/dev/null || true
      nap "$dur"
      rm -f "$RXE_DISK/filler" ;;
    slow-disk)
      echo "$disk_dev wbps=4194304" >"$cg/io.max" 2>/dev/null || true
      nap "$dur"
      echo "$disk_dev wbps=max" >"$cg/io.max" 2>/dev/null || true ;;
    memory)
      # Just above what the cgroup holds now, plus the receiver's own budget
      # (--max-memory 192M) for what it may still register: page cache squeezed, the
      # receiver's own allocations served.
      echo $(($(cat "$cg/memory.current") + 200 * 1048576)) >"$cg/memory.max" 2>/dev/null || true
      nap "$dur"
      echo max >"$cg/memory.max" 2>/dev/null || true ;;
    hostile)
      timeout -k 5 60 "$attacker" "$detail" --host "$RXE_ADDR" --port "$port" --timeout 10 \
        --receiver-timeout "$timeout_s" --slack 5 --tag soak >>"$ctl/hostile.log" 2>&1 </dev/null || true ;;
  esac
  log_fault END "$kind" "$detail"
  rm -f "$ctl/on.$kind"
}
inject() {
  local kind dur detail deadline=$1
  RANDOM=$((seed + 1))  # a subshell's generator is not the parent's
  while [[ ! -e $ctl/stop ]] && (($(date +%s) < deadline)); do
    nap $((2 + RANDOM % 9))
    kind=${kinds[RANDOM % ${#kinds[@]}]} dur=$((2 + RANDOM % 9)) detail=-
    case $kind in
      sender-kill) detail=s$((RANDOM % senders)) ;;
      hostile) detail=${hostile_modes[RANDOM % ${#hostile_modes[@]}]} ;;
    esac
    fault_on "$kind" && continue
    echo "$kind" >>"$ctl/injected"
    fault "$kind" "$dur" "$detail" &
  done
  wait  # the faults under way end (each restores what it changed)
  # Quiet from now on: said here, not by the loop below once its watcher pass is over (a pass
  # can take minutes on the emulated CPUs, and the senders went on starting rounds meanwhile:
  # seed 467545's 3-minute run said "faults stopped at 309.1s" at the end of a pass of 101 s).
  now >"$ctl/quiet.tmp" && mv "$ctl/quiet.tmp" "$ctl/quiet"
  : >"$ctl/stop"
}

# ---------------------------------------------------------------------------------
# The run.
# ---------------------------------------------------------------------------------
# The clocks of the two hosts: the exit statuses are judged with B's times.
# shellcheck disable=SC2016 # B's $EPOCHREALTIME
b_now=$(rxe-peer bash -c 'echo $EPOCHREALTIME') a_now=$(now)
skew=$(awk -v a="$a_now" -v b="$b_now" 'BEGIN { printf "%.1f", b - a }')
echo "soak: host B's clock is ${skew}s from A's (within the time of one rxe-peer call)"
sender_jobs=()
for ((i = 0; i < senders; i++)); do
  rxe-peer "$repo/tests/e2e/soak_sender.sh" "$ctl" "$i" >"$ctl/sender.s$i.log" 2>&1 &
  sender_jobs+=($!)
  bg_pids+=($!)
done
manifests_made() {
  local i
  for ((i = 0; i < senders; i++)); do [[ -s $ctl/manifest.s$i ]] || return 1; done
}
wait_for 300 manifests_made
load_manifests
echo "soak: $senders trees made ($(cat "$ctl"/manifest.s[0-9]* | wc -l) files); faults for $minutes minute(s)"
inject $(($(date +%s) + minutes * 60)) &
injector=$!
bg_pids+=("$injector")
while kill -0 "$injector" 2>/dev/null; do watch_once; nap 1; done
wait "$injector" || true
t_quiet=$(cat "$ctl/quiet" 2>/dev/null || now)
: >"$ctl/stop"
echo "soak: faults stopped at $(at "$t_quiet")s; the senders finish their rounds"
# Every command completes once the faults stop: 5 minutes at most.
limit=$((SECONDS + 300))
for job in "${sender_jobs[@]}"; do
  while kill -0 "$job" 2>/dev/null && ((SECONDS < limit)); do watch_once; nap 1; done
done
if ((SECONDS >= limit)); then
  violation "5 minutes after the faults stopped, some senders had not completed: $(for f in "$ctl"/attempts.s*; do echo "${f##*.}: $(tail -n 1 "$f")"; done | tr '\n' '|')"
  : >"$ctl/given-up"
  # Each sender stops at its next attempt (given-up); one whose job has not ended a minute
  # later is killed (rxe-peer passes the signal on), so that the report still comes.
  limit=$((SECONDS + 60))
  for job in "${sender_jobs[@]}"; do
    while kill -0 "$job" 2>/dev/null && ((SECONDS < limit)); do nap 1; done
    kill "$job" 2>/dev/null
  done
fi
for ((i = 0; i < senders; i++)); do
  rc=0
  wait "${sender_jobs[i]}" || rc=$?
  ((rc == 0)) || violation "sender s$i ended with status $rc: $(tail -n 3 "$ctl/sender.s$i.log" | tr '\n' '|')"
done
watch_once

# Nothing left behind.
# Every round was verified and removed: any file still there (a temporary, a partial file
# in .rdmax-partial, anything else) was left behind.
leftover=$(cd "$out" && find . -mindepth 1 -not -type d -printf '%P\n' | head -n 20)
[[ -z $leftover ]] || violation "left in $out after every round was verified and removed: $(echo "$leftover" | tr '\n' ' ')"
at_idle() { [[ $(resources) == "$idle_resources" ]]; }
eventually 30 at_idle || violation "the receiver's resources are not back to idle: $(resources), idle $idle_resources"
final_rss=$(rss_kib)
((final_rss <= idle_rss + 32768)) ||
  violation "the receiver's VmRSS is $final_rss KiB at the end, idle was $idle_rss KiB (allowed: 32 MiB more)"
kill -0 "$(recv_pid)" 2>/dev/null || violation "the receiver is not running at the end"

# Every exit status against what happened (B's times, shifted by the skew).
judge=$(awk -v skew="$skew" -v grace="$grace_s" -v timeout="$timeout_s" -v senders="$senders" '
  # Whether a refusal for `reason` (a reject reason, or - when the sender named none) made
  # in [t0, t1] has a fault to explain it. NoMemory: the receiver short of memory, or its
  # windows at their cap (--max-memory) while it still holds the connections of a killed
  # sender or of a cut wire, until it sees them gone (at most its --timeout).
  function explained(reason, t0, t1,   j, fe, late, held) {
    for (j = 1; j <= k; j++) {
      fe = (j in e) ? e[j] : 1e18
      held = reason == "NoMemory" && (kind[j] == "sender-kill" || kind[j] == "wire-cut")
      late = held ? grace + timeout : grace
      if (s[j] > t1 + 1 || fe + late < t0) continue
      if (held) return 1
      if ((reason == "NoSpace" || reason == "-") && kind[j] == "disk-full") return 1
      if ((reason == "NoMemory" || reason == "-") && kind[j] == "memory") return 1
    }
    return 0
  }
  FNR == 1 { file = FILENAME }
  file ~ /faults$/ {
    if ($1 == "START") { kind[++k] = $2; det[k] = $3; s[k] = $4 }
    else { for (j = k; j > 0; j--) if (kind[j] == $2 && det[j] == $3 && !(j in e)) { e[j] = $4; break } }
    next
  }
  {
    sender = file; sub(/.*attempts\./, "", sender)
    t0 = $3 - skew; t1 = $4 - skew; rc = $5
    if (rc == 0) next
    ok = 0
    if (rc == 4) {
      # Refused: every reason the sender was given needs its fault.
      n = split($6, why, ",")
      ok = 1
      for (w = 1; w <= n; w++) if (!explained(why[w], t0, t1)) ok = 0
    }
    for (j = 1; j <= k && rc != 4; j++) {
      fe = (j in e) ? e[j] : 1e18
      if (s[j] > t1 + 1 || fe + grace < t0) continue
      if (rc == 137 && kind[j] == "sender-kill" && det[j] == sender) ok = 1
      if (rc == 3 && kind[j] != "sender-kill") ok = 1
      if (rc == 1 && (kind[j] == "disk-full" || kind[j] == "memory")) ok = 1
    }
    if (!ok) {
      line = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ [^ ]+ [^ ]+ [^ ]+ /, "", line)
      printf "%s round %s attempt %s: exit %s (refusals: %s) with no fault to explain it (%s)\n", sender, $1, $2, rc, $6, line
    }
  }' "$ctl/faults" "$ctl"/attempts.s* 2>&1)
[[ -z $judge ]] || while IFS= read -r line; do violation "$line"; done <<<"$judge"

# The report.
attempts=$(cat "$ctl"/attempts.s* | wc -l)
rounds=${#verified_rounds[@]}
echo "soak: seed $seed: faults injected: $(sort "$ctl/injected" 2>/dev/null | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')"
echo "soak: $rounds rounds, $files_moved files, $((bytes_moved / 1048576)) MiB verified; $((attempts - rounds)) re-runs" \
  "(exit statuses: $(awk '{print $5}' "$ctl"/attempts.s* | sort -n | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}'))"
echo "soak: receiver: $(grep -c ' start ' "$ctl/recv.events") starts, peak VmRSS $peak_rss KiB (idle $idle_rss, end $final_rss), peak descriptors $peak_fd"
: >"$ctl/end"
kill "$(recv_pid)" 2>/dev/null || true
wait "$supervisor" 2>/dev/null || true
if [[ -s $ctl/violations ]]; then
  echo "soak: $(wc -l <"$ctl/violations") violated invariant(s), seed $seed:" >&2
  cat "$ctl/violations" >&2
  echo "--- the faults, the last 30:" >&2
  tail -n 30 "$ctl/faults" >&2
  echo "--- the receiver's log, the last 30 lines:" >&2
  tail -n 30 "$recv_log" >&2
  for ((i = 0; i < senders; i++)); do
    echo "--- sender s$i: what its last failed attempts said" >&2
    tail -n 12 "$ctl/errors.s$i" >&2 2>/dev/null || true
  done
  if [[ -s $ctl/slow ]]; then echo "--- slow passes of the watcher:" >&2; cat "$ctl/slow" >&2; fi
  # The evidence outlives the test bed (the shared directory goes with it): the attempts with
  # their times, the faults, the free space, and the receiver's log.
  kept=${RXE_SHARED_TMP:-/tmp}/rdmax-soak-seed$seed-$(date +%s)
  if mkdir -p "$kept" && cp -r "$ctl"/. "$kept"/ && tail -n 200000 "$recv_log" >"$kept/recv.log"; then
    echo "--- kept for a look: $kept" >&2
  fi
  exit 1
fi
pass "soak, seed $seed: every invariant held over $minutes minute(s) of faults"
