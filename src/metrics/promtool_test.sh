#!/usr/bin/env bash
# Checks of the /metrics exposition and of deploy/ with the real tools (ctest -R metrics_):
#   promtool_test.sh metrics RENDER        promtool check metrics on RENDER's output: no format
#                                          error; lint warnings only on dcgm-exporter's names
#   promtool_test.sh rules DEPLOY          promtool check rules + test rules on the alerts
#   promtool_test.sh deploy RENDER DEPLOY  the Grafana dashboard is valid JSON with the required
#                                          panels, and every series the dashboard and the alerts
#                                          name is one that RENDER exports
# RENDER is gf_metrics_example_render (every field set, allocated GPUs, a lost GPU).
# Exit 77 (skipped) when promtool or jq is missing.
set -euo pipefail

need() { command -v "$1" >/dev/null || { echo "SKIP: $1 not installed (scripts/bootstrap.sh)"; exit 77; }; }
fail() { echo "FAIL: $*" >&2; exit 1; }

check_metrics() {
  need promtool
  local out rc=0
  text=$(mktemp)  # global: the EXIT trap runs after this function returned
  trap 'rm -f "$text"' EXIT
  "$1" >"$text"
  out=$(promtool check metrics <"$text" 2>&1) || rc=$?
  echo "promtool check metrics: exit $rc; findings (count, line):"
  sort <<<"$out" | uniq -c
  # Exit 3 means lint problems only; anything else non-zero is a format error.
  [ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "promtool found a format error (exit $rc)"
  # promtool prints one "NAME problem" line per lint finding: our own families must have
  # none; dcgm-exporter's names (no _total on counters, the modelName label) are expected.
  local bad
  bad=$(grep -v '^DCGM_FI_' <<<"$out" | grep -v '^$' || true)
  [ -z "$bad" ] || fail "lint findings outside dcgm-exporter's names:"$'\n'"$bad"
  grep -q '^gpufleet_gpu_health{' "$text" || fail "the example exports no gpufleet_gpu_health"
  grep -q '^DCGM_FI_DEV_GPU_UTIL{.*job="' "$text" || fail "no DCGM series with a job label"
  echo "ok: no format error; gpufleet_* families lint clean"
}

check_rules() {
  need promtool
  local dir=$1/prometheus
  promtool check rules "$dir/alerts.yml"
  (cd "$dir" && promtool test rules alerts_test.yml)
  promtool check config --syntax-only "$dir/prometheus.yml"
}

check_deploy() {
  need jq
  local render=$1 deploy=$2
  local dashboard=$deploy/grafana/gpufleet.json
  jq -e . "$dashboard" >/dev/null || fail "$dashboard is not valid JSON"
  local titles
  titles=$(jq -r '.panels[] | select(.type != "row") | .title' "$dashboard")
  for want in "GPU utilisation" "GPU memory" "Power" "Energy per job" "Energy per team" \
              "Queue" "GPU health" "per team"; do
    grep -qi -- "$want" <<<"$titles" || fail "dashboard has no panel titled like '$want'"
  done
  jq -e '[.panels[] | select(.type != "row") | (.targets | length > 0) and
          all(.targets[]; (.expr | length) > 0)] | all' "$dashboard" >/dev/null ||
    fail "a dashboard panel has no query"
  jq -e '[.panels[].id] | length == (unique | length)' "$dashboard" >/dev/null ||
    fail "dashboard panel ids are not unique"

  # Every series name used by the dashboard and the alerts must be exported.
  local exported used missing=""
  exported=$("$render" | sed -n 's/^# TYPE \([^ ]*\) .*/\1/p')
  used=$( { jq -r '.. | .expr? // empty' "$dashboard"; cat "$deploy/prometheus/alerts.yml"; } |
          grep -oE '\b(DCGM_FI_[A-Z_]+|gpufleet_[a-z_]+)\b' | sort -u)
  for name in $used; do
    local base=${name%_bucket}
    grep -qx -- "$name" <<<"$exported" || grep -qx -- "$base" <<<"$exported" ||
      missing+=" $name"
  done
  [ -z "$missing" ] || fail "series used in deploy/ but not exported:$missing"
  echo "ok: dashboard panels present; $(wc -w <<<"$used") series names used, all exported"
}

case ${1:-} in
  metrics) check_metrics "$2" ;;
  rules) check_rules "$2" ;;
  deploy) check_deploy "$2" "$3" ;;
  *) echo "usage: $0 metrics RENDER | rules DEPLOY | deploy RENDER DEPLOY" >&2; exit 2 ;;
esac
