# Shared helpers for the end-to-end tests. Sourced; each test runs inside scripts/rxe-run.
# shellcheck shell=bash
set -euo pipefail
: "${RXE_ADDR:?run this test through scripts/rxe-run}"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PATH=$repo/scripts:$PATH

# A working directory that both hosts of the two-host topology can see (host filesystem).
shared=$(mktemp -d "${RXE_SHARED_TMP:-/tmp}/rdmax-e2e.XXXXXX")
bg_pids=()
# rdma-send's digest cache: the test's own, never the home directory's.
export XDG_CACHE_HOME=$shared/cache

# alive PID: the process exists and is not a zombie waiting to be reaped.
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n $state && $state != Z ]]
}

_cleanup() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # A process that ignores SIGTERM must not hold the test until the rxe-run deadline.
  for _ in $(seq 50); do
    for p in "${bg_pids[@]}"; do alive "$p" && break; p=""; done
    [[ -z ${p:-} ]] && break
    sleep 0.1
  done
  for p in "${bg_pids[@]}"; do
    if alive "$p"; then kill -9 "$p" 2>/dev/null || true; fi
  done
  wait 2>/dev/null || true
  rm -rf "$shared"
}
trap _cleanup EXIT

# random_files DIR FORMAT COUNT MIN MAX: COUNT files of random bytes in DIR, named by the
# printf FORMAT of 1..COUNT (s%03d: s001...), each of a size drawn from MIN..MAX bytes. One
# process for all: a fork costs about 70 ms in the emulated guest, and a loop of `head -c`
# over 1000 files took over a minute of a suite.
random_files() {
  perl -e '
    my ($dir, $format, $count, $min, $max) = @ARGV;
    open(my $random, "<:raw", "/dev/urandom") or die "/dev/urandom: $!\n";
    for my $i (1 .. $count) {
      my $name = sprintf("%s/$format", $dir, $i);
      my $size = $min + int(rand($max - $min + 1));
      my $bytes = "";
      read($random, $bytes, $size) == $size or die "/dev/urandom: a short read\n" if $size;
      open(my $file, ">:raw", $name) or die "$name: $!\n";
      print $file $bytes or die "$name: $!\n";
      close($file) or die "$name: $!\n";
    }' "$@"
}

# fail prints the output of a test's own `fail_context` function, when it has one.
fail() {
  echo "FAIL: $*" >&2
  if declare -F fail_context >/dev/null; then fail_context >&2 || true; fi
  exit 1
}
pass() { echo "ok: $*"; }

# need_programs NAME...: sets $send, $recv and $attacker from RDMAX_BIN (ctest sets it) and
# fails unless each NAMEd one (send, recv, attacker) is executable.
need_programs() {
  [[ -n ${RDMAX_BIN:-} ]] || fail "RDMAX_BIN is not set: it names the directory of the binaries (ctest sets it)"
  # shellcheck disable=SC2034 # used by the test that sources this file
  send=$RDMAX_BIN/rdma-send recv=$RDMAX_BIN/rdma-recv attacker=$RDMAX_BIN/rdmax-attacker
  local name
  for name in "$@"; do
    [[ -x ${!name} ]] || fail "missing or not executable: ${!name}"
  done
}

# wait_for SECONDS CMD...: poll CMD until it succeeds; fail loudly after SECONDS.
wait_for() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || fail "waited ${limit}s for: $*"
    sleep 0.1
  done
}

# eventually SECONDS CMD...: like wait_for, but returns 1 instead of failing.
eventually() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}

# logged_since LOG LINES PATTERN: LOG has a line matching PATTERN after its first LINES lines
# (what a daemon logged since a case began; not by truncating the log, which a daemon on the
# other host appends to through its own 9p view of the file's size).
logged_since() { tail -n "+$(($2 + 1))" "$1" | grep -q "$3"; }

# A listening rdma_cm id on PORT, as rdma-core's own resource tracking reports it.
cm_listening() { rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN.*src-addr [^ ]*:$1\b"; }

# A daemon's footprint, to compare with its idle level after a test: its QPs, MRs and cm_ids
# (rdma-core's resource tracking names the owning pid) and its open descriptors, as one line
# ("qp 0 mr 0 cm_id 1 fd 14"); its resident memory; the resource lists themselves (for a
# failure's context).
res_count() { rdma resource show "$1" 2>/dev/null | grep -c "pid $2 " || true; }  # KIND PID
footprint() {  # PID
  echo "qp $(res_count qp "$1") mr $(res_count mr "$1") cm_id $(res_count cm_id "$1") fd $(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
}
vmrss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }  # PID
resource_lists() {  # PID
  local kind
  for kind in qp mr cm_id; do
    rdma resource show "$kind" 2>/dev/null | grep "pid ${1:-x} " | sed "s/^/    $kind | /"
  done
}

# ---------------------------------------------------------------------------------
# Daemons whose exit status a test asserts on.
# start_daemon NAME LOG CMD...: run CMD in the background, stdout and stderr to LOG.
# Sets daemon_pid to CMD's own pid (signal that one). A watcher records CMD's exit
# status, so any subshell can ask: daemon_exited NAME, daemon_status NAME.
# ---------------------------------------------------------------------------------
# start_notify_socket SOCKET NOTES: a stand-in for systemd's notify socket (Type=notify).
# socat receives each datagram in a child of its own, which appends it to NOTES as lines
# (READY=1, STATUS=...) followed by a line "--". awk writes it all at its exit in one write(2)
# to a file opened O_APPEND, so the children of datagrams that arrive together cannot
# interleave their lines. A daemon named notify-socket: stopped with the others.
start_notify_socket() {
  local socket=$1 notes=$2 recorder
  recorder=$(dirname "$notes")/record-notification
  rm -f "$socket" "$notes"
  printf '#!/bin/sh\nexec awk -v end=-- %s >>%q\n' "'{ print } END { print end }'" "$notes" >"$recorder"
  chmod +x "$recorder"
  start_daemon notify-socket "$notes.socat" socat -u "UNIX-RECVFROM:$socket,fork" EXEC:"$recorder"
  wait_for 20 test -S "$socket"
}

start_daemon() {
  local name=$1 log=$2; shift 2
  local dir=$shared/daemon.$name
  rm -rf "$dir" && mkdir -p "$dir"
  (
    "$@" >"$log" 2>&1 </dev/null &
    echo $! >"$dir/pid.tmp" && mv "$dir/pid.tmp" "$dir/pid"
    rc=0
    wait $! || rc=$?
    echo "$rc" >"$dir/rc.tmp" && mv "$dir/rc.tmp" "$dir/rc"
  ) &
  bg_pids+=($!)
  wait_for 10 test -s "$dir/pid"
  daemon_pid=$(<"$dir/pid")
  bg_pids+=("$daemon_pid")
}
daemon_exited() { [[ -s $shared/daemon.$1/rc ]]; }
daemon_status() { cat "$shared/daemon.$1/rc"; }

# wait_for_line SECONDS DAEMON LOG PATTERN: until LOG has a line matching PATTERN (grep -E);
# fails at once if the daemon exits first.
wait_for_line() {
  local limit=$1 name=$2 log=$3 pattern=$4
  local end=$((SECONDS + limit))
  until grep -Eq -- "$pattern" "$log" 2>/dev/null; do
    if daemon_exited "$name"; then
      fail "$name exited with status $(daemon_status "$name") before logging /$pattern/"
    fi
    ((SECONDS < end)) || fail "$name did not log /$pattern/ within ${limit}s"
    sleep 0.1
  done
}

# ---------------------------------------------------------------------------------
# Many cases in one script: run_case NAME FUNCTION [ARGS...] runs FUNCTION in a subshell
# under `set -e`, so `fail` (or an unexpected error) ends only that case. report_cases
# prints "PREFIX: N passed, M failed" and returns non-zero when any case failed.
# ---------------------------------------------------------------------------------
cases_passed=0 cases_failed=0 failed_cases=()
_case_error() {
  # Command substitutions inherit the trap (set -E) but not errexit: ignore them there.
  ((BASH_SUBSHELL == _case_level)) || return 0
  echo "FAIL: unexpected status $1 from \`$2\` (line $3)" >&2
  if declare -F fail_context >/dev/null; then fail_context >&2 || true; fi
  exit "$1"
}
# The daemons start_daemon started that have not exited, as "pid" lines.
running_daemons() {
  local dir
  for dir in "$shared"/daemon.*; do
    [[ -s $dir/pid && ! -s $dir/rc ]] && cat "$dir/pid"
  done
  return 0
}
run_case() {
  local name=$1; shift
  local rc before pid started=$SECONDS
  # RDMAX_CASES="NAME ...": only these cases (while working on a suite; CI runs them all).
  [[ -z ${RDMAX_CASES:-} || " $RDMAX_CASES " == *" $name "* ]] || return 0
  before=$(running_daemons)
  set +e
  (
    set -eE
    _case_level=$BASH_SUBSHELL
    trap '_case_error $? "$BASH_COMMAND" "$LINENO"' ERR
    "$@"
  )
  rc=$?
  set -e
  # Where a suite's time goes (the whole test command must stay under 35 minutes).
  echo "time: case '$name' took $((SECONDS - started))s"
  if ((rc == 0)); then
    cases_passed=$((cases_passed + 1))
  else
    cases_failed=$((cases_failed + 1))
    failed_cases+=("$name")
    echo "FAIL: case '$name' (status $rc)" >&2
    # A case that failed half-way leaves its daemons running, holding their ports: stop
    # them, so that one failure is reported once and not again by every case after it.
    for pid in $(running_daemons); do
      grep -qx "$pid" <<<"$before" || kill -KILL "$pid" 2>/dev/null || true
    done
  fi
}
report_cases() {
  echo "$1: $cases_passed passed, $cases_failed failed"
  ((cases_failed == 0)) || { echo "$1: failed cases: ${failed_cases[*]}" >&2; return 1; }
}
