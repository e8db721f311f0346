#!/usr/bin/env bash
# Runs several suites, one after the other, in one boot of the test bed (a guest boot costs
# 10-25 s under emulation): `in_one_boot.sh A.sh B.sh ...`. Each runs as its own process,
# as it would alone; every one runs, and the status is that of the first that failed.
set -u
dir=$(dirname "$0")
status=0
for suite in "$@"; do
  echo "== $suite"
  rc=0
  bash "$dir/$suite" || rc=$?
  ((rc == 0)) || echo "== $suite failed (status $rc)"
  ((status != 0 || rc == 0)) || status=$rc
done
exit "$status"
