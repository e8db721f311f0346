#!/usr/bin/env bash
# End-to-end: rdma-send's progress display. On a terminal (a tmux pane, whose screen we
# read back) a bar with percentage, rate and ETA is redrawn in place while the file is
# sent (hashed as it goes, by default) or, with --digest-first, hashed and then sent, and
# each phase ends as one summary line, with log lines intact and nothing half-drawn left
# behind, also when the transfer fails half-way. Off a terminal nothing is drawn unless
# --progress asks for plain lines.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv
command -v tmux >/dev/null || fail "tmux is not installed (scripts/install-deps.sh installs it)"

port=18700
work=$RXE_SCRATCH/progress
rm -rf "$work" && mkdir -p "$work/in" "$work/out"
recv_log=$work/rdma-recv.log
# Large enough that each phase lasts a few redraws (~1-2 s each under emulation).
head -c 96M /dev/urandom >"$work/in/big.bin"

fail_context() {
  echo "  pane (last screen):"
  [[ -s $work/screen ]] && sed 's/^/    | /' "$work/screen"
  echo "  rdma-recv log (last 10 lines):"
  tail -n 10 "$recv_log" 2>/dev/null | sed 's/^/    | /'
}

start_receiver() {
  if [[ -n ${daemon_pid:-} ]] && alive "$daemon_pid"; then
    kill -9 "$daemon_pid" && wait_for 10 eval '! alive "$daemon_pid"'
  fi
  : >"$recv_log"
  start_daemon recv "$recv_log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/out" \
    --overwrite --timeout 10
  wait_for 20 cm_listening "$port"
}

tmux_() { tmux -S "$sock" "$@"; }
kill_panes() {
  local s
  for s in "$work"/tmux-*.sock; do
    [[ -S $s ]] && { tmux -S "$s" kill-server 2>/dev/null || true; }
  done
  return 0
}
trap 'kill_panes; _cleanup' EXIT

# in_pane NAME COMMAND: runs COMMAND in a fresh 160x30 pane, on its own tmux server (a
# server being shut down can refuse new sessions); its raw output (with every carriage
# return and escape) is recorded in $work/NAME.raw.
in_pane() {
  local name=$1 command=$2
  kill_panes
  sock=$work/tmux-$name.sock
  tmux_ -f /dev/null new-session -d -x 160 -y 30 -s t "bash --norc --noprofile"
  tmux_ set-option -t t remain-on-exit on
  : >"$work/$name.raw"
  tmux_ pipe-pane -t t "cat >>'$work/$name.raw'"
  tmux_ send-keys -t t "$command; echo \"exit=\$?\"" Enter
}
screen() { tmux_ capture-pane -p -t t >"$work/screen"; cat "$work/screen"; }
pane_says() { screen | grep -Eq -- "$1"; }

# A bar line as it looks in the pane: label, [===>   ], percentage.
bar_re() { echo "^$1 +\[=*>? *\] +[0-9]{1,3}%"; }

# --digest-first: two phases, each with its bar and its summary.
case_bar_renders_and_ends_cleanly() {
  in_pane ok "$send -H $RXE_ADDR -p $port --digest-first --no-digest-cache $work/in/big.bin"
  wait_for 120 pane_says '^exit=[0-9]+'
  screen >/dev/null
  grep -q '^exit=0' "$work/screen" || fail "rdma-send failed"
  # The bars, as drawn: judged from the pane's raw record, which holds every frame. (Sampling
  # the screen while it ran could miss a phase shorter than a poll: hashing 96 MiB took
  # 0.9 s in one run.)
  grep -aqE $'\r\e\\[Khashing +\\[=*>? *\\] +[0-9]{1,3}%' "$work/ok.raw" ||
    fail "the hashing bar was never drawn"
  grep -aqE $'\r\e\\[Ksending +\\[=*>? *\\] +[0-9]{1,3}%[^\r]* MiB/s +ETA [0-9]+:[0-9]{2}' "$work/ok.raw" ||
    fail "the sending bar (with rate and ETA) was never drawn"
  # Each phase leaves exactly one summary; no bar, ETA or stray escape remains.
  grep -Eq '^hashing +96\.0 MiB in [0-9.]+s \([0-9.]+ [KMG]iB/s\)$' "$work/screen" ||
    fail "no hashing summary line"
  grep -Eq '^sending +96\.0 MiB in [0-9.]+s \([0-9.]+ [KMG]iB/s\)$' "$work/screen" ||
    fail "no sending summary line"
  ! grep -Eq 'ETA|\[=|%' "$work/screen" || fail "a bar was left on the screen"
  # Log lines start at column 0 (a timestamp), never glued to a bar.
  grep -Eq '^[0-9:.]+ info +connected to ' "$work/screen" || fail "the 'connected' log line is damaged"
  grep -Eq '^[0-9:.]+ info +sent .*verified' "$work/screen" || fail "the 'verified' log line is damaged"
  # The bar was redrawn in place ("\r" + erase line): drawn, then drawn again over itself,
  # in each phase (a frame every 100 ms: a phase of under 0.2 s could show only one).
  local redraws_hash redraws_send
  redraws_hash=$(grep -aoE $'\r\e\\[Khashing +\\[' "$work/ok.raw" | wc -l)
  redraws_send=$(grep -aoE $'\r\e\\[Ksending +\\[' "$work/ok.raw" | wc -l)
  ((redraws_hash >= 2 && redraws_send >= 2)) ||
    fail "not redrawn in place: hashing $redraws_hash frame(s), sending $redraws_send"
  cmp -s "$work/in/big.bin" "$work/out/big.bin" || fail "the delivered file differs"
  pass "terminal: hashing and sending bars redrawn in place ($redraws_hash and $redraws_send times), each replaced by its summary; log lines intact"
}

case_failure_erases_the_bar() {
  in_pane broken "$send -H $RXE_ADDR -p $port --timeout 5 $work/in/big.bin"
  wait_for 120 pane_says "$(bar_re sending)"
  kill -9 "$daemon_pid"
  wait_for 30 pane_says '^exit=[0-9]+'
  screen >/dev/null
  grep -q '^exit=3' "$work/screen" || fail "expected exit 3 after the receiver died"
  ! grep -Eq 'ETA|\[=|%' "$work/screen" || fail "the interrupted bar was left on the screen"
  grep -Eq '^[0-9:.]+ error +' "$work/screen" || fail "no error line at column 0"
  pass "terminal: the receiver killed mid-transfer: bar erased, error on its own line, exit 3"
}

case_ctrl_c_while_hashing() {
  # A sparse 4 GiB file: a minute of hashing, so Ctrl-C surely lands in that phase.
  truncate -s 4G "$work/in/sparse.bin"
  # An interactive shell abandons its command line when a job dies of Ctrl-C; this
  # wrapper (deaf to SIGINT itself, its child not) hands the status on instead.
  in_pane ctrl-c "bash -c 'trap \"\" INT; ( trap - INT; exec \"\$@\" ); exit \$?' _ $send -H $RXE_ADDR -p $port --digest-first $work/in/sparse.bin"
  wait_for 60 pane_says "$(bar_re hashing)"
  tmux_ send-keys -t t C-c
  wait_for 30 pane_says '^exit=[0-9]+'
  rm -f "$work/in/sparse.bin"
  # "exit=130" alone on its line: the bar (and the terminal's "^C") were erased first.
  grep -q '^exit=130$' "$work/screen" || fail "expected exit 130 (SIGINT), alone on its line"
  grep -q 'interrupted by signal 2 while hashing: nothing was sent' "$work/screen" ||
    fail "Ctrl-C while hashing ended without a word"
  ! grep -Eq 'ETA|\[=|%' "$work/screen" || fail "Ctrl-C left the bar on the screen"
  pass "terminal: Ctrl-C while hashing: bar erased, said so, exit 130"
}

case_quiet_off_a_terminal() {
  local err=$work/plain.err
  "$send" -H "$RXE_ADDR" -p "$port" "$work/in/big.bin" >/dev/null 2>"$err" || fail "rdma-send failed: $(tail -n 3 "$err")"
  ! grep -Eaq $'hashing|sending +\\[|\r|\e' "$err" || fail "progress or escapes in redirected stderr: $(head -c 300 "$err" | cat -A)"
  grep -q 'verified' "$err" || fail "the final log line is missing"
  # --no-digest-cache: the send above cached the digest; this one must hash, as it sends
  # (the default): one phase, no hashing pass of its own.
  "$send" -H "$RXE_ADDR" -p "$port" --progress --no-digest-cache "$work/in/big.bin" >/dev/null 2>"$err" || fail "rdma-send --progress failed"
  ! grep -Eaq $'\r|\e' "$err" || fail "--progress off a terminal wrote control characters: $(head -c 300 "$err" | cat -A)"
  ! grep -q 'hashing' "$err" || fail "--progress: a hashing phase before the send (the digest goes at the end): $(grep hashing "$err" | head -2)"
  grep -Eq '^sending +96\.0 MiB in ' "$err" || fail "--progress: no sending summary"
  # Each phase prints a line at its first update (then every 2 s), each a whole line.
  grep -Eq "$(bar_re sending)" "$err" || fail "--progress: no sending progress line"
  ! grep -E '%' "$err" | grep -Evq "$(bar_re sending)" || fail "malformed progress line"
  pass "off a terminal: no progress unless --progress, then plain lines without control characters, one sending phase (the digest at the end)"
}

case_no_progress_on_a_terminal() {
  in_pane off "$send -H $RXE_ADDR -p $port --no-progress $work/in/big.bin"
  wait_for 120 pane_says '^exit=[0-9]+'
  grep -q '^exit=0' "$work/screen" || fail "rdma-send --no-progress failed"
  ! grep -aqE 'hashing|sending +\[' "$work/off.raw" || fail "--no-progress still drew a bar"
  pass "terminal with --no-progress: no bar"
}

start_receiver
run_case bar case_bar_renders_and_ends_cleanly
run_case failure case_failure_erases_the_bar
start_receiver # the failure case killed it
run_case ctrl-c case_ctrl_c_while_hashing
run_case off-terminal case_quiet_off_a_terminal
run_case no-progress case_no_progress_on_a_terminal
report_cases progress
