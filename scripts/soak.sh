#!/usr/bin/env bash
# soak.sh [--minutes M] [--seed S] [--senders N] [--max-large MIB]: faults for a while,
# nothing lost (issue 53; docs/RELIABILITY.md). Over Soft-RoCE between two hosts, one
# rdma-recv and N concurrent rdma-send commands (default 4), each sending its own tree round
# after round and run again after each failure, while faults drawn from the seed overlap:
# senders and the receiver killed, the wire cut, the receiver's disk full or slow, its
# memory short, hostile peers. Prints the seed (a failing seed replays: the same trees, the
# same faults at the same times), the faults by kind, what was moved, the re-runs, the
# receiver's peaks, and every violated invariant (tests/e2e/soak.sh lists them). Exits 0
# only when every invariant held. Installs what is needed and builds first, as the other
# scripts do; RDMAX_BIN=DIR uses the programs there instead.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: scripts/soak.sh [--minutes M] [--seed S] [--senders N] [--max-large MIB]" >&2
  exit 2
}
minutes=30 seed="" senders=4 max_large=192
while (($#)); do
  case $1 in
    --minutes) minutes=${2:-}; shift 2 || usage ;;
    --seed) seed=${2:-}; shift 2 || usage ;;
    --senders) senders=${2:-}; shift 2 || usage ;;
    --max-large) max_large=${2:-}; shift 2 || usage ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $minutes =~ ^[1-9][0-9]{0,3}$ ]] || { echo "soak.sh: --minutes must be a whole number of minutes from 1, not '$minutes'" >&2; exit 2; }
[[ -z $seed || $seed =~ ^[0-9]{1,9}$ ]] || { echo "soak.sh: --seed must be a number, not '$seed'" >&2; exit 2; }
[[ $senders =~ ^[1-9]$|^1[0-6]$ ]] || { echo "soak.sh: --senders must be 1 to 16, not '$senders'" >&2; exit 2; }
[[ $max_large =~ ^[1-9][0-9]{0,3}$ ]] || { echo "soak.sh: --max-large must be MiB from 1, not '$max_large'" >&2; exit 2; }
[[ -n $seed ]] || seed=$(((RANDOM << 15 | RANDOM) % 1000000))

if [[ -z ${RDMAX_BIN:-} ]]; then
  # shellcheck source=scripts/lib/build-programs.sh
  source scripts/lib/build-programs.sh
  cmake --build "$build" -j "$(nproc)" --target rdmax-attacker >/dev/null
fi
# The receiver's own disk: room for every sender's tree a few times over, small enough that
# filling it is quick.
disk_mib=$((512 + senders * max_large * 3))
export RDMAX_BIN RDMAX_SOAK_MINUTES=$minutes RDMAX_SOAK_SEED=$seed RDMAX_SOAK_SENDERS=$senders \
  RDMAX_SOAK_MAX_LARGE=$((max_large * 1048576))
exec scripts/rxe-run --hosts 2 --disk "$disk_mib" --timeout $((minutes * 60 + 1200)) \
  -- tests/e2e/soak.sh
