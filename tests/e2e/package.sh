#!/usr/bin/env bash
# End-to-end: the Debian package (scripts/build-deb.sh; ctest builds it first) installed
# with dpkg, its files in place, a transfer made by the INSTALLED /usr/bin/rdma-recv and
# /usr/bin/rdma-send, then removed (dpkg -r) and purged (dpkg -P), with its files gone.
#
# This machine must not change. In the qemu test bed the guest's root filesystem IS the
# host's (virtio-9p), so a plain `dpkg -i` in the guest would install into the host; on a
# machine where rxe-run runs directly it would install into the machine itself. Instead the
# package is installed into a throw-away root: in a mount namespace of its own (unshare -m)
# an overlay filesystem puts a memory-backed (tmpfs) upper layer over the read-only /, and
# the test chroots into it, with the guest's /dev, /proc and /sys bound in (the RDMA
# device, rdma_cm), fresh /run and /tmp, and the repository bound at its own path. dpkg, its database and every installed file
# write to the tmpfs; when the namespace ends they are gone. The package's dependencies are
# satisfied by the libraries the build machine already has (the build dependencies pull in
# the same runtime libraries); dpkg's database there is described in in_namespace. Afterwards the test checks the machine's own dpkg database
# and /usr/bin. Needs root (mounts); otherwise it skips (status 77).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

port=18640
pkg=rdmax
# Every file of the package's that must be there once installed, and gone once purged.
package_files=(
  /usr/bin/rdma-send /usr/bin/rdma-recv
  /usr/share/man/man1/rdma-send.1.gz /usr/share/man/man1/rdma-recv.1.gz
  /lib/systemd/system/rdma-recv.service /lib/systemd/system/rdma-send-serve.service
  /usr/share/bash-completion/completions/rdma-send
  /usr/share/bash-completion/completions/rdma-recv
  /usr/share/doc/rdmax/secrets.example /usr/share/doc/rdmax/senders.example
  /usr/share/doc/rdmax/copyright
  /usr/share/doc/rdmax/README.md.gz
)

# ------------------------------------------------------------------------------------
# Inside the throw-away root (chroot): install, use, remove.
# ------------------------------------------------------------------------------------
in_root() {
  local deb=$1 work=$2
  export PATH=/usr/sbin:/usr/bin:/sbin:/bin
  [[ ! -e /usr/bin/rdma-recv ]] || fail "/usr/bin/rdma-recv exists before the install"

  dpkg -i "$deb" >"$work/dpkg-i.log" 2>&1 || { cat "$work/dpkg-i.log" >&2; fail "dpkg -i $deb"; }
  dpkg-query -W -f='${Status}\n' "$pkg" | grep -qx 'install ok installed' || fail "not installed"
  local f
  for f in "${package_files[@]}"; do [[ -e $f ]] || fail "installed package lacks $f"; done
  grep -qx 'ExecStart=/usr/bin/rdma-recv .*' /lib/systemd/system/rdma-recv.service ||
    fail "the unit's ExecStart= does not name /usr/bin/rdma-recv"
  grep -qx 'ExecStart=/usr/bin/rdma-send --serve .*' /lib/systemd/system/rdma-send-serve.service ||
    fail "the server unit's ExecStart= does not name /usr/bin/rdma-send --serve"
  local unit
  for unit in rdma-recv rdma-send-serve; do
    if command -v systemd-analyze >/dev/null; then
      local verify
      verify=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
        /lib/systemd/system/$unit.service 2>&1 | grep -v 'rdma-load-modules\|network-online' || true)
      [[ -z $verify ]] || fail "systemd-analyze verify $unit.service: $verify"
    fi
    # Not enabled by the install (debian/rules: dh_installsystemd --no-enable).
    [[ ! -e /etc/systemd/system/multi-user.target.wants/$unit.service ]] ||
      fail "the install enabled $unit.service"
  done
  gzip -dc /usr/share/man/man1/rdma-recv.1.gz | grep -q '^\.SH' || fail "rdma-recv.1.gz is no manual page"
  bash --norc -c 'source /usr/share/bash-completion/completions/rdma-send && complete -p rdma-send' \
    >/dev/null || fail "the installed completion does not load"
  pass "dpkg -i: $(dpkg-query -W -f='${Package} ${Version}' "$pkg"), $(dpkg -L "$pkg" | wc -l) paths (at ${SECONDS}s)"

  # A transfer with the installed programs (and nothing else on PATH of ours).
  local log=$work/recv.log in=$work/in out=$work/out
  mkdir -p "$in" "$out"
  head -c 3M /dev/urandom >"$in/payload.bin"
  start_daemon installed "$log" /usr/bin/rdma-recv --bind "$RXE_ADDR" --port "$port" --dir "$out"
  wait_for_line 20 installed "$log" 'listening on'
  [[ $(readlink "/proc/$daemon_pid/exe") == /usr/bin/rdma-recv ]] ||
    fail "the receiver runs $(readlink "/proc/$daemon_pid/exe"), not /usr/bin/rdma-recv"
  local rc=0
  rdma-send -H "$RXE_ADDR" -p "$port" --json "$in/payload.bin" >"$work/send.json" 2>"$work/send.err" || rc=$?
  ((rc == 0)) || { cat "$work/send.err" >&2; fail "installed rdma-send exited $rc"; }
  grep -q '"verdict": *"good"' "$work/send.json" || fail "no good verdict: $(cat "$work/send.json")"
  cmp -s "$in/payload.bin" "$out/payload.bin" || fail "payload.bin did not arrive intact"
  kill -TERM "$daemon_pid"
  eventually 10 daemon_exited installed || fail "the installed rdma-recv did not stop"
  pass "a 3 MiB transfer by /usr/bin/rdma-send to /usr/bin/rdma-recv: verdict good, identical (at ${SECONDS}s)"

  dpkg -r "$pkg" >"$work/dpkg-r.log" 2>&1 || { cat "$work/dpkg-r.log" >&2; fail "dpkg -r"; }
  for f in /usr/bin/rdma-send /usr/bin/rdma-recv /lib/systemd/system/rdma-recv.service \
    /usr/share/bash-completion/completions/rdma-send /usr/share/man/man1/rdma-send.1.gz; do
    [[ ! -e $f ]] || fail "$f is still there after dpkg -r"
  done
  dpkg -P "$pkg" >"$work/dpkg-p.log" 2>&1 || { cat "$work/dpkg-p.log" >&2; fail "dpkg -P"; }
  for f in "${package_files[@]}"; do [[ ! -e $f ]] || fail "$f is still there after dpkg -P"; done
  [[ ! -e /usr/share/doc/rdmax ]] || fail "/usr/share/doc/rdmax is still there after dpkg -P"
  ! dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q installed ||
    fail "dpkg still knows $pkg: $(dpkg-query -W -f='${Status}' "$pkg")"
  pass "dpkg -r and dpkg -P: every file of the package gone, dpkg forgets it (at ${SECONDS}s)"
}

# ------------------------------------------------------------------------------------
# In a private mount namespace: build the overlay root, run in_root in it.
# ------------------------------------------------------------------------------------
in_namespace() {
  local deb=$1 base=$2
  mount --make-rprivate /
  mount -t tmpfs -o mode=755 rdmax-pkg "$base"
  mkdir -p "$base"/{upper,work,root}
  mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$base/root"
  local root=$base/root
  mount --rbind /dev "$root/dev"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount -t tmpfs -o mode=755 tmpfs "$root/run"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
  # The repository (this script), in case it lives on a file system of its own, which an
  # overlay of / alone would not show.
  mkdir -p "$root$repo" && mount --bind "$repo" "$root$repo"
  # dpkg's database in the throw-away root: this machine's package status (so dpkg -i checks
  # the dependencies against what is really installed) with empty file lists. With the real
  # ones, each dpkg call would read a thousand file lists over 9p under emulation (minutes);
  # what they serve, conflicts with other packages' files, matters little for paths that
  # are rdmax's own. No trigger interests either (man-db's index is of no use here).
  local db=$root/var/lib/dpkg f
  mount -t tmpfs -o mode=755 tmpfs "$db"
  mkdir -p "$db/info" "$db/updates" "$db/triggers"
  cp /var/lib/dpkg/status "$db/status"
  for f in diversions statoverride; do
    if [[ -f /var/lib/dpkg/$f ]]; then cp "/var/lib/dpkg/$f" "$db/$f"; else : >"$db/$f"; fi
  done
  for f in /var/lib/dpkg/info/*.list; do : >"$db/info/${f##*/}"; done
  mkdir -p "$root/tmp/pkg"
  cp "$deb" "$root/tmp/pkg/"
  chroot "$root" /usr/bin/env RXE_SHARED_TMP=/tmp XDG_CACHE_HOME=/tmp/cache \
    bash "$repo/tests/e2e/package.sh" --in-root "/tmp/pkg/${deb##*/}" /tmp/pkg
}

case ${1:-} in
  --in-root) in_root "$2" "$3"; exit 0 ;;
  --in-namespace) in_namespace "$2" "$3"; exit 0 ;;
esac

((EUID == 0)) || { echo "SKIP: installing a package in a private root needs root"; exit 77; }
deb=$(ls "${RDMAX_DEB_DIR:?RDMAX_DEB_DIR names the directory of the .deb (ctest sets it)}"/rdmax_*.deb 2>/dev/null | head -n 1)
[[ -f $deb ]] || fail "no rdmax_*.deb in $RDMAX_DEB_DIR: run scripts/build-deb.sh $RDMAX_DEB_DIR"
command -v unshare >/dev/null || fail "unshare (util-linux) is needed"
modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || fail "this kernel has no overlay filesystem"

# What this machine's dpkg says now: it must say the same afterwards.
host_state() {
  dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null || echo "unknown to dpkg"
  local f
  for f in "${package_files[@]}"; do [[ -e $f ]] && echo "present: $f"; done
  return 0
}
before=$(host_state)
base=$shared/pkgroot
mkdir -p "$base"
rc=0
unshare --mount --propagation private -- bash "$0" --in-namespace "$deb" "$base" || rc=$?
after=$(host_state)
[[ $after == "$before" ]] || fail "the package test changed this machine: before: $before; after: $after"
((rc == 0)) || fail "the package test in the throw-away root failed (status $rc)"
echo "package: ok ($(basename "$deb"); this machine unchanged: ${before//$'\n'/, })"
