# Sourced by scripts/demo.sh and scripts/bench.sh: install what is needed and build the two
# programs (Release) in ${BUILD_DIR:-build}; sets RDMAX_BIN to their directory.
scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target rdma-send rdma-recv >/dev/null
export RDMAX_BIN=$PWD/$build/bin
