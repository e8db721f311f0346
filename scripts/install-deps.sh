#!/usr/bin/env bash
# Installs every Debian package this project needs to build, test and run its
# Soft-RoCE test bed. Idempotent: silent when everything is already installed.
# Debian 12 (bookworm); run as root.
set -euo pipefail

packages=(
  # build
  g++ cmake make pkg-config git
  ninja-build  # scripts/test.sh's builds (why there)
  libibverbs-dev librdmacm-dev libssl-dev libcli11-dev libspdlog-dev libgtest-dev
  nlohmann-json3-dev  # rdma-send --json
  librust-blake3-dev  # BLAKE3's official C sources (common/digest/blake3_sources.cmake)
  libsystemd-dev      # rdma-recv's sd_notify (Type=notify)
  # the sanitizer and fuzz builds (scripts/test.sh, tests/fuzz): clang, and compiler-rt for
  # libFuzzer and the sanitizers
  clang libclang-rt-dev
  lld  # their linker (scripts/test.sh)
  # RDMA userspace and rdma-core's own tools used by the tests and benchmarks
  rdma-core ibverbs-utils rdmacm-utils perftest
  # Soft-RoCE test bed: Debian's kernel under qemu, with a busybox initramfs
  qemu-system-x86 linux-image-amd64 busybox-static kmod cpio gzip iproute2 procps
  e2fsprogs  # scripts/rxe-run --disk: mkfs.ext4 of the guest's disk image
  xfsprogs   # scripts/lib/bench-direct-guest.sh: the same disk made XFS
  # tests and benchmarks
  socat coreutils iputils-ping tmux
  tcpdump  # tests/e2e/sealing.sh: a capture of the wire holds nothing sealed
  jq  # tests/e2e/many.sh reads rdma-send --json-lines
  curl prometheus  # tests/e2e/metrics.sh: a real Prometheus scrapes rdma-recv --metrics
  openmpi-bin  # tests/e2e/mpi.sh: rdma-send --shard auto under mpirun
  # the reference for the fs-verity digest (tests compare with `fsverity digest`)
  fsverity
  b3sum  # and for BLAKE3 (rdma-send --checksum --digest blake3)
  # the Debian package (scripts/build-deb.sh) and its checks; systemd-analyze verifies the
  # unit; bash-completion for the completion test
  dpkg-dev debhelper fakeroot lintian systemd bash-completion
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

if ((EUID != 0)); then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo $0) to install them" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
