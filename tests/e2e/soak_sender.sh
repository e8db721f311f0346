#!/usr/bin/env bash
# soak_sender.sh CTL INDEX: one sender of the soak (tests/e2e/soak.sh), run on host B by
# rxe-peer. It makes its own tree once (sizes drawn from the soak's seed), writes its
# manifest (b3sum of every file) to CTL, then sends the tree round after round, each round
# under a new name (a tree of hard links to the same files), as a job script would: the
# same command again after each failure, until it exits 0. It stops after the round during
# which CTL/stop appeared. Every attempt is a line of CTL/attempts.sINDEX:
#   ROUND ATTEMPT START END STATUS REASONS LAST-LINE-OF-STDERR
# REASONS: the receiver's refusal reasons its stderr names (NoSpace,NoMemory,...), or -.
# and every completed round a file CTL/done/sINDEX-rROUND (its --json line).
# The sender's kind follows INDEX (0-3, then again): sealed with the default digest
# (BLAKE3); keyed but in clear (--no-seal) over two connections (-P 2); sealed with the
# fs-verity digest; sealed, -P 2, without the digest cache (every file hashed as it is read).
set -uo pipefail
reject_reasons='BadName|Exists|TooLarge|NoSpace|Busy|UnsupportedVersion|Internal|NoMemory|AuthRequired|AuthFailed|SealRequired'
ctl=${1:?usage: soak_sender.sh CTL INDEX} index=${2:?usage: soak_sender.sh CTL INDEX}
seed="" max_large="" port="" send="" timeout_s=""
# shellcheck source=/dev/null
source "$ctl/config"
me=s$index
src=$RXE_SCRATCH/soak-src/$me base=$RXE_SCRATCH/soak-src/$me/base
rm -rf "$src" && mkdir -p "$base/a/b" "$base/c" "$ctl/done"
export XDG_CACHE_HOME=$RXE_SCRATCH/soak-cache/$me
# The tree: one empty file, small files, a few of some MiB, and one large (up to
# max_large): sizes from the seed, bytes from /dev/urandom. One process (a fork costs about
# 70 ms in the emulated guest).
perl -e '
  my ($dir, $seed, $large) = @ARGV;
  srand($seed);
  open(my $random, "<:raw", "/dev/urandom") or die "/dev/urandom: $!\n";
  my @files = (["empty", 0]);
  push @files, ["a/small-$_", int(rand(262144))] for 1 .. 4;
  push @files, ["a/b/small-$_", 1 + int(rand(65536))] for 1 .. 2;
  push @files, ["c/medium-$_", 1048576 + int(rand(7 * 1048576))] for 1 .. 2;
  push @files, ["large", $large / 4 + int(rand($large * 3 / 4))];
  for my $f (@files) {
    my ($name, $size) = @$f;
    open(my $out, ">:raw", "$dir/$name") or die "$dir/$name: $!\n";
    while ($size > 0) {
      my $n = $size < 1048576 ? $size : 1048576;
      my $bytes;
      read($random, $bytes, $n) == $n or die "/dev/urandom: a short read\n";
      print $out $bytes or die "$dir/$name: $!\n";
      $size -= $n;
    }
    close($out) or die "$dir/$name: $!\n";
  }' "$base" $((seed * 100 + index)) "$max_large" || exit 1
(cd "$base" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' b3sum) \
  >"$ctl/manifest.$me.tmp" || exit 1
mv "$ctl/manifest.$me.tmp" "$ctl/manifest.$me"

flags=(-H "$RXE_PEER_ADDR" -p "$port" --timeout "$timeout_s" --json --no-progress
  --key-file "$ctl/keys/$me.key")
case $((index % 4)) in
  1) flags+=(--no-seal -P 2) ;;
  2) flags+=(--digest fsverity) ;;
  3) flags+=(-P 2 --no-digest-cache) ;;
esac
coproc NAP { read -r _; } 2>/dev/null
nap() { read -r -t "$1" -u "${NAP[0]}" _ || true; }
round=0
while :; do
  ((++round))
  name=$me-r$round
  # At most two rounds of this sender on the receiver's disk: this one, and the last one
  # until soak.sh has verified and removed it. The disk is for the disk-full faults to fill;
  # a watcher pass that takes minutes must not let the rounds fill it instead (a NoSpace
  # with no fault on, which the soak could not tell from a bug).
  while ((round > 2)) && [[ ! -e $ctl/removed/$me-r$((round - 2)) ]]; do
    [[ -e $ctl/given-up ]] && exit 1
    [[ -e $ctl/stop ]] && { ((--round)); break 2; }
    nap 1
  done
  cp -al "$base" "$src/$name" || exit 1
  attempt=0
  while :; do
    ((++attempt))
    start=$EPOCHREALTIME rc=0
    "$send" "${flags[@]}" -r "$src/$name" >"$src/out.json" 2>"$src/err" || rc=$?
    last=$(grep -v '^\s*$' "$src/err" | tail -n 1 | tr -s '\t ' '  ' | cut -c 1-300)
    # A refused file says "(REASON: ...", a refused session "the session: REASON: ..."
    # (docs/PROTOCOL.md's reject reasons).
    reasons=$(grep -a -o -E "(\\(|the session: )($reject_reasons):" "$src/err" | grep -o -E "$reject_reasons" |
      sort -u | paste -sd , -)
    echo "$round $attempt $start $EPOCHREALTIME $rc ${reasons:--} ${last:--}" >>"$ctl/attempts.$me"
    # Why, for the report: the lines that say what went wrong (a few per attempt).
    if ((rc != 0)); then
      { echo "== round $round attempt $attempt: exit $rc"; grep -a -E 'refused|error|failed|warning' "$src/err" | head -n 8; } >>"$ctl/errors.$me"
    fi
    ((rc == 0)) && break
    # Given up only long after the faults stopped: soak.sh reports the command that did not
    # complete.
    [[ -e $ctl/given-up ]] && exit 1
    nap 1  # as a job script would wait before trying again
  done
  cp "$src/out.json" "$ctl/done/$name.tmp" && mv "$ctl/done/$name.tmp" "$ctl/done/$name"
  rm -rf "${src:?}/$name"
  [[ -e $ctl/stop ]] && break
done
echo "$me: $round rounds"
