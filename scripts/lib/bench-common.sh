# What the guest halves of scripts/bench.sh share (scripts/lib/bench-*-guest.sh). Sourced.
# shellcheck shell=bash
now() { date +%s.%N; }
# elapsed START: the seconds since START (an output of `now`), to the millisecond.
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# wait_cm_listening PORT: waits, at most 5 s, until an rdma_cm ID listens on PORT (rdma-recv,
# rcopy's server); status 1 if none did.
wait_cm_listening() {
  local _
  for _ in $(seq 100); do
    rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*:$1\b" && return 0
    sleep 0.05
  done
  return 1
}
# wait_tcp_listening PORT: the same for a TCP socket (socat's server).
wait_tcp_listening() {
  local _
  for _ in $(seq 100); do
    ss -Hltn "sport = :$1" | grep -q . && return 0
    sleep 0.05
  done
  return 1
}
