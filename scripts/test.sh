#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what is needed, builds,
# and runs every test: unit tests, then the end-to-end tests over Soft-RoCE.
set -euo pipefail
cd "$(dirname "$0")/.."
# phase NAME: where the command's time goes (it must stay under 35 minutes).
phase() { echo "== test.sh, $((SECONDS / 60))m$((SECONDS % 60))s in: $*"; }
phase "packages"
scripts/install-deps.sh
build=${BUILD_DIR:-build}
# The programs of the last version-1 release (tests/e2e/interop_v1.sh: ctest passes it
# ${build}-v1/src-build/bin) and of the last release without BLAKE3 (interop_release.sh),
# built in the background from here on at the lowest priority: built one after the other
# below the fuzzers, they took 145 s with one core mostly idle (the release's unity batches
# compile one after another). At nice 19 in this command's own session they take only the
# CPU the builds below leave; not in a session of their own (setsid): Linux's autogroups
# give each session an equal share whatever its nice value, and the Release build took 5.4
# minutes instead of 3.6. Each status is written for the wait before the Soft-RoCE tests;
# 77: this clone lacks that commit, and the test skips.
pinned_log=${build}-pinned.log
rm -f "$pinned_log" "${build}"-pinned.rc-*
mkdir -p "$(dirname "$pinned_log")"
(
  for which in v1 release; do
    rc=0
    nice -n 19 "scripts/lib/build-${which}.sh" "${build}-${which}" || rc=$?
    echo "$rc" >"${build}-pinned.rc-${which}"
  done
) >"$pinned_log" 2>&1 &
pinned_pid=$!
# kill_tree PID: PID and every process below it (a failure below must not leave a compiler
# running after this command).
kill_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
trap 'kill_tree "$pinned_pid"' EXIT
# Unity builds: each target's sources compiled 16 to a file, so the headers every file
# includes (GoogleTest, spdlog, fmt, the standard library) are parsed and their templates
# generated once per 16 files, not once per file: the three builds below took 17 of this
# command's minutes, and take about half as long so. What a unity build can hide, a file that
# lacks an #include another file of its batch brings, the ordinary build (cmake's default,
# what developers build) still reports; what it adds, two files of one target defining the
# same name at file scope, is an error here, so such names are made distinct.
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
# Ninja where there is one (scripts/lib/cmake-generator.sh says why).
# shellcheck source=scripts/lib/cmake-generator.sh
source scripts/lib/cmake-generator.sh
# -O2, not CMake's -O3 for Release: what the Debian package ships (dpkg-buildflags), and a
# fifth less compile time (a unity batch of the unit tests: 33 s instead of 41).
release=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG")
# The Release build is what the Soft-RoCE tests run: the programs and the tests' tools, not
# the GoogleTest binary. That binary is most of each build's time (19,000 lines of tests over
# GoogleTest's templates: about two of the Release build's 4.7 minutes), and its tests run
# under both sanitizers below (clang), each of them twice; a third run, by GCC at -O2, only
# repeated them. GCC's warnings, errors here, still cover the programs (this build and the
# Debian package's); the tests' own code has clang's.
phase "the Release build"
cmake_generator "$build"
cmake -S . -B "$build" "${gen[@]}" "${release[@]}" -DRDMAX_WERROR=ON -DRDMAX_BUILD_UNIT_TESTS=OFF "${unity[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
# The tests of the unit label that need no GoogleTest (the command line, the install, the
# completions, the checksums) against the Release programs; the Soft-RoCE tests at the end,
# one at a time (each boots guests that want both cores).
phase "unit tests of the programs"
ctest --test-dir "$build" --output-on-failure -L unit -j "$(nproc)"
# sanitized_unit_tests DIR: the unit tests of a sanitizer build. The GoogleTest binary runs
# itself, its tests shared among a few processes (GoogleTest's sharding), rather than one
# process per test through ctest: a process under a sanitizer takes about 0.1 s to start,
# which was most of these phases (ASan 103 s through ctest, 25 s in one process).
# Sixteen shards per core, four running per core: GoogleTest deals the tests out in turn, and
# with one shard per core the two slowest under ThreadSanitizer (43 of its 95 s) fell in one,
# which ran 73 s while the other ran 22; and much of these tests' time is waiting (for fsync,
# a timeout, a reference tool), which a core spends on another shard. Eight shards, two
# running: ASan 57 s, TSan 72 s; thirty-two, eight running: 39 s and 60 s. (Each test has
# a fixture of its own; a developer's plain build still registers each one with ctest, to run
# alone.) The tests that are not GoogleTest's (install, completion, checksum, local_input,
# pipeline_bench: no dot in their names) go through ctest.
sanitized_unit_tests() {
  local dir=$1 shards i failed=0
  shards=$((16 * $(nproc)))
  rm -f "$dir"/unit-shard-*
  # shellcheck disable=SC2016 # expanded by each shard's shell
  seq 0 $((shards - 1)) | xargs -P $((4 * $(nproc))) -I{} bash -c \
    'GTEST_TOTAL_SHARDS=$2 GTEST_SHARD_INDEX=$3 "$1/bin/rdmax_unit_tests" --gtest_brief=1 \
       >"$1/unit-shard-$3.log" 2>&1; echo $? >"$1/unit-shard-$3.rc"' _ "$dir" "$shards" {} || true
  for ((i = 0; i < shards; i++)); do
    if [[ $(cat "$dir/unit-shard-$i.rc" 2>/dev/null) == 0 ]]; then
      echo "unit tests, shard $((i + 1)) of $shards: $(grep -a 'PASSED' "$dir/unit-shard-$i.log")"
    else
      failed=1
      echo "unit tests, shard $((i + 1)) of $shards, failed ($dir/unit-shard-$i.log):"
      cat "$dir/unit-shard-$i.log"
    fi
  done
  ((failed == 0)) || return 1
  ctest --test-dir "$dir" --output-on-failure -L unit -E '\.' -j "$(nproc)"
}
# The sanitizer builds use clang (the Release build above is GCC's, so both compilers'
# warnings are errors): on this project clang compiles a unity batch of the unit tests in
# 21 s where GCC takes 37, the ASan build took 2.0 minutes instead of 4.5 and the TSan build
# 1.6 instead of 3, and its ThreadSanitizer ran the unit tests in 50 s instead of 95.
# Line tables only, not full debug information: a sanitizer's report still names file and
# line, and a unity batch of the unit tests compiles in 32 s instead of 37.
# LLVM's linker: GNU ld took 4-5 s for each sanitized unit-test binary (44 MB), the last step
# of each build, on one core.
lld=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld)
clang=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${lld[@]}"
  -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only)
# What the sanitizer builds run (the unit tests; the programs, for the tests of the unit label
# that are not GoogleTest's; the pipeline benchmark): not the attacker, the revocation
# benchmark or the fsync shim, which only the Soft-RoCE tests of the Release build use.
sanitized_targets=(--target rdmax_unit_tests rdma-send rdma-recv rdmax-pipeline-bench)
# The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer, in their own
# build directory: memory errors and undefined behaviour that the optimised build hides.
san=${build}-san
phase "the AddressSanitizer build and its unit tests"
cmake_generator "$san"
cmake -S . -B "$san" "${gen[@]}" "${clang[@]}" -DCMAKE_BUILD_TYPE=Debug -DRDMAX_WERROR=ON -DRDMAX_SANITIZE=ON "${unity[@]}" >/dev/null
cmake --build "$san" -j "$(nproc)" "${sanitized_targets[@]}"
sanitized_unit_tests "$san"
# And under ThreadSanitizer (it cannot share a binary with ASan): data races and lock-order
# inversions between the event loop and the worker pool (common/work/work_pool.hpp).
tsan=${build}-tsan
phase "the ThreadSanitizer build and its unit tests"
cmake_generator "$tsan"
cmake -S . -B "$tsan" "${gen[@]}" "${clang[@]}" -DCMAKE_BUILD_TYPE=Debug -DRDMAX_WERROR=ON -DRDMAX_TSAN=ON "${unity[@]}" >/dev/null
cmake --build "$tsan" -j "$(nproc)" "${sanitized_targets[@]}"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 sanitized_unit_tests "$tsan"
# Coverage-guided fuzzing of the protocol code (tests/fuzz), RDMAX_FUZZ_SECONDS (default 30)
# per target, with the same sanitizers. libFuzzer comes with clang, so this build uses
# clang++ and builds only the fuzzers.
fuzz=${build}-fuzz
phase "the fuzzers"
cmake_generator "$fuzz"
cmake -S . -B "$fuzz" "${gen[@]}" -DCMAKE_CXX_COMPILER=clang++ "${lld[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
  -DRDMAX_WERROR=ON -DRDMAX_SANITIZE=ON -DRDMAX_BUILD_TESTS=OFF -DRDMAX_FUZZ=ON "${unity[@]}" >/dev/null
cmake --build "$fuzz" -j "$(nproc)" --target rdmax_fuzzers
ctest --test-dir "$fuzz" --output-on-failure -L fuzz -j "$(nproc)"
# The programs of the last releases, built in the background since the top.
phase "the programs of the last releases (waited for)"
wait "$pinned_pid" || true
trap - EXIT
cat "$pinned_log"
for which in v1 release; do
  rc=$(cat "${build}-pinned.rc-${which}" 2>/dev/null || echo 1)
  ((rc == 0 || rc == 77)) || { echo "the build of the ${which} programs failed ($rc)" >&2; exit "$rc"; }
done
# Last, the Soft-RoCE tests (one at a time, as above).
phase "the Soft-RoCE tests"
ctest --test-dir "$build" --output-on-failure -L rxe
phase "done"
