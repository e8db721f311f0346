#!/usr/bin/env bash
# Runs several suites, one after the other, in one boot of the test bed (a guest boot costs
# 10-25 s under emulation): `in_one_boot.sh A.sh B.sh ...`. Each runs as its own process,
# as it would alone; every one runs. The status is that of the first that failed; a skip
# (77: something the suite needs is missing) counts only when none failed, so that a skipped
# suite never hides another's failure.
set -u
dir=$(dirname "$0")
status=0 skipped=0
for suite in "$@"; do
  echo "== $suite"
  rc=0 started=$SECONDS
  bash "$dir/$suite" || rc=$?
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
