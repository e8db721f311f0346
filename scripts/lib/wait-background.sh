#!/usr/bin/env bash
# wait-background.sh BUILD_DIR STEP... [-- FALLBACK...]: waits for steps of the work that
# scripts/test.sh runs in the background (BUILD_DIR-background/STEP.rc once a step ends,
# STEP.log its output), for the ctest fixtures that need it: the programs of the last
# releases (v1, release) and the Debian package (deb). Prints each step's log; exits with
# the first failed step's status (77, a skip, is not a failure). When no such background
# is under way (ctest run by hand), runs FALLBACK instead, or exits 0 without one.
set -euo pipefail
build=${1:?usage: wait-background.sh BUILD_DIR STEP... [-- FALLBACK...]}
shift
steps=()
while (($#)) && [[ $1 != -- ]]; do steps+=("$1"); shift; done
(($#)) && shift  # the --
dir=${build}-background
if [[ ! -d $dir ]]; then
  if (($#)); then exec "$@"; fi
  echo "nothing under way in the background ($dir; scripts/test.sh starts it): not waiting"
  exit 0
fi
# Bounded: each step takes minutes; one that neither ends nor fails is a bug.
limit=$((SECONDS + 1800))
status=0
for step in "${steps[@]}"; do
  until [[ -s $dir/$step.rc ]]; do
    if ((SECONDS > limit)); then
      echo "the background's '$step' did not end in 30 minutes; its log so far:" >&2
      cat "$dir/$step.log" >&2 || true
      exit 1
    fi
    sleep 1
  done
  rc=$(cat "$dir/$step.rc")
  echo "---- $step (exit $rc): $dir/$step.log"
  cat "$dir/$step.log"
  if ((rc != 0 && rc != 77 && status == 0)); then status=$rc; fi
done
echo "waited ${SECONDS}s for: ${steps[*]}"
exit "$status"
