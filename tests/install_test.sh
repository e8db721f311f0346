#!/usr/bin/env bash
# `cmake --install` into a staging prefix: the programs, the manual pages, the systemd
# unit (configured with that prefix) and the example secrets file are all there and sane.
#   tests/install_test.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: install_test.sh BUILD_DIR}
stage=$(mktemp -d "${TMPDIR:-/tmp}/rdmax-install.XXXXXX")
trap 'rm -rf "$stage"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

cmake --install "$build" --prefix "$stage" >"$stage.log" 2>&1 || {
  cat "$stage.log" >&2; rm -f "$stage.log"; echo "FAIL: cmake --install" >&2; exit 1
}
rm -f "$stage.log"

for program in rdma-send rdma-recv; do
  [[ -x $stage/bin/$program ]] || fail "bin/$program missing or not executable"
  "$stage/bin/$program" --version >/dev/null || fail "bin/$program --version failed"
done

for page in rdma-send rdma-recv; do
  file=$stage/share/man/man1/$page.1
  if [[ ! -f $file ]]; then fail "share/man/man1/$page.1 missing"; continue; fi
  warnings=$(groff -man -Tutf8 -z -ww "$file" 2>&1) || fail "$page.1: groff failed"
  [[ -z $warnings ]] || fail "$page.1: groff warnings: $warnings"
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' EXAMPLES 'SEE ALSO'; do
    grep -q "^\.SH \"\{0,1\}$section" "$file" || fail "$page.1: no $section section"
  done
  # Every long option --help lists is documented.
  for option in $("$stage/bin/$page" --help | grep -oE -- '^ +(-[a-zA-Z],)?--[a-z][a-z-]+' |
    grep -oE -- '--[a-z-]+' | sort -u); do
    grep -q -- "${option//-/\\\\-}" "$file" || fail "$page.1 does not document $option"
  done
done

# Both units: the receiver's, and the fetch server's (rdma-send --serve).
for unit_name in rdma-recv:rdma-recv rdma-send-serve:rdma-send; do
  unit=$stage/lib/systemd/system/${unit_name%%:*}.service program=${unit_name#*:}
  if [[ -f $unit ]]; then
    grep -q '^LimitMEMLOCK=infinity$' "$unit" || fail "$unit: no LimitMEMLOCK=infinity"
    grep -q "^ExecStart=$stage/bin/$program " "$unit" || fail "$unit: ExecStart does not name $stage/bin/$program"
    ! grep -q '@[A-Z_]*@' "$unit" || fail "$unit: unconfigured @VARIABLE@ left"
    grep -q '^Type=notify$' "$unit" || fail "$unit: not Type=notify"
    grep -q '^WatchdogSec=' "$unit" || fail "$unit: no WatchdogSec="
    # systemd-analyze verify wants ExecStart= to exist; the staged binary does. It needs no
    # running systemd (offline). Its complaints about units this one orders itself after
    # (not installed here) are not about this unit.
    if command -v systemd-analyze >/dev/null; then
      verify=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$unit" 2>&1 |
        grep -v 'rdma-load-modules\|network-online' || true)
      [[ -z $verify ]] || fail "$unit: systemd-analyze verify: $verify"
    else
      fail "no systemd-analyze to verify the unit with (Debian: systemd; scripts/install-deps.sh)"
    fi
  else
    fail "lib/systemd/system/${unit_name%%:*}.service missing"
  fi
done

for program in rdma-send rdma-recv; do
  [[ -f $stage/share/bash-completion/completions/$program ]] ||
    fail "share/bash-completion/completions/$program missing"
done

for example in secrets.example senders.example; do
  if [[ -f $stage/share/doc/rdmax/$example ]]; then
    grep -q 0600 "$stage/share/doc/rdmax/$example" || fail "$example does not mention mode 0600"
  else
    fail "share/doc/rdmax/$example missing"
  fi
done

if ((failures)); then echo "install: $failures failure(s)" >&2; exit 1; fi
echo "install: ok ($(find "$stage" -type f | wc -l) files under a staging prefix)"
