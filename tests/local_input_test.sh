#!/usr/bin/env bash
# Local input first (issue 22): rdma-send checks every PATH and --name, and both programs
# refuse a loopback address, before any device, route or connection work. So on a host
# with no RDMA device at all (where this runs, with the unit tests) a wrong PATH must still
# be exit 2 with the PATH named, not "no RDMA device found" (exit 3).
#   tests/local_input_test.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: local_input_test.sh BUILD_DIR}
send=$build/bin/rdma-send recv=$build/bin/rdma-recv
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmax-local-input.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

out=$work/out err=$work/err
# run PROGRAM ARGS...: sets rc; stdout in $out, stderr in $err; bounded at 20 s.
run() {
  last_run="$*"
  rc=0
  timeout -k 5 20 "$@" >"$out" 2>"$err" </dev/null || rc=$?
}
# expect STATUS PATTERN: the last run exited STATUS and its stderr matches PATTERN (grep -E).
expect() {
  ((rc == $1)) || fail "$last_run: expected exit $1, got $rc: $(head -c 400 "$err")"
  grep -Eq -- "$2" "$err" || fail "$last_run: stderr does not match /$2/: $(head -c 400 "$err")"
  [[ ! -s $out ]] || fail "$last_run: stdout must stay empty"
}

mkdir -p "$work/in/dir" && chmod 755 "$work" "$work/in" "$work/in/dir"
echo hello >"$work/in/hello.txt" && chmod 644 "$work/in/hello.txt"
echo inner >"$work/in/dir/inner.txt"
ln -s hello.txt "$work/in/link"
host=192.0.2.1  # TEST-NET-1: never reached, every case stops before connecting

# A missing PATH, alone and among others, with -r and -P too.
run "$send" -H $host "$work/in/missing.bin"
expect 2 "cannot read '$work/in/missing.bin': No such file or directory; check the path"
run "$send" -H $host "$work/in/hello.txt" "$work/in/missing.bin"
expect 2 "cannot read '$work/in/missing.bin'"
run "$send" -H $host -r -P 2 "$work/in/dir" "$work/in/missing.bin"
expect 2 "cannot read '$work/in/missing.bin'"
# A directory without -r.
run "$send" -H $host "$work/in/dir"
expect 2 "'$work/in/dir' is a directory; use -r"
# A file that cannot be read (permissions do not apply to root: run it as nobody).
echo private >"$work/in/private.txt" && chmod 600 "$work/in/private.txt"
as_nobody=()
((EUID != 0)) || as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
run "${as_nobody[@]}" "$send" -H $host "$work/in/private.txt"
expect 2 "cannot read '$work/in/private.txt': Permission denied; .*readable"
run "${as_nobody[@]}" "$send" -H $host "$work/in/hello.txt" "$work/in/private.txt"
expect 2 "cannot read '$work/in/private.txt': Permission denied"
# Only a symbolic link: nothing is left to send.
run "$send" -H $host "$work/in/link"
expect 2 "nothing to send"
# --name must be one plain file name (the protocol's rule), checked here.
run "$send" -H $host --name a/b "$work/in/hello.txt"
expect 2 "--name 'a/b' holds a '/'"
run "$send" -H $host --name .. "$work/in/hello.txt"
expect 2 "--name '\.\.' is \"\.\" or \"\.\.\""
run "$send" -H $host --name "" "$work/in/hello.txt"
expect 2 "--name '' is empty"
run "$send" -H $host --name "$(printf 'a\tb')" "$work/in/hello.txt"
expect 2 "contains a control character"
run "$send" -H $host --name x -r "$work/in/dir"
expect 2 "--name renames a file"

# Loopback: RDMA cannot use it; said before any device work (exit 2), with what to use.
for loopback in 127.0.0.1 127.1.2.3 ::1 '[::1]' localhost; do
  run "$send" -H "$loopback" "$work/in/hello.txt"
  expect 2 "RDMA does not work over loopback.*rdma link"
done
run "$send" --check -H 127.0.0.1
expect 2 "RDMA does not work over loopback"
mkdir -p "$work/received"
for loopback in 127.0.0.1 ::1 localhost; do
  run "$recv" --bind "$loopback" --dir "$work/received"
  expect 2 "RDMA does not work over loopback.*rdma link"
done

# With good input and no RDMA device here, the device check is what stops the run.
if ! compgen -G '/sys/class/infiniband/*' >/dev/null; then
  run "$send" -H $host "$work/in/hello.txt"
  expect 3 "no RDMA device"
fi

# --json promises one object whatever the outcome (rdma-send(1)): also when the command
# ends before any transfer, with no entries, the exit status and the error.
run "$send" -H $host --json "$work/in/missing.bin"
((rc == 2)) || fail "--json, missing PATH: expected exit 2, got $rc"
grep -Eq '^\{"entries":\[\],"exit_code":2,"error":"cannot read .*missing\.bin.*"\}$' "$out" ||
  fail "--json, missing PATH: no JSON object on stdout: $(head -c 300 "$out")"
run "$send" -H 127.0.0.1 --json "$work/in/hello.txt"
grep -Eq '"exit_code":2,"error":"-H 127\.0\.0\.1: RDMA does not work over loopback' "$out" ||
  fail "--json, loopback: no JSON object on stdout: $(head -c 300 "$out")"

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "local input checks: all passed"
