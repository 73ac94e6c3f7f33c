#!/usr/bin/env bash
# The overview's first paint on a big cluster (issue #25: under 1 s with 1,000 GPUs and 10,000
# queued jobs), measured by Chromium's performance timing: `gpufleet up` on 1,000 simulated
# GPUs, a blocker job holding all of them and an array of 10,000 one-GPU tasks waiting behind
# it; then dashboard_first_paint.mjs opens #/overview RUNS times, each in a fresh browser
# context (nothing cached), and prints a table: first contentful paint, and when the figures
# first showed (the page's `gf-overview-ready` mark: the KPIs and 1,000 cells rendered), with
# the bundle's size.
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
cleanup() {
  if [ -n "$up_pid" ]; then
    "$GPUFLEET" cancel --state PENDING --user "$(id -un)" >/dev/null 2>&1 || true
    "$GPUFLEET" cancel --state RUNNING --user "$(id -un)" >/dev/null 2>&1 || true
    kill "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
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
    [ $SECONDS -lt $deadline ] || { echo "gave up waiting for $what (log: $work/up.log)" >&2; exit 1; }
    sleep 0.5
  done
}

"$GPUFLEET" up --gpus sim:1000xH100-80GB --data-dir "$work/data" --listen-socket "$GPUFLEET_SOCKET" \
  --port 0 --node-name bench-node >"$work/up.log" 2>&1 &
up_pid=$!
until_ok "gpufleet up" 60 "$GPUFLEET" nodes
url=$(sed -n 's|.*API URL: *\(https*://[0-9.]*:[0-9]*\)/api/v1|\1|p' "$work/up.log")
blocker=$("$GPUFLEET" submit --json --gpus 1000 --name blocker --workdir /tmp -- sleep 3600 | jq -r .id)
until_ok "the blocker to run" 120 sh -c "\"$GPUFLEET\" show --json $blocker | jq -e '.state == \"RUNNING\"'"
"$GPUFLEET" submit --json --gpus 1 --array 0-9999 --name queued --workdir /tmp -- true >/dev/null
until_ok "10,000 pending jobs" 300 sh -c \
  "\"$GPUFLEET\" queue --json | jq -e '[.jobs[] | select(.state == \"PENDING\")] | length == 10000'"
"$GPUFLEET" token create --user "$(id -un)" --role admin --output "$work/admin.token" >/dev/null
GF_URL=$url GF_TOKEN=$(cat "$work/admin.token") GF_RUNS=$runs GF_GPUFLEET=$GPUFLEET \
  node "$here/dashboard_first_paint.mjs"
