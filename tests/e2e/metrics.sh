#!/usr/bin/env bash
# End-to-end: an operator watches rdma-recv with a real Prometheus (Debian's `prometheus`).
# rdma-recv --senders --metrics 127.0.0.1:PORT serves its metrics while Prometheus scrapes
# them every second; a keyed sender's file arrives and a sender without a key is refused.
# Through Prometheus's query API (what an operator's dashboard reads) the bytes received and
# written, the good file and the refused sender were counted; `promtool check metrics`
# passes on a scrape; the answer is the text format. Bad --metrics input: a port in use is
# exit 2 before any device work and --check says FAIL for it; an unparsable address is
# exit 2.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

need_programs send recv
for tool in prometheus promtool curl jq; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/install-deps.sh installs it)"
done

port=18640 metrics_port=19464 prometheus_port=19090
work=$RXE_SCRATCH/metrics
rm -rf "$work" && mkdir -p "$work/in" "$work/out" "$work/prometheus"
recv_log=$work/rdma-recv.log prom_log=$work/prometheus.log
size=$((24 * 1024 * 1024 + 4097))
head -c "$size" /dev/urandom >"$work/in/watched.bin"

fail_context() {
  echo "  rdma-recv log (last 15 lines):"
  tail -n 15 "$recv_log" 2>/dev/null | sed 's/^/    | /'
  echo "  prometheus log (last 10 lines):"
  tail -n 10 "$prom_log" 2>/dev/null | sed 's/^/    | /'
  echo "  last scrape (rdmax_ lines):"
  curl -fsS "http://127.0.0.1:$metrics_port/metrics" 2>/dev/null | grep '^rdmax_' | sed 's/^/    | /'
}

key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
(
  umask 077
  printf 'alice %s\n' "$key" >"$work/senders"
  printf 'alice %s\n' "$key" >"$work/alice.key"
)

started=$SECONDS
start_daemon recv "$recv_log" "$recv" --bind "$RXE_ADDR" --port "$port" --dir "$work/out" \
  --senders "$work/senders" --timeout 10 --metrics "127.0.0.1:$metrics_port"
wait_for 20 cm_listening "$port"
grep -q "metrics on http://127.0.0.1:$metrics_port/metrics" "$recv_log" ||
  fail "the metrics address is not logged at start: $(head -n 5 "$recv_log")"

# Prometheus of its own: its own config, data, port; never the system's instance.
cat >"$work/prometheus/prometheus.yml" <<YAML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: rdma-recv
    static_configs: [{targets: ['127.0.0.1:$metrics_port']}]
YAML
promtool check config "$work/prometheus/prometheus.yml" >/dev/null ||
  fail "promtool rejects the test's own configuration"
prometheus --config.file="$work/prometheus/prometheus.yml" \
  --storage.tsdb.path="$work/prometheus/data" --web.listen-address="127.0.0.1:$prometheus_port" \
  --log.level=warn >"$prom_log" 2>&1 </dev/null &
bg_pids+=($!)
api=http://127.0.0.1:$prometheus_port
target_up() {
  curl -fsS "$api/api/v1/targets" |
    jq -e '.data.activeTargets[] | select(.labels.job == "rdma-recv") | .health == "up"' >/dev/null
}
# Its discovery updates targets about 5 s after start; the emulated guest is slower.
wait_for 90 target_up

# query EXPR: the value of an instant query's first sample, or empty.
query() {
  curl -fsS -G "$api/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'
}
value_is() { [[ $(query "$1") == "$2" ]]; }

# A keyed sender's file, then a sender without a key (refused before any memory: exit 7).
# --bwlimit stretches the transfer over several scrapes (about 3 s at 8 MiB/s).
timeout -k 5 120 "$send" -H "$RXE_ADDR" -p "$port" --key-file "$work/alice.key" --bwlimit 8M \
  "$work/in/watched.bin" >"$work/send.out" 2>"$work/send.err" ||
  fail "the keyed sender failed: $(tail -n 3 "$work/send.err")"
cmp -s "$work/in/watched.bin" "$work/out/watched.bin" || fail "the file arrived different"
rc=0
timeout -k 5 60 "$send" -H "$RXE_ADDR" -p "$port" "$work/in/watched.bin" \
  >"$work/keyless.out" 2>"$work/keyless.err" || rc=$?
((rc == 7)) || fail "a sender without a key: exit $rc, not 7"

# What Prometheus scraped (at least one scrape after the refusal: every second).
for expect in "rdmax_received_bytes_total $size" "rdmax_written_bytes_total $size" \
  'rdmax_files_total{outcome="good"} 1' 'rdmax_senders_refused_total{reason="no_key"} 1' \
  'rdmax_connections_accepted_total 2' 'rdmax_files_total{outcome="bad_digest"} 0'; do
  eventually 30 value_is "${expect% *}" "${expect##* }" ||
    fail "Prometheus has ${expect% *} = '$(query "${expect% *}")', not ${expect##* }"
done
eventually 30 value_is 'up{job="rdma-recv"}' 1 || fail "Prometheus does not see the target up"
# Scraped during the transfer, not only after it: a sample of the bytes between none and all.
midway=$(curl -fsS -G "$api/api/v1/query" --data-urlencode "query=rdmax_received_bytes_total[10m]" |
  jq --argjson size "$size" '[.data.result[0].values[] | .[1] | tonumber | select(. > 0 and . < $size)] | length')
((midway > 0)) || fail "Prometheus holds no sample taken during the transfer"
version=$(curl -fsS -G "$api/api/v1/query" --data-urlencode 'query=rdmax_build_info' |
  jq -r '.data.result[0].metric.version // empty')
[[ -n $version ]] || fail "rdmax_build_info has no version label in Prometheus"

# The text format, as promtool lints it, and the content type a scraper negotiates.
curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$work/scrape.txt"
promtool check metrics <"$work/scrape.txt" >"$work/promtool.out" 2>&1 ||
  fail "promtool check metrics: $(cat "$work/promtool.out")"
curl -fsS -o /dev/null -D - "http://127.0.0.1:$metrics_port/metrics" |
  grep -qi '^content-type: text/plain; version=0.0.4' || fail "the answer is not text/plain; version=0.0.4"
pass "Prometheus scraped rdma-recv --metrics during a transfer ($midway samples taken midway): $size bytes received and written, 1 good file, 1 sender refused (no key), build $version; promtool check metrics: clean ($((SECONDS - started)) s)"

# Bad input: the metrics port in use is a usage error before any device work, and --check
# names it; an address that is not ADDRESS:PORT too.
rc=0
timeout 20 "$recv" --bind "$RXE_ADDR" --port $((port + 1)) --dir "$work/out" \
  --metrics "127.0.0.1:$metrics_port" >"$work/second.log" 2>&1 || rc=$?
((rc == 2)) || fail "a second rdma-recv on the metrics port: exit $rc, not 2"
grep -q "in use" "$work/second.log" || fail "the second rdma-recv does not say the port is in use: $(cat "$work/second.log")"
rc=0
"$recv" --check --bind "$RXE_ADDR" --port $((port + 1)) --dir "$work/out" \
  --metrics "127.0.0.1:$metrics_port" >"$work/check.out" 2>&1 || rc=$?
if ((rc != 1)) || ! grep -q "^FAIL metrics on http://127.0.0.1:$metrics_port/metrics: the port is in use" "$work/check.out"; then
  fail "--check with the metrics port in use: exit $rc, $(grep metrics "$work/check.out")"
fi
rc=0
"$recv" --metrics "localhost:$metrics_port" >"$work/bad.out" 2>&1 || rc=$?
if ((rc != 2)) || ! grep -q "is not ADDRESS:PORT" "$work/bad.out"; then
  fail "--metrics localhost:PORT: exit $rc, $(cat "$work/bad.out")"
fi
kill "$daemon_pid"
wait_for 15 daemon_exited recv
[[ $(daemon_status recv) == 0 ]] || fail "rdma-recv exited $(daemon_status recv) on SIGTERM with --metrics"
pass "--metrics: a port in use is exit 2 (and FAIL in --check), a name is exit 2; SIGTERM stops the server and the daemon (exit 0)"
