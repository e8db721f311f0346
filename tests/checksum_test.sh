#!/usr/bin/env bash
# `rdma-send --checksum`: without connecting anywhere, each FILE's line exactly as the
# reference tool prints it (`b3sum` for the default digest, BLAKE3; `fsverity digest
# --hash-alg=sha256 --block-size=4096` for --digest fsverity; `sha256sum` for --digest sha256), on sizes at
# every edge of both trees, a large sparse file and awkward names; the digest cache neither changes a line nor survives a change of the
# file. No RDMA needed: it runs with the unit tests.
#   tests/checksum_test.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: checksum_test.sh BUILD_DIR}
send=$build/bin/rdma-send
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmax-checksum.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache  # this test's own digest cache
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
for tool in fsverity b3sum; do
  command -v $tool >/dev/null || { echo "FAIL: $tool (a reference tool) is not installed; scripts/install-deps.sh installs it" >&2; exit 1; }
done

cd "$work"
mkdir files
# fs-verity's 4 KiB block and 512 KiB group; BLAKE3's 64-byte block and 1 KiB chunk; the
# sender's 1 MiB chunk and 4 MiB hashing segment, each +-1; many MiB.
sizes=(0 1 63 64 65 1023 1024 1025 4095 4096 4097 100000 524287 524288 524289 1048575 1048576
  1048577 4194303 4194304 4194305 67108869)
for size in "${sizes[@]}"; do head -c "$size" /dev/urandom >"files/f$size"; done
# Sparse: 2 GiB of holes around a few bytes (every 4 MiB segment but two is zeros).
truncate -s 2G files/sparse
printf 'middle' | dd of=files/sparse bs=1 seek=1073741000 conv=notrunc status=none
printf 'spaced' >'files/with space'
printf 'newline' >$'files/new\nline'
printf 'backslash' >'files/back\slash'
printf 'cr' >$'files/carriage\rreturn'
printf 'unicode' >'files/ü 日本'
printf 'not utf-8' >$'files/bad\xff\xe2\x82A'  # b3sum writes U+FFFD for what is not UTF-8
mapfile -d '' names < <(find files -type f -print0 | LC_ALL=C sort -z)

# compare WHAT EXPECTED-FILE GOT-FILE
compare() {
  cmp -s "$2" "$3" || fail "$1 differs from the reference:
$(diff <(cat -A "$2") <(cat -A "$3") | head -20)"
}

# The reference tools read every byte of the 2 GiB sparse file (6.6 s and 8.1 s on this
# machine, where rdma-send skips the holes): run at once, in the background, while rdma-send
# is checked against the first.
b3sum "${names[@]}" >expected.blake3 &
b3sum_pid=$!
sha256sum "${names[@]}" >expected.sha256 &
sha256sum_pid=$!
fsverity digest --hash-alg=sha256 --block-size=4096 "${names[@]}" >expected.fsverity
"$send" --checksum --digest fsverity "${names[@]}" >got.fsverity || fail "--digest fsverity exited $?"
compare "--checksum --digest fsverity" expected.fsverity got.fsverity
# One thread gives the same lines as many. (Nothing came from the cache: the files were
# written within the last seconds, which the cache does not remember.)
"$send" --checksum --digest fsverity --hash-threads 1 "${names[@]}" >got.fsverity-1 ||
  fail "--digest fsverity --hash-threads 1 exited $?"
compare "--checksum --digest fsverity --hash-threads 1" expected.fsverity got.fsverity-1

# The default: BLAKE3, as b3sum prints it.
wait "$b3sum_pid" || fail "b3sum exited $?"
"$send" --checksum "${names[@]}" >got.blake3 || fail "--checksum exited $?"
compare "--checksum (BLAKE3, the default)" expected.blake3 got.blake3
"$send" --checksum --digest blake3 --hash-threads 1 "${names[@]}" >got.blake3-1 ||
  fail "--digest blake3 --hash-threads 1 exited $?"
compare "--checksum --digest blake3 --hash-threads 1" expected.blake3 got.blake3-1

wait "$sha256sum_pid" || fail "sha256sum exited $?"
"$send" --checksum --digest sha256 "${names[@]}" >got.sha256 || fail "--digest sha256 exited $?"
compare "--checksum --digest sha256" expected.sha256 got.sha256

# The cache: files older than a few seconds are remembered; a second run answers from it
# (rdma-send -vv says so), and a change of content with the same size and mtime is seen.
old=files/f100000
touch -d '-1 hour' "$old"
sleep 2.2  # the ctime that touch just set must be older than the cache's 2 s racy window
"$send" --checksum -vv "$old" >first 2>first.log || fail "first --checksum of $old exited $?"
"$send" --checksum -vv "$old" >second 2>second.log || fail "second --checksum of $old exited $?"
compare "the cached line" first second
grep -q 'from the digest cache' second.log || fail "the second run did not use the digest cache: $(tail -3 second.log)"
grep -q 'from the digest cache' first.log && fail "the first run claims the digest cache"
printf 'X' | dd of="$old" bs=1 seek=5000 conv=notrunc status=none
touch -d '-1 hour' "$old"  # same size, same mtime: only the ctime and the content changed
"$send" --checksum -vv "$old" >third 2>third.log || fail "third --checksum exited $?"
b3sum "$old" >expected.changed
compare "the line after a same-size change" expected.changed third
grep -q 'from the digest cache' third.log && fail "a changed file was answered from the cache"
"$send" --checksum --no-digest-cache -vv "$old" >fourth 2>fourth.log || fail "--no-digest-cache exited $?"
compare "--no-digest-cache" expected.changed fourth
grep -q 'from the digest cache' fourth.log && fail "--no-digest-cache used the cache"

# Unreadable input: reported, the other files still printed, exit 2.
rc=0
"$send" --checksum files/f1 missing files/f0 >partial 2>partial.err || rc=$?
((rc == 2)) || fail "--checksum with a missing file exited $rc, expected 2"
grep -q 'missing' partial.err || fail "no message names the missing file: $(cat partial.err)"
[[ $(wc -l <partial) -eq 2 ]] || fail "expected the two readable files' lines, got: $(cat partial)"
rc=0
"$send" --checksum files >/dev/null 2>dir.err || rc=$?
((rc == 2)) || fail "--checksum of a directory exited $rc, expected 2"
grep -q 'directory' dir.err || fail "no message says it is a directory: $(cat dir.err)"
rc=0
"$send" --checksum --digest md5 files/f1 >/dev/null 2>bad.err || rc=$?
((rc == 2)) || fail "--digest md5 exited $rc, expected 2"
rc=0
"$send" --checksum --hash-threads 0 files/f1 >/dev/null 2>bad.err || rc=$?
((rc == 2)) || fail "--hash-threads 0 exited $rc, expected 2"

if ((failures > 0)); then echo "checksum: $failures failure(s)" >&2; exit 1; fi
echo "checksum: ${#names[@]} files match fsverity digest, b3sum and sha256sum; cache hit, invalidated by a same-size change; errors reported"
