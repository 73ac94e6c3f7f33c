#!/usr/bin/env bash
# The power policy end to end on the stand-in NVML library (tests/fakenvml), which appends every
# power limit it is given to $GF_FAKENVML_POWER_LOG ("<uuid> <mW>" a line): idle GPUs are capped
# to --idle-power-limit after --idle-power-after; a job's GPU gets its default limit back before
# the job runs (the job itself reads the log); the GPU is capped again after the job; stopping
# gpufleet restores every GPU.
source "$(dirname "$0")/lib.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
SCENARIOS=${FAKENVML_SCENARIOS:-$(dirname "$0")/../fakenvml/scenarios}
# Two idle H100s, default limit 700 W, range 100..700 W.
export GF_FAKENVML_SCENARIO=$SCENARIOS/power.json
export GF_FAKENVML_POWER_LOG=$WORK/power.log
GPU0=GPU-90000000-0000-4000-8000-000000000001
GPU1=GPU-90000000-0000-4000-8000-000000000002

"$GPUFLEET" up --gpus "nvml:$FAKENVML" --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" \
  --port -1 --node-name power-node --sample-interval 1s \
  --idle-power-limit 150 --idle-power-after 2s >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" gf nodes

# limits_of UUID: the limits set on that GPU so far, in order, one line ("150000 700000 ...").
limits_of() { grep "^$1 " "$WORK/power.log" 2>/dev/null | cut -d' ' -f2 | paste -sd' ' -; }
limits_are() { [ "$(limits_of "$1")" = "$2" ]; }
gpu_limit_is() {
  [ "$(gf gpus --json | jq -r ".gpus[] | select(.uuid == \"$1\") | .sample.power_limit_mw")" = "$2" ]
}

# 1. Both GPUs idle: capped at 150 W, once each, and `gpufleet gpus` shows the enforced limit.
wait_for "GPU 0 capped" limits_are $GPU0 150000
wait_for "GPU 1 capped" limits_are $GPU1 150000
wait_for "the capped limit in the GPU samples" gpu_limit_is $GPU0 150000
gf gpus | grep -q "/150W" || fail "gpus table shows no 150 W limit: $(gf gpus)"
grep -q "power: GPU 0 ($GPU0) had no job for 2s: power limit capped at 150 W" "$WORK/up.log" \
  || fail "no cap line in the log"
ok "idle GPUs capped at 150 W: $(paste -sd, "$WORK/power.log")"

# 2. A job: its GPU's default limit is back before it runs. The job copies the log to its output.
id=$(submit --gpus 1 -- cat "$WORK/power.log")
wait_for "job $id to complete" state_is "$id" COMPLETED
uuid=$(job_field "$id" 'gpu_uuids[0]')
other=$GPU1
[ "$uuid" = "$GPU0" ] || other=$GPU0
seen=$(gf logs "$id" | grep "^$uuid " | cut -d' ' -f2 | paste -sd' ' -)
[ "$seen" = "150000 700000" ] || fail "job $id saw limits '$seen' on $uuid; want '150000 700000'"
ok "job $id on $uuid saw its GPU restored to 700 W before it ran"

# 3. After the job, its GPU idles and is capped again; the other GPU was never touched.
wait_for "$uuid capped again" limits_are "$uuid" "150000 700000 150000"
limits_are "$other" 150000 || fail "other GPU $other: $(limits_of "$other")"
ok "$uuid capped again after job $id; $other stayed capped"

# 4. Stopping gpufleet restores every GPU.
kill -TERM "$UP_PID"
wait "$UP_PID" || fail "gpufleet up exited with $?"
UP_PID=""
limits_are "$uuid" "150000 700000 150000 700000" || fail "$uuid at stop: $(limits_of "$uuid")"
limits_are "$other" "150000 700000" || fail "$other at stop: $(limits_of "$other")"
ok "stop restored both GPUs to 700 W"
