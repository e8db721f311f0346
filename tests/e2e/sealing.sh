#!/usr/bin/env bash
# Sealing (issue 39, docs/PROTOCOL.md 7.11) across the two-host topology: rdma-recv with
# --senders on host B, rdma-send with a key on host A, and tcpdump on A's end of the wire.
# - capture: a file and a tree with their id's secret go sealed, and the capture of the wire
#   holds none of the files' bytes, none of their names and not the secret; the same
#   transfer with --no-seal (the control case, so that the check can fail) holds all three.
# - altered: a chunk altered after it was sealed (rdma-send's testing --inject-corruption
#   flips a byte of the slot after the seal, as one who wrote into the receiver's window
#   with the slot's key would) is never written: both sides say so, the receiver serves
#   the next sender, and the same command again resumes from what was kept and arrives.
# - required: a receiver with --senders (sealing required by default) refuses a keyed sender
#   with --no-seal (exit 7, SealRequired) and serves one that seals.
# - fetch (issue 52, PROTOCOL.md 7.13): rdma-send --serve --readers on host B; a fetcher on A
#   with alice's key gets a tree sealed, and the capture holds none of its bytes or names (the
#   same fetch from a server without keys, in clear, holds them); a fetcher without a key,
#   with a wrong key, or with carol's key (confined to carol-dir) asking for the tree, exits
#   7 with nothing written, and the server serves alice again after them.
source "$(dirname "$0")/lib.sh"
[[ ${RXE_WIRE:-none} == real ]] || { echo "SKIP: sealing.sh needs the two-host topology with a real wire (rxe-run --hosts 2)"; exit 0; }
need_programs send recv
command -v tcpdump >/dev/null || fail "tcpdump is needed (scripts/install-deps.sh installs it)"
in=$RXE_SCRATCH/in out=/run/rxe-scratch/sealed
mkdir -p "$in"
keys=$shared/keys
mkdir -p "$keys"
key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
secret=s3cret-of-alice-7c1d9e
(umask 077
 echo "alice $key" >"$keys/senders"
 echo "alice $key" >"$keys/alice.key"
 echo "alice $secret" >"$keys/secrets")
recv_log=$shared/recv.log
port=18811 strict_port=18812 serve_port=18813 open_serve_port=18814
other_key=f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f
(umask 077
 echo "alice $key" >"$keys/readers"
 echo "carol $other_key carol-dir" >>"$keys/readers"
 echo "carol $other_key" >"$keys/carol.key"
 echo "alice $other_key" >"$keys/forged.key")
export_dir=$shared/fetch-export

fail_context() {
  echo "--- receiver log (host B), last lines:"
  rxe-peer tail -n 25 "$recv_log" || true
  echo "--- the strict receiver's log (host B), last lines:"
  rxe-peer tail -n 10 "$recv_log.strict" || true
  echo "--- the fetch servers' log (host B), last lines:"
  rxe-peer tail -n 15 "$shared/serve.log" || true
  local err
  for err in "$shared"/*.err; do [[ -e $err ]] && { echo "--- $(basename "$err"):"; tail -n 12 "$err"; }; done
  return 0
}

# The receivers on host B: one that seals whoever asks and serves the rest in clear
# (--allow-clear, for the control case), one that requires sealing (the default).
start_receivers() {
  # Both directories before either receiver: made by the first receiver's job, the second
  # (another job on B) could start first and exit "cannot open output directory".
  rxe-peer mkdir -p "$out" "$out-strict" || fail "cannot make $out and $out-strict on host B"
  rxe-peer bash -c "exec $recv -a \"\$RXE_ADDR\" -p $port -o $out --senders $keys/senders --allow-clear --secrets $keys/secrets -v 2>>$recv_log" &
  bg_pids+=($!)
  rxe-peer bash -c "exec $recv -a \"\$RXE_ADDR\" -p $strict_port -o $out-strict --senders $keys/senders -v 2>>$recv_log.strict" &
  bg_pids+=($!)
  wait_for 30 rxe-peer bash -c "[[ \$(grep -c 'listening on' $recv_log 2>/dev/null) -ge 1 && \$(grep -c 'listening on' $recv_log.strict 2>/dev/null) -ge 1 ]]"
}

# Text files, so that a run of their bytes can be looked for in a capture with grep -F:
# each line is unique (its number and random hex), no run repeats elsewhere.
make_text() {  # NAME LINES
  perl -e 'open(my $r, "<:raw", "/dev/urandom") or die; for my $i (1 .. $ARGV[0]) {
    read($r, my $b, 24); printf "%08d %s\n", $i, unpack("H*", $b) }' "$2" >"$in/$1"
}

# The file LOCAL on host A and REMOTE on host B are the same bytes (A's scratch space is its
# own: compare their hashes).
same_on_b() {
  [[ $(rxe-peer sha256sum "$2" | cut -d' ' -f1) == "$(sha256sum <"$1" | cut -d' ' -f1)" ]]
}

# capture NAME -- CMD...: runs CMD (its output to $shared/NAME.out and .err) with tcpdump on
# A's end of the wire, full packets, into $shared/NAME.pcap. --immediate-mode: without it packets wait in the kernel's ring buffer
# for a block to fill or time out, and those of the last second die with tcpdump.
capture() {
  local name=$1; shift 2
  local pcap=$shared/$name.pcap
  tcpdump -i eth0 -s 0 -U --immediate-mode -w "$pcap" udp port 4791 2>"$shared/$name.tcpdump" &
  local dump=$!
  wait_for 10 grep -q 'listening on' "$shared/$name.tcpdump"
  local rc=0
  "$@" >"$shared/$name.out" 2>"$shared/$name.err" || rc=$?
  sleep 1  # the last packets of the disconnect
  kill -INT "$dump"; wait "$dump" || true
  return "$rc"
}

# How many of the WORDs the capture NAME holds.
found_in() {
  local pcap=$shared/$1.pcap word count=0; shift
  for word in "$@"; do grep -aqF -- "$word" "$pcap" && count=$((count + 1)); done
  echo "$count"
}

# Runs of the files' bytes (eight lines of each), the names and the secret.
words_of_the_transfer() {
  sed -n '100p;300p;500p;700p;900p;1100p;1300p;1500p' "$in/plain.txt" | cut -c1-40
  sed -n '10p;40p' "$in/tree-sealed/notes-of-a-zebra.txt" | cut -c1-40
  echo "notes-of-a-zebra.txt"
  echo "plain.txt"
  echo "$secret"
}

case_capture() {
  make_text plain.txt 2000
  mkdir -p "$in/tree-sealed"
  make_text tree-sealed/notes-of-a-zebra.txt 60
  local words=()
  words_of_the_transfer >"$shared/words"
  mapfile -t words <"$shared/words"
  local mode rc sealed_found clear_found
  for mode in sealed clear; do
    local flags=(--key-file "$keys/alice.key" --id alice)
    [[ $mode == clear ]] && flags+=(--no-seal)
    rc=0
    capture "$mode" -- "$send" -H "$RXE_PEER_ADDR" -p $port --timeout 20 -r "${flags[@]}" \
      "$in/plain.txt" "$in/tree-sealed" || rc=$?
    ((rc == 0)) || fail "the $mode transfer: exit $rc"
    [[ $(<"$shared/$mode.out") == "$secret" ]] || fail "the $mode transfer did not print the secret"
    same_on_b "$in/plain.txt" "$out/plain.txt" || fail "plain.txt differs on host B ($mode)"
    same_on_b "$in/tree-sealed/notes-of-a-zebra.txt" "$out/tree-sealed/notes-of-a-zebra.txt" ||
      fail "the tree's file differs on host B ($mode)"
    rxe-peer rm -rf "$out/plain.txt" "$out/tree-sealed"
  done
  rxe-peer grep -q "sender 'alice' authenticated, sealed" "$recv_log" || fail "the receiver did not log a sealed sender"
  sealed_found=$(found_in sealed "${words[@]}")
  clear_found=$(found_in clear "${words[@]}")
  local bytes; bytes=$(stat -c %s "$shared/sealed.pcap")
  ((bytes > 100000)) || fail "the sealed capture holds only $bytes bytes: the wire was not captured"
  ((sealed_found == 0)) || fail "the sealed capture holds $sealed_found of ${#words[@]} words: $(for w in "${words[@]}"; do grep -aqF -- "$w" "$shared/sealed.pcap" && echo -n "'$w' "; done)"
  # A run may straddle two packets; most cannot.
  ((clear_found >= ${#words[@]} - 3)) || fail "the control capture (--no-seal) holds only $clear_found of ${#words[@]} words: the check cannot tell"
  grep -aqF -- "$secret" "$shared/clear.pcap" || fail "the control capture does not hold the secret"
  grep -aqF -- "notes-of-a-zebra.txt" "$shared/clear.pcap" || fail "the control capture does not hold the name"
  pass "capture: sealed, the wire held none of ${#words[@]} runs of bytes, names and the secret ($((bytes / 1024)) KiB captured); with --no-seal it held $clear_found of them"
}

case_altered() {
  head -c $((24 << 20)) /dev/urandom >"$in/altered.bin"
  local rc=0
  "$send" -H "$RXE_PEER_ADDR" -p $port --timeout 20 --key-file "$keys/alice.key" \
    --inject-corruption $((20 << 20)) "$in/altered.bin" >"$shared/altered.out" 2>"$shared/altered.err" || rc=$?
  ((rc == 1)) || fail "the altered transfer: exit $rc, expected 1"
  grep -q "SealBroken" "$shared/altered.err" || fail "the sender did not report the broken seal"
  eventually 10 rxe-peer grep -q "does not open" "$recv_log" || fail "the receiver did not log the chunk that does not open"
  rxe-peer test ! -e "$out/altered.bin" || fail "altered.bin exists on host B"
  # The next sender is served, and the same command again resumes what was kept.
  head -c $((1 << 20)) /dev/urandom >"$in/next.bin"
  "$send" -H "$RXE_PEER_ADDR" -p $port --timeout 20 --key-file "$keys/alice.key" \
    "$in/next.bin" >"$shared/next.out" 2>"$shared/next.err" || fail "the next sender: exit $?"
  same_on_b "$in/next.bin" "$out/next.bin" || fail "next.bin differs on host B"
  "$send" -H "$RXE_PEER_ADDR" -p $port --timeout 20 --key-file "$keys/alice.key" -v \
    "$in/altered.bin" >"$shared/again.out" 2>"$shared/again.err" || fail "the same command again: exit $?"
  same_on_b "$in/altered.bin" "$out/altered.bin" || fail "altered.bin differs on host B after the second run"
  local resumed; resumed=$(grep -aoE 'the receiver has (its first )?[0-9.]+ [KMG]?i?B' "$shared/again.err" | head -n 1 || true)
  [[ -n $resumed ]] || fail "the second run did not resume from what was kept"
  pass "altered: a chunk altered after its seal: exit 1 (SealBroken), nothing under its name, the next sender served; the same command again: '${resumed}', resumed and verified"
}

case_required() {
  head -c $((1 << 20)) /dev/urandom >"$in/strict.bin"
  local rc=0
  "$send" -H "$RXE_PEER_ADDR" -p $strict_port --timeout 20 --key-file "$keys/alice.key" --no-seal \
    "$in/strict.bin" >"$shared/strict.out" 2>"$shared/strict.err" || rc=$?
  ((rc == 7)) || fail "--no-seal to a receiver that requires sealing: exit $rc, expected 7"
  grep -q "SealRequired" "$shared/strict.err" || fail "the sender did not name SealRequired"
  rxe-peer test ! -e "$out-strict/strict.bin" || fail "strict.bin arrived in clear"
  "$send" -H "$RXE_PEER_ADDR" -p $strict_port --timeout 20 --key-file "$keys/alice.key" \
    "$in/strict.bin" >"$shared/strict2.out" 2>"$shared/strict2.err" || fail "a sealing sender: exit $?"
  same_on_b "$in/strict.bin" "$out-strict/strict.bin" || fail "strict.bin differs on host B"
  pass "required: --no-seal refused (exit 7, SealRequired), a sealing sender served"
}

# The export on host B ($shared is both hosts'); alice may fetch all of it, carol carol-dir.
start_servers() {
  mkdir -p "$export_dir/tree-fetch/deeper" "$export_dir/carol-dir"
  make_text plain.txt 1200
  mv "$in/plain.txt" "$export_dir/tree-fetch/fetched-plain.txt"
  make_text notes.txt 60
  mv "$in/notes.txt" "$export_dir/tree-fetch/deeper/ledger-of-a-yak.txt"
  echo carol >"$export_dir/carol-dir/c.txt"
  rxe-peer bash -c "exec $send --serve $export_dir --readers $keys/readers -a \"\$RXE_ADDR\" -p $serve_port -v 2>>$shared/serve.log" &
  bg_pids+=($!)
  rxe-peer bash -c "exec $send --serve $export_dir -a \"\$RXE_ADDR\" -p $open_serve_port 2>>$shared/serve.log" &
  bg_pids+=($!)
  wait_for 30 bash -c "[[ \$(grep -c 'serving .* read only' $shared/serve.log 2>/dev/null) -ge 2 ]]"
}

case_fetch() {
  local words=() rc mode
  { sed -n '100p;300p;500p;700p;900p;1100p' "$export_dir/tree-fetch/fetched-plain.txt" | cut -c1-40
    sed -n '10p;40p' "$export_dir/tree-fetch/deeper/ledger-of-a-yak.txt" | cut -c1-40
    echo "ledger-of-a-yak.txt"; echo "fetched-plain.txt"; echo "tree-fetch"; } >"$shared/fetch-words"
  mapfile -t words <"$shared/fetch-words"
  for mode in fetch-sealed fetch-clear; do
    local dest=$RXE_SCRATCH/$mode from=$RXE_PEER_ADDR:$serve_port flags=(--key-file "$keys/alice.key")
    [[ $mode == fetch-clear ]] && { from=$RXE_PEER_ADDR:$open_serve_port; flags=(); }
    mkdir -p "$dest"
    rc=0
    capture "$mode" -- "$recv" --from "$from" -r "${flags[@]}" -o "$dest" --timeout 20 tree-fetch || rc=$?
    ((rc == 0)) || fail "the $mode fetch: exit $rc"
    diff -r "$export_dir/tree-fetch" "$dest/tree-fetch" >/dev/null || fail "the $mode fetch differs from the export"
  done
  rxe-peer grep -q "fetcher 'alice' authenticated, sealed" "$shared/serve.log" || fail "the server did not log a sealed fetcher"
  local sealed_found clear_found
  sealed_found=$(found_in fetch-sealed "${words[@]}")
  clear_found=$(found_in fetch-clear "${words[@]}")
  local bytes; bytes=$(stat -c %s "$shared/fetch-sealed.pcap")
  ((bytes > 60000)) || fail "the sealed fetch's capture holds only $bytes bytes: the wire was not captured"
  ((sealed_found == 0)) || fail "the sealed fetch's capture holds $sealed_found of ${#words[@]} words: $(for w in "${words[@]}"; do grep -aqF -- "$w" "$shared/fetch-sealed.pcap" && echo -n "'$w' "; done)"
  ((clear_found >= ${#words[@]} - 3)) || fail "the clear fetch's capture holds only $clear_found of ${#words[@]} words: the check cannot tell"
  # Refused before any name: no key, carol's key for another subdirectory, a wrong key (last:
  # it costs this address a second's penalty at the server).
  local who expect
  for who in none carol forged; do
    local dest=$RXE_SCRATCH/refused-$who flags=()
    [[ $who != none ]] && flags=(--key-file "$keys/$who.key")
    mkdir -p "$dest"
    rc=0
    "$recv" --from "$RXE_PEER_ADDR:$serve_port" -r "${flags[@]}" -o "$dest" --timeout 20 tree-fetch \
      >"$shared/refused-$who.out" 2>"$shared/refused-$who.err" || rc=$?
    ((rc == 7)) || fail "a fetcher with key '$who': exit $rc, expected 7"
    [[ -z $(ls -A "$dest") ]] || fail "a refused fetcher ($who) wrote into its directory: $(ls -A "$dest")"
    case $who in none) expect=AuthRequired ;; *) expect=AuthFailed ;; esac
    grep -q "$expect" "$shared/refused-$who.err" || fail "the fetcher with key '$who' did not name $expect"
  done
  sleep 1.2  # the wrong key's penalty, then alice again
  rm -rf "$RXE_SCRATCH/fetch-sealed"; mkdir -p "$RXE_SCRATCH/fetch-sealed"
  "$recv" --from "$RXE_PEER_ADDR:$serve_port" -r --key-file "$keys/alice.key" -o "$RXE_SCRATCH/fetch-sealed" \
    --timeout 20 tree-fetch >/dev/null 2>"$shared/fetch-again.err" || fail "alice after the refusals: exit $?"
  pass "fetch: sealed with --readers, the capture held none of ${#words[@]} runs of bytes and names (in clear: $clear_found); no key, another subdirectory's key, a wrong key: exit 7, nothing written; alice served after them"
}

start_receivers
start_servers
run_case fetch case_fetch
run_case capture case_capture
run_case altered case_altered
run_case required case_required
report_cases sealing
