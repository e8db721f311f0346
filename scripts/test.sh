#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what is needed, builds, and runs
# every test: the unit tests, the end-to-end tests over Soft-RoCE, then the unit tests under
# AddressSanitizer and ThreadSanitizer and the fuzzers, whose builds run in the background
# at the lowest priority while the Soft-RoCE tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
# phase NAME: where the command's time goes (it must stay under 35 minutes).
phase() { echo "== test.sh, $((SECONDS / 60))m$((SECONDS % 60))s in: $*"; }
phase "packages"
scripts/install-deps.sh
build=${BUILD_DIR:-build}
# kill_tree PID: PID and every process below it (a failure below must not leave a compiler
# running after this command).
kill_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
# Unity builds: each target's sources compiled 16 to a file, so the headers every file
# includes (GoogleTest, spdlog, fmt, the standard library) are parsed and their templates
# generated once per 16 files, not once per file: the three builds below took 17 of this
# command's minutes, and take about half as long so. What a unity build can hide, a file that
# lacks an #include another file of its batch brings, the ordinary build (cmake's default,
# what developers build) still reports; what it adds, two files of one target defining the
# same name at file scope, is an error here, so such names are made distinct.
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
# -O2, not CMake's -O3 for Release: what the Debian package ships (dpkg-buildflags), and a
# fifth less compile time (a unity batch of the unit tests: 33 s instead of 41).
release=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG")
# The sanitizer builds use clang (the Release build is GCC's, so both compilers' warnings
# are errors): on this project clang compiles a unity batch of the unit tests in 21 s where
# GCC takes 37, and its ThreadSanitizer ran the unit tests in 50 s instead of 95. Line
# tables only, not full debug information: a sanitizer's report still names file and line,
# and a batch compiles in 32 s instead of 37.
clang=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
  -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only)
# What the sanitizer builds run (the unit tests; the programs, for the tests of the unit label
# that are not GoogleTest's; the pipeline benchmark): not the attacker, the revocation
# benchmark or the fsync shim, which only the Soft-RoCE tests of the Release build use.
sanitized_targets=(--target rdmax_unit_tests rdma-send rdma-recv rdmax-pipeline-bench)
san=${build}-san tsan=${build}-tsan fuzz=${build}-fuzz
# The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer (memory errors
# and undefined behaviour that the optimised build hides), and under ThreadSanitizer (it
# cannot share a binary with ASan: data races and lock-order inversions between the event
# loop and the worker pool, common/work/work_pool.hpp); coverage-guided fuzzing of the
# protocol code (tests/fuzz) with ASan, built by clang++ (libFuzzer comes with it), only the
# fuzzers.
build_asan() {
  cmake -S . -B "$san" "${clang[@]}" -DCMAKE_BUILD_TYPE=Debug -DRDMAX_WERROR=ON -DRDMAX_SANITIZE=ON "${unity[@]}" >/dev/null
  cmake --build "$san" -j "$(nproc)" "${sanitized_targets[@]}"
}
build_tsan() {
  cmake -S . -B "$tsan" "${clang[@]}" -DCMAKE_BUILD_TYPE=Debug -DRDMAX_WERROR=ON -DRDMAX_TSAN=ON "${unity[@]}" >/dev/null
  cmake --build "$tsan" -j "$(nproc)" "${sanitized_targets[@]}"
}
build_fuzzers() {
  cmake -S . -B "$fuzz" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
    -DRDMAX_WERROR=ON -DRDMAX_SANITIZE=ON -DRDMAX_BUILD_TESTS=OFF -DRDMAX_FUZZ=ON "${unity[@]}" >/dev/null
  cmake --build "$fuzz" -j "$(nproc)" --target rdmax_fuzzers
}
# In the background from here on, one after the other: the programs of the last version-1
# release (tests/e2e/interop_v1.sh: ctest passes it ${build}-v1/src-build/bin) and of the
# last release without BLAKE3 (interop_release.sh), the Debian package (package.build), then
# the three builds above. At the lowest priority there is (SCHED_IDLE: any other runnable
# thread, a guest's vCPU included, takes the core at once), in this command's own session
# (Linux's autogroups give each session an equal share whatever its priority). The Release
# build and the unit tests leave them little; the Soft-RoCE tests leave them much: a
# one-host boot kept the CPUs 54% busy (rxe.cli alone, 307 s), and beside it a whole TSan
# build was done when the boot ended (400 s). Each step's log and status go to
# ${build}-background/STEP.{log,rc}, which the fixtures of rxe.many wait for
# (scripts/lib/wait-background.sh: package.build, pinned.wait; 77: this clone lacks a
# pinned commit, and its suite skips); what is left of the sanitizer and fuzzer builds when
# the Soft-RoCE tests end, the foreground finishes below (cmake --build resumes).
background=${build}-background
rm -rf "$background" && mkdir -p "$background"
# step NAME CMD...: one step of the background.
step() {
  local name=$1 rc=0
  shift
  "$@" >"$background/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$background/$name.rc"
  phase "(background) $name ended, exit $rc"
}
(
  chrt --idle -p 0 "$BASHPID" >/dev/null 2>&1 || renice -n 19 -p "$BASHPID" >/dev/null
  step v1 scripts/lib/build-v1.sh "${build}-v1"
  step release scripts/lib/build-release.sh "${build}-release"
  step deb env DEB_BUILD_OPTIONS=noautodbgsym scripts/build-deb.sh "$build/deb"
  step asan build_asan
  step tsan build_tsan
  step fuzz build_fuzzers
) &
background_pid=$!
# Gone once this command ends, so that a later ctest run by hand builds the package itself
# rather than taking this run's.
trap 'kill_tree "$background_pid"; rm -rf "$background"' EXIT
phase "the Release build"
cmake -S . -B "$build" "${release[@]}" -DRDMAX_WERROR=ON "${unity[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
# Unit tests in parallel; the Soft-RoCE tests one at a time (each boots guests that
# want both cores).
phase "unit tests"
ctest --test-dir "$build" --output-on-failure -L unit -j "$(nproc)"
# The Soft-RoCE tests, one at a time, while the background builds. A failure here does not
# stop the sanitizers' and the fuzzers' tests below; this command then exits non-zero.
phase "the Soft-RoCE tests"
failed=()
ctest --test-dir "$build" --output-on-failure -L rxe || failed+=("the Soft-RoCE tests")
# sanitized_unit_tests DIR: the unit tests of a sanitizer build. The GoogleTest binary runs
# itself, its tests shared among a few processes (GoogleTest's sharding), rather than one
# process per test through ctest as above: a process under a sanitizer takes about 0.1 s to
# start, which was most of these phases (ASan 103 s through ctest, 25 s in one process).
# Four shards per core, run as cores come free: GoogleTest deals the tests out in turn, and
# with one shard per core the two slowest under ThreadSanitizer (43 of its 95 s) fell in one,
# which ran 73 s while the other ran 22. Each test still runs alone in the Release pass
# above. The tests that are not GoogleTest's (install, completion, checksum, local_input,
# pipeline_bench: no dot in their names) go through ctest.
sanitized_unit_tests() {
  local dir=$1 shards i bad=0
  shards=$((4 * $(nproc)))
  rm -f "$dir"/unit-shard-*
  # shellcheck disable=SC2016 # expanded by each shard's shell
  seq 0 $((shards - 1)) | xargs -P "$(nproc)" -I{} bash -c \
    'GTEST_TOTAL_SHARDS=$2 GTEST_SHARD_INDEX=$3 "$1/bin/rdmax_unit_tests" --gtest_brief=1 \
       >"$1/unit-shard-$3.log" 2>&1; echo $? >"$1/unit-shard-$3.rc"' _ "$dir" "$shards" {} || true
  for ((i = 0; i < shards; i++)); do
    if [[ $(cat "$dir/unit-shard-$i.rc" 2>/dev/null) == 0 ]]; then
      echo "unit tests, shard $((i + 1)) of $shards: $(grep -a 'PASSED' "$dir/unit-shard-$i.log")"
    else
      bad=1
      echo "unit tests, shard $((i + 1)) of $shards, failed ($dir/unit-shard-$i.log):"
      cat "$dir/unit-shard-$i.log"
    fi
  done
  ((bad == 0)) || return 1
  ctest --test-dir "$dir" --output-on-failure -L unit -E '\.' -j "$(nproc)"
}
# The background's builds: waited for (alone now, they have both cores), then built again
# here, which is nothing when they are done and prints any compiler error.
phase "the sanitizer and fuzzer builds (begun in the background; waited for)"
wait "$background_pid" || true
rm -rf "$background"
trap - EXIT
phase "the unit tests under AddressSanitizer"
if build_asan; then
  sanitized_unit_tests "$san" || failed+=("the unit tests under AddressSanitizer")
else
  failed+=("the AddressSanitizer build")
fi
phase "the unit tests under ThreadSanitizer"
if build_tsan; then
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 sanitized_unit_tests "$tsan" ||
    failed+=("the unit tests under ThreadSanitizer")
else
  failed+=("the ThreadSanitizer build")
fi
# RDMAX_FUZZ_SECONDS (default 30) per target.
phase "the fuzzers"
if build_fuzzers; then
  ctest --test-dir "$fuzz" --output-on-failure -L fuzz -j "$(nproc)" || failed+=("the fuzzers")
else
  failed+=("the fuzzers' build")
fi
phase "done"
if ((${#failed[@]} > 0)); then
  printf 'FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
