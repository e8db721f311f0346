#!/usr/bin/env bash
# trace_gaps.sh FILE.trace [N]: the N (default 25) longest waits in a suite traced by
# in_one_boot.sh (RDMAX_TRACE): each line of the trace carries the time it ran, so the
# time to the next line is what that command (or the wait it began) took, whichever shell
# of the suite printed the next line. Then the suite's time per source line, summed.
set -euo pipefail
trace=${1:?usage: trace_gaps.sh FILE.trace [N]}
top=${2:-25}
awk -v top="$top" '
  $1 ~ /^\++$/ && $2 ~ /^[0-9]+\.[0-9]+$/ {
    if (have) { gap = $2 - last; line[n] = sprintf("%8.2f  %s", gap, text); n++; by[where] += gap }
    last = $2; where = $3; sub(/.*\//, "", where); text = substr($0, 1, 160); have = 1
  }
  END {
    print "the longest waits (seconds, the command that began each):"
    cmd = "sort -rn | head -n " top
    for (i = 0; i < n; i++) print line[i] | cmd
    close(cmd)
    print "\ntime per source line (seconds):"
    cmd = "sort -rn | head -n " top
    for (w in by) printf "%8.2f  %s\n", by[w], w | cmd
    close(cmd)
  }' "$trace"
