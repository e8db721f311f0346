# What the guest halves of scripts/bench.sh share (scripts/lib/bench-*-guest.sh). Sourced.
# shellcheck shell=bash
now() { date +%s.%N; }
# elapsed START: the seconds since START (an output of `now`), to the millisecond.
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# within_5s CMD...: runs CMD every 50 ms until it succeeds, for at most 5 s; status 1 if it
# never did.
within_5s() {
  local _
  for _ in $(seq 100); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}
# wait_cm_listening PORT: until an rdma_cm ID listens on PORT (rdma-recv, rcopy's server).
cm_listening() { rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*:$1\b"; }
wait_cm_listening() { within_5s cm_listening "$1"; }
# wait_tcp_listening PORT: the same for a TCP socket (socat's server).
tcp_listening() { ss -Hltn "sport = :$1" | grep -q .; }
wait_tcp_listening() { within_5s tcp_listening "$1"; }
