#!/usr/bin/env bash
# The bash completions (packaging/completions/): every long option --help lists is offered,
# and the completion functions give the right words for options, values, devices and files.
#   tests/completion_test.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: completion_test.sh BUILD_DIR}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
completions=$source_dir/packaging/completions
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmax-completion.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Long options, one per line: of --help, and of the completion file's option list.
help_options() {
  "$build/bin/$1" --help | grep -oE -- '^ +(-[a-zA-Z0-9],)?--[a-z][a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+' |
    sort -u
}
# complete PROGRAM WORD...: the completions bash would offer for the last WORD (the one
# being typed; "" for a new word), one per line, sorted. In a clean bash, with only the
# completion file sourced (and a fake /sys with the device "rxe0").
complete_words() {
  local program=$1; shift
  env -i PATH="$PATH" HOME="$work" _RDMAX_SYSFS="$work/sys" bash --norc --noprofile -c '
    source "$1"; shift
    program=$1; shift
    COMP_WORDS=("$program" "$@"); COMP_CWORD=$#
    COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
    function=$(complete -p "$program" | sed -E "s/.*-F ([^ ]+) .*/\1/")
    "$function" "$program" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$completions/$program" "$program" "$@" | sort
}
# expect PROGRAM 'EXPECTED WORDS' WORD...: the completions of WORD... are exactly those.
expect() {
  local program=$1 expected=$2; shift 2
  local got
  got=$(complete_words "$program" "$@" | tr '\n' ' ' | sed 's/ $//')
  [[ $got == "$expected" ]] || fail "$program $* <TAB>: got '$got', expected '$expected'"
}

mkdir -p "$work/sys/class/infiniband/rxe0" "$work/files/subdir"
touch "$work/files/image.iso" "$work/files/image.img"

for program in rdma-send rdma-recv; do
  file=$completions/$program
  [[ -f $file ]] || { fail "no completion file $file"; continue; }
  registered=$(bash --norc -c 'source "$1" && complete -p "$2"' _ "$file" "$program") ||
    fail "$program: sourcing $file registers no completion"
  [[ $registered == "complete -F _"*" $program" ]] || fail "$program: complete -p says '$registered'"
  # Every long option of --help, and no other (except ones --help hides).
  offered=$(complete_words "$program" --)
  missing=$(comm -23 <(help_options "$program") <(echo "$offered"))
  extra=$(comm -13 <(help_options "$program") <(echo "$offered"))
  [[ -z $missing ]] || fail "$program: --help lists, $file does not offer: $(echo $missing)"
  [[ -z $extra ]] || fail "$program: $file offers options --help does not list: $(echo $extra)"
  expect "$program" 'rxe0' -d ''
  expect "$program" 'rxe0' --device r
done

expect rdma-send '--digest --digest-at-end --digest-first' --dig
expect rdma-send 'blake3 fsverity sha256' --digest ''
expect rdma-send 'sha256' --digest s
expect rdma-send '--no-digest-cache --no-progress --no-seal' --no-
expect rdma-send "$work/files/image.img $work/files/image.iso" -H host "$work/files/image.i"
expect rdma-send "$work/files/subdir" -H host "$work/files/s"
expect rdma-send '' --port ''
expect rdma-send '' --bwlimit ''
expect rdma-send '' -P ''
expect rdma-send '--recursive' --rec
expect rdma-send '--check --checksum' --che
expect rdma-recv '--list-devices' --list
expect rdma-recv "$work/files/subdir" --dir "$work/files/"
expect rdma-recv '--max-connections --max-memory --max-size' --max

if ((failures)); then echo "completion: $failures failure(s)" >&2; exit 1; fi
echo "completion: ok (rdma-send and rdma-recv: every --help option, values, devices, files)"
