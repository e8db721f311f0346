#!/usr/bin/env bash
# Smoke test: rdma-core's rping, server and client as two processes on one rxe device.
source "$(dirname "$0")/lib.sh"
port=7174
timeout 60 rping -s -a "$RXE_ADDR" -p $port -C 20 -S 4096 -v >"$shared/server.log" 2>&1 &
server=$!
bg_pids+=($server)
wait_for 20 cm_listening $port
timeout 60 rping -c -a "$RXE_ADDR" -p $port -C 20 -S 4096 -v >"$shared/client.log" 2>&1 ||
  { cat "$shared/client.log" >&2; fail "rping client failed"; }
wait $server || { cat "$shared/server.log" >&2; fail "rping server failed"; }
n=$(grep -c 'ping data' "$shared/client.log" || true)
((n == 20)) || fail "expected 20 pings, client saw $n"
pass "rping: 20 round trips on $RXE_DEV ($RXE_ADDR)"
