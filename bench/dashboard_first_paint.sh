#!/usr/bin/env bash
# The overview's first paint on a big cluster (issue #25: under 1 s with 1,000 GPUs and 10,000
# queued jobs), measured by Chromium's performance timing: `gpufleet server` with 20 agents of 50
# simulated GPUs each (a node simulates at most 64), a 20-node blocker job holding all 1,000 GPUs
# and an array of 10,000 one-GPU tasks waiting behind it; then dashboard_first_paint.mjs opens
# #/overview RUNS times, each in a fresh browser context (nothing cached), and prints a table:
# first contentful paint, and when the figures first showed (the page's `gf-overview-ready`
# mark: the KPIs and 1,000 cells rendered), with the bundle's size.
#   bench/dashboard_first_paint.sh [RUNS]
# GPUFLEET (default build/release/apps/gpufleet/gpufleet), GF_WEB_NODE_MODULES (playwright-core:
# the build dir's web/node_modules), CHROMIUM (/usr/bin/chromium). A debug (sanitizer) build
# serves several times slower than a release one: say which one a figure comes from.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runs=${1:-5}
GPUFLEET=$(realpath "${GPUFLEET:-build/release/apps/gpufleet/gpufleet}")
build_dir=$(dirname "$(dirname "$(dirname "$GPUFLEET")")")
export GF_WEB_NODE_MODULES=${GF_WEB_NODE_MODULES:-$build_dir/web/node_modules}
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
work=$(mktemp -d /tmp/gf-paint.XXXXXX)
export GPUFLEET_SOCKET=$work/gf.sock
up_pid=
agent_pids=()
cleanup() {
  if [ -n "$up_pid" ]; then
    "$GPUFLEET" cancel --state PENDING --user "$(id -un)" >/dev/null 2>&1 || true
    "$GPUFLEET" cancel --state RUNNING --user "$(id -un)" >/dev/null 2>&1 || true
    for pid in "${agent_pids[@]}" "$up_pid"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${agent_pids[@]}" "$up_pid"; do wait "$pid" 2>/dev/null || true; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# until TEXT SECONDS CMD...: runs CMD every 0.5 s until it succeeds, or gives up naming TEXT.
until_ok() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "gave up waiting for $what; the server's log ends:" >&2
      tail -5 "$work/up.log" >&2
      exit 1
    fi
    sleep 0.5
  done
}

# Smaller sizes for a smoke run (a debug build's server does not keep up with the full one on
# two cores): GF_NODES, GF_GPUS_PER_NODE, GF_QUEUED; GF_SAMPLE_INTERVAL (1s) the agents'.
kNodes=${GF_NODES:-20}
kGpusPerNode=${GF_GPUS_PER_NODE:-50}
kQueued=${GF_QUEUED:-10000}
"$GPUFLEET" server --data-dir "$work/data" --listen-socket "$GPUFLEET_SOCKET" --port 0 \
  --heartbeat 1s >"$work/up.log" 2>&1 &
up_pid=$!
until_ok "gpufleet server" 60 "$GPUFLEET" nodes
url=$(sed -n 's|.*API URL: *\(https*://[0-9.]*:[0-9]*\)/api/v1|\1|p' "$work/up.log")
"$GPUFLEET" node token create --output "$work/node.token" --description bench >/dev/null
for i in $(seq 1 $kNodes); do
  "$GPUFLEET" agent --server "$url" --token-file "$work/node.token" \
    --gpus "sim:${kGpusPerNode}xH100-80GB" --data-dir "$work/agent$i" --node-name "n$i" \
    --sample-interval "${GF_SAMPLE_INTERVAL:-1s}" \
    >"$work/agent$i.log" 2>&1 &
  agent_pids+=($!)
done
until_ok "$kNodes nodes" 120 sh -c "\"$GPUFLEET\" nodes --json | jq -e '[.nodes[] | select(.state == \"up\")] | length == $kNodes'"
blocker=$("$GPUFLEET" submit --json --nodes $kNodes --gpus $kGpusPerNode --name blocker --workdir /tmp -- sleep 3600 | jq -r .id)
until_ok "the blocker to run" 120 sh -c "\"$GPUFLEET\" show --json $blocker | jq -e '.state == \"RUNNING\"'"
"$GPUFLEET" submit --json --gpus 1 --array "0-$((kQueued - 1))" --name queued --workdir /tmp -- true >/dev/null
until_ok "$kQueued pending jobs" 300 sh -c \
  "\"$GPUFLEET\" queue --json | jq -e '[.jobs[] | select(.state == \"PENDING\")] | length == $kQueued'"
"$GPUFLEET" token create --user "$(id -un)" --role admin --output "$work/admin.token" >/dev/null
GF_URL=$url GF_TOKEN=$(cat "$work/admin.token") GF_RUNS=$runs GF_GPUFLEET=$GPUFLEET \
  GF_GPUS=$((kNodes * kGpusPerNode)) GF_QUEUED=$kQueued \
  node "$here/dashboard_first_paint.mjs"
