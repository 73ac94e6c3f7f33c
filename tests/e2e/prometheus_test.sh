#!/usr/bin/env bash
# A real Prometheus scrapes gpufleet's /metrics; values are read back through its HTTP API:
# the running job's GPU as DCGM_FI_DEV_GPU_UTIL with job/user labels, and gpufleet_* series.
# Also: /metrics answers on TCP with the 0.0.4 Content-Type, and promtool finds no format
# error in it. Fails without prometheus, promtool, curl or jq (scripts/bootstrap.sh installs them).
source "$(dirname "$0")/lib.sh"
need prometheus promtool curl jq

PROM_PID=""
stop_prometheus() {
  if [ -n "$PROM_PID" ]; then kill "$PROM_PID" 2>/dev/null || true; wait "$PROM_PID" 2>/dev/null || true; fi
  PROM_PID=""
}
trap 'stop_prometheus; cleanup' EXIT

start_up
gf_port=$(sed -n 's|.*API URL: *http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$WORK/up.log" | head -n1)
[ -n "$gf_port" ] || fail "no TCP port in the gpufleet up banner"
metrics_url=http://127.0.0.1:$gf_port/metrics

# /metrics itself: anonymous TCP, Prometheus' Content-Type, no format error.
ctype=$(curl -sS -o "$WORK/metrics.txt" -w '%{content_type}' "$metrics_url")
[ "$ctype" = "text/plain; version=0.0.4; charset=utf-8" ] || fail "Content-Type '$ctype'"
rc=0
promtool check metrics <"$WORK/metrics.txt" >"$WORK/lint.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "promtool check metrics: exit $rc: $(head -n 5 "$WORK/lint.txt")"
if grep -v '^DCGM_FI_' "$WORK/lint.txt" | grep -q .; then
  fail "lint findings outside dcgm-exporter's names: $(grep -v '^DCGM_FI_' "$WORK/lint.txt" | head -n 5)"
fi
ok "/metrics over TCP: $ctype, promtool: no format error (exit $rc, DCGM names only)"

id=$(submit --gpus 1 -- sleep 300)
wait_for "job $id to run" state_is "$id" RUNNING
uuid=$(gf show --json "$id" | jq -r '.gpu_uuids[0]')
user=$(id -un)

cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpufleet
    honor_labels: true  # keep gpufleet's job label (deploy/prometheus/prometheus.yml)
    static_configs:
      - targets: ["127.0.0.1:$gf_port"]
EOF

# Prometheus on a free loopback port: a port taken meanwhile makes it exit, then retry.
prom_url=""
for attempt in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 40000))
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom-data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn >>"$WORK/prometheus.log" 2>&1 &
  PROM_PID=$!
  deadline=$((SECONDS + 30))
  until curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; do
    pid_running "$PROM_PID" || break
    [ $SECONDS -lt $deadline ] || fail "prometheus not ready: $(tail -n 5 "$WORK/prometheus.log")"
    sleep 0.1
  done
  if pid_running "$PROM_PID"; then prom_url=http://127.0.0.1:$port; break; fi
  wait "$PROM_PID" 2>/dev/null || true
  PROM_PID=""
done
[ -n "$prom_url" ] || fail "prometheus did not start: $(tail -n 5 "$WORK/prometheus.log")"
ok "prometheus on $prom_url scraping $metrics_url every second"

# query PROMQL: the JSON result vector.
query() { curl -sfG "$prom_url/api/v1/query" --data-urlencode "query=$1" | jq -c '.data.result'; }
has_result() { [ "$(query "$1" | jq length)" -gt 0 ]; }

wait_for "DCGM_FI_DEV_GPU_UTIL of job $id in Prometheus" has_result "DCGM_FI_DEV_GPU_UTIL{job=\"$id\"}"
series=$(query "DCGM_FI_DEV_GPU_UTIL{job=\"$id\"}")
[ "$(jq length <<<"$series")" = 1 ] || fail "job $id holds one GPU, got: $series"
[ "$(jq -r '.[0].metric.UUID' <<<"$series")" = "$uuid" ] || fail "UUID label, want $uuid: $series"
[ "$(jq -r '.[0].metric.user' <<<"$series")" = "$user" ] || fail "user label, want $user: $series"
[ "$(jq -r '.[0].metric.Hostname' <<<"$series")" = e2e-node ] || fail "Hostname label: $series"
[ "$(jq -r '.[0].metric.device' <<<"$series")" = "nvidia$(jq -r '.[0].metric.gpu' <<<"$series")" ] ||
  fail "device label: $series"
util=$(jq -r '.[0].value[1]' <<<"$series")
jq -e --arg u "$util" '($u | tonumber) >= 0 and ($u | tonumber) <= 100' <<<'null' >/dev/null ||
  fail "utilisation '$util' outside 0..100"
ok "DCGM_FI_DEV_GPU_UTIL{job=\"$id\",user=\"$user\",UUID=\"$uuid\"} = $util through Prometheus"

# The other three simulated GPUs are free: their series carry no gpufleet job id.
free=$(query "count(DCGM_FI_DEV_GPU_UTIL{job!=\"$id\",user=\"\"})" | jq -r '.[0].value[1] // 0')
[ "$free" = 3 ] || fail "want 3 unallocated GPUs without user label, got $free"

wait_for "gpufleet_job_gpus of job $id" has_result "gpufleet_job_gpus{job=\"$id\"} == 1"
running=$(query 'gpufleet_jobs{state="RUNNING"}' | jq -r '.[0].value[1]')
[ "$running" -ge 1 ] || fail "gpufleet_jobs{state=\"RUNNING\"} = $running"
[ "$(query 'gpufleet_gpus' | jq -r '.[0].value[1]')" = 4 ] || fail "gpufleet_gpus != 4"
has_result "gpufleet_gpu_health{UUID=\"$uuid\"} == 0" || fail "health of $uuid is not ok"
ok "gpufleet_job_gpus{job=\"$id\"} = 1, gpufleet_jobs{state=\"RUNNING\"} = $running, gpufleet_gpus = 4"

gf cancel "$id" >/dev/null
wait_for "job $id cancelled" state_is "$id" CANCELLED
stop_prometheus
ok "stopped"
