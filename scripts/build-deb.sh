#!/usr/bin/env bash
# Builds the Debian package of rdmax (debian/) and checks it with lintian.
#   scripts/build-deb.sh [OUTDIR]        (default: build-deb)
# The package is built from a copy of the source tree in OUTDIR/src, because
# dpkg-buildpackage writes its results into the parent of the tree and debhelper leaves
# its work files inside it. Results: OUTDIR/rdmax_VERSION_ARCH.deb (and .changes,
# .buildinfo), OUTDIR/lintian.txt. Exits non-zero when the build fails or lintian reports
# an error (warnings are printed, not fatal).
# Build dependencies come from debian/control: missing ones are installed (as root), like
# scripts/install-deps.sh does. BUILD_JOBS (default: the CPUs) sets the build's parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-build-deb}" && cd "${1:-build-deb}" && pwd)
jobs=${BUILD_JOBS:-$(nproc)}

# The tools this script itself needs, then the package's build dependencies.
tools=(dpkg-dev debhelper lintian fakeroot)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  # "dpkg-checkbuilddeps: error: Unmet build dependencies: cmake libfoo-dev (>= 1) ..."
  unmet=$(dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p') || true
  # Versions and alternatives: keep the first package name of each.
  read -r -a missing <<<"$(echo "$unmet" | sed -E 's/\([^)]*\)//g; s/\|[^ ]*//g')"
fi
if ((${#missing[@]})); then
  if ((EUID != 0)); then
    echo "build-deb: missing packages: ${missing[*]}; run as root (or: sudo $0)" >&2
    exit 1
  fi
  echo "build-deb: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  dpkg-checkbuilddeps  # anything still missing is an error here
fi

# A clean copy of the tree: what git tracks (plus new files not ignored), or, outside a
# git checkout, everything but build directories.
src=$out/src/rdmax
rm -rf "$out/src" && mkdir -p "$src"
rm -f "$out"/rdmax_* "$out"/rdmax-dbgsym_*
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$src"
else
  tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$src"
fi

echo "build-deb: dpkg-buildpackage in $src ($jobs jobs)" >&2
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
  dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
  tail -n 40 "$out/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
  exit 1
}
# dpkg-buildpackage wrote the results beside the tree, in $out/src.
mv "$out"/src/rdmax_* "$out"/src/rdmax-dbgsym_* "$out"/ 2>/dev/null || true
deb=$(ls "$out"/rdmax_*.deb)
changes=$(ls "$out"/rdmax_*.changes)

rc=0
lintian --fail-on error --display-info "$changes" >"$out/lintian.txt" 2>&1 || rc=$?
cat "$out/lintian.txt" >&2
if ((rc != 0)); then
  echo "build-deb: lintian reports errors (status $rc)" >&2
  exit 1
fi
rm -rf "$out/src"  # the copy and its build tree (a few hundred MB); build.log stays
echo "build-deb: $deb ($(dpkg-deb -f "$deb" Version), lintian: no errors," \
  "$(grep -c '^W:' "$out/lintian.txt" || true) warning(s))"
