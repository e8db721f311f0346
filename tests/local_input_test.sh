#!/usr/bin/env bash
# Local input first (issue 22): rdma-send checks every PATH and --name, and both programs
# refuse a loopback address, before any device, route or connection work. So on a host
# with no RDMA device at all (where this runs, with the unit tests) a wrong PATH must still
# be exit 2 with the PATH named, not "no RDMA device found" (exit 3). The rest of the command
# line that needs no device follows (below the line of dashes), case by case.
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

# ---------------------------------------------------------------------------------
# The rest of the command line that needs no device: --help and --version, usage errors,
# unusable files and directories, bad secrets files (malformed, missing, readable by others),
# bad --bwlimit rates, hostile --name values and the options of many machines (--shard auto
# outside a launcher, --files-from). Each is exit 0 (help, version) or exit 2 with a message
# on stderr that says what is wrong, decided before any device work: here, with the unit
# tests, instead of a program start in the emulated test bed for each (about a second there;
# tests/e2e/cli.sh keeps what needs a device). Each case runs in a subshell that case_fail ends.
# ---------------------------------------------------------------------------------
port=18600
mkdir -p "$work/dir" && chmod 755 "$work/dir"
# Permission checks do not apply to root: run such cases as nobody.
as_nobody=()
((EUID != 0)) || as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
case_fail() {
  echo "FAIL: $case_name: $*" >&2
  echo "  last run: ${last_run:-none} -> status ${rc:-?}" >&2
  [[ ! -s $err ]] || head -n 10 "$err" | sed 's/^/    | /' >&2
  exit 1
}
run_case() {
  case_name=$1
  if ("$2"); then echo "ok: $1"; else failures=$((failures + 1)); fi
}
expect_status() { ((rc == $1)) || case_fail "expected exit $1, got $rc"; }
# expect_stderr PATTERN: stderr matches PATTERN (grep -E, case-insensitive).
expect_stderr() { grep -Eqi -- "$1" "$err" || case_fail "stderr does not match /$1/"; }
expect_stdout() { grep -Eq -- "$1" "$out" || case_fail "stdout does not match /$1/"; }

case_help_and_version() {
  local program
  for program in "$send" "$recv"; do
    run "$program" --help
    expect_status 0
    expect_stdout '^Usage: rdma-(send|recv)'
    expect_stdout '^Exit status:'
    expect_stdout '^Examples:'
    expect_stdout '--device'
    run "$program" --version
    expect_status 0
    expect_stdout '^rdma-(send|recv) [0-9]+\.[0-9]+\.[0-9]+$'
  done
  run "$recv" --help
  expect_stdout '--list-devices'
}

case_usage_errors() {
  run "$send" --bogus -H "$host" "$work/in/hello.txt"
  expect_status 2 && expect_stderr 'bogus'
  run "$recv" --bogus
  expect_status 2 && expect_stderr 'bogus'
  run "$send" "$work/in/hello.txt"
  expect_status 2 && expect_stderr 'host.*required'
  run "$send" -H "$host"
  expect_status 2 && expect_stderr 'PATH.*required'
  run "$recv" --slot-size 12Q
  expect_status 2 && expect_stderr 'slot-size.*not a size'
  run "$recv" --slot-size 1K
  expect_status 2 && expect_stderr 'slot-size must be a multiple of 4K between'
  run "$recv" --slot-size 6000
  expect_status 2 && expect_stderr 'slot-size must be a multiple of 4K between'
  run "$send" -H "$host" -p 70000 "$work/in/hello.txt"
  expect_status 2 && expect_stderr 'port'
  run "$send" -H "$host" -p 0 "$work/in/hello.txt"
  expect_status 2 && expect_stderr 'port'
  run "$recv" -p 70000
  expect_status 2 && expect_stderr 'port'
  run "$send" -H "$host" --progress --no-progress "$work/in/hello.txt"
  expect_status 2 && expect_stderr 'progress excludes --no-progress'
}

case_unusable_file() {
  run "$send" -H "$host" -p "$port" "$work/in/missing.bin"
  expect_status 2 && expect_stderr 'No such file or directory; check the path'
  run "$send" -H "$host" -p "$port" "$work/in"
  expect_status 2 && expect_stderr 'is a directory' && expect_stderr ' -r'
  echo secret >"$work/in/private.txt" && chmod 600 "$work/in/private.txt"
  run "${as_nobody[@]}" "$send" -H "$host" -p "$port" "$work/in/private.txt"
  expect_status 2 && expect_stderr 'permission denied.*readable'
  [[ ! -s $out ]] || case_fail "stdout must stay empty"
}

case_unusable_dir() {
  run "$recv" --dir "$work/missing"
  expect_status 2 && expect_stderr 'cannot open output directory.*No such file.*mkdir'
  run "${as_nobody[@]}" "$recv" --dir "$work/dir"
  expect_status 2 && expect_stderr 'output directory.*(not writable|Permission denied).*(chown|chmod)'
  run "$recv" --dir "$work/in/hello.txt"
  expect_status 2 && expect_stderr 'not a directory'
}

case_bad_secrets() {
  local secrets=$work/secrets
  (umask 077 && printf '%s\n' 'alice s3cret' 'bob' >"$secrets")
  run "$recv" --dir "$work/dir" --secrets "$secrets"
  expect_status 2 && expect_stderr "secrets:2"
  (umask 022 && printf '%s\n' 'alice s3cret' >"$secrets.open" && chmod 644 "$secrets.open")
  run "$recv" --dir "$work/dir" --secrets "$secrets.open"
  expect_status 2 && expect_stderr 'chmod 600'
  run "$recv" --dir "$work/dir" --secrets "$work/no-secrets"
  expect_status 2 && expect_stderr 'secrets'
}

case_bwlimit_usage() {
  local bad
  for bad in 0 -5M 12Q 1.5M M 5MB/h; do
    run "$send" -H "$host" -p "$port" "--bwlimit=$bad" "$work/in/hello.txt"
    expect_status 2 && expect_stderr "bwlimit.*'?$bad'? is not a rate"
  done
}

# rdma-send checks --name itself (rdma-send(1)): a usage error, nothing sent. That the
# receiver refuses each such name too is tests/e2e/hostile.sh's `names` case.
case_hostile_names() {
  local name outside=$work/outside names=(. .. ../x ../evil a/b /etc/passwd a/../b "$work/outside/abs"
    $'ctl\x01x' $'new\nline' $'del\x7f' $'esc\x1b[2J')
  mkdir -p "$outside"
  for name in "${names[@]}"; do
    run "$send" -H "$host" -p "$port" --name "$name" "$work/in/hello.txt"
    expect_status 2
    expect_stderr "--name"
  done
  [[ ! -e $work/x && ! -e $work/evil && ! -e $outside/abs ]] || case_fail "a hostile name created a file"
}

# A secrets file that group or others may read or write is refused, with its mode and the fix.
case_secrets_permissions() {
  local mode bad=$work/secrets-open
  printf 'alice s3cr3t-alice\n' >"$bad"
  for mode in 644 640 604 660; do
    chmod "$mode" "$bad"
    run "$recv" --port "$port" --dir "$work/dir" --secrets "$bad"
    expect_status 2
    expect_stderr "chmod 600 $bad"
    expect_stderr "0$mode"
  done
}

# Many machines' options (issue 24): --shard auto outside a launcher, a listed name outside
# --base, a list that does not exist.
case_launcher_and_list() {
  mkdir -p "$work/in/tree" && echo x >"$work/in/tree/x"
  run env -u SLURM_PROCID -u OMPI_COMM_WORLD_RANK -u PMI_RANK \
    "$send" -H "$host" -p "$port" -r --shard auto "$work/in/tree"
  expect_status 2 && expect_stderr 'SLURM_PROCID'
  echo /etc/passwd >"$work/list"
  run "$send" -H "$host" -p "$port" --files-from "$work/list" --base "$work/in/tree"
  expect_status 2 && expect_stderr 'not beneath --base'
  run "$send" -H "$host" -p "$port" --files-from "$work/no list"
  expect_status 2 && expect_stderr 'no list'
}

run_case help-and-version case_help_and_version
run_case usage-errors case_usage_errors
run_case unusable-file case_unusable_file
run_case unusable-dir case_unusable_dir
run_case bad-secrets case_bad_secrets
run_case bwlimit-usage case_bwlimit_usage
run_case hostile-names case_hostile_names
run_case secrets-permissions case_secrets_permissions
run_case launcher-and-list case_launcher_and_list

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "local input checks: all passed"
