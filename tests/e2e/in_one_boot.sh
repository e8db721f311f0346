#!/usr/bin/env bash
# Runs several suites, one after the other, in one boot of the test bed (a guest boot costs
# 10-25 s under emulation): `in_one_boot.sh A.sh B.sh ...`. Each runs as its own process,
# as it would alone; every one runs. The status is that of the first that failed; a skip
# (77: something the suite needs is missing) counts only when none failed, so that a skipped
# suite never hides another's failure.
# RDMAX_TRACE=DIR (a directory both the host and the guests see, such as one under the
# build directory): each suite runs under `bash -x` with the time on every line, into
# DIR/SUITE.trace; tests/e2e/trace_gaps.sh then lists where a suite's time went.
set -u
dir=$(dirname "$0")
status=0 skipped=0
for suite in "$@"; do
  echo "== $suite"
  rc=0 started=$SECONDS
  if [[ -n ${RDMAX_TRACE:-} ]]; then
    # Into the guest's own scratch space first: a line at a time over 9p slowed the suite.
    # (PS4 set inside: bash running as root takes no PS4 from its environment; and the
    # descriptor not exported, so that the shells the suite starts do not trace.)
    trace=${RXE_SCRATCH:-/tmp}/$suite.trace
    # shellcheck disable=SC2016 # expanded by the traced shell
    bash -c 'BASH_XTRACEFD=9; PS4="+ \${EPOCHREALTIME} \${BASH_SOURCE[0]:-top}:\${LINENO} "; set -x; . "$0"' \
      "$dir/$suite" 9>"$trace" || rc=$?
    cp "$trace" "$RDMAX_TRACE/" && rm -f "$trace"
  else
    bash "$dir/$suite" || rc=$?
  fi
  # Each suite's share of the boot, for whoever keeps the full test under its budget.
  echo "== $suite took $((SECONDS - started)) s"
  if ((rc == 77)); then
    echo "== $suite skipped"
    skipped=77
  elif ((rc != 0)); then
    echo "== $suite failed (status $rc)"
    ((status != 0)) || status=$rc
  fi
done
((status != 0)) || status=$skipped
exit "$status"
