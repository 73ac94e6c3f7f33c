#!/usr/bin/env bash
# Monitoring end to end on the stand-in NVML library (tests/fakenvml): loads, processes and
# their attribution (a job's process, an unmanaged one), both conditions, XID / ECC / heat /
# a lost GPU turned into health with events, job usage, and /metrics with job labels.
# The "driver" is a scenario file that the test rewrites between samples.
source "$(dirname "$0")/lib.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
need curl
SCENARIO=$WORK/scenario.json
export GF_FAKENVML_SCENARIO=$SCENARIO

# An unmanaged GPU process: started by hand, not through gpufleet.
sleep 300 >/dev/null 2>&1 &
STRAY=$!
trap 'kill $STRAY 2>/dev/null || true; cleanup' EXIT
me=$(id -un)

# write_scenario JOB_PID UTIL EXTRA_GPU0 EXTRA_GPU1 EXTRA_GPU2: the three GPUs as JSON; the
# job's process appears on GPU 0 when JOB_PID is not 0. Renamed into place atomically.
write_scenario() {
  local job_procs="[]" used=0
  [ "$1" != 0 ] && job_procs="[{\"pid\": $1, \"used_memory_mib\": 3000, \"sm_util\": 70}]" && used=3100
  cat >"$SCENARIO.tmp" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-e2e-0", "memory_total_mib": 81559,
  "memory_used_mib": $used, "util_gpu": $2, "util_memory": 20, "temperature_c": 60,
  "power_mw": 400000, "power_limit_mw": 700000, "energy_mj": $((1000000 + SECONDS * 400000)),
  "processes": $job_procs $3},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-e2e-1", "memory_total_mib": 81559,
  "memory_used_mib": 500, "util_gpu": 5, "temperature_c": 40, "power_mw": 90000,
  "energy_mj": 5000, "processes": [{"pid": $STRAY, "used_memory_mib": 500}] $4},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-e2e-2", "memory_total_mib": 81559,
  "memory_used_mib": 0, "util_gpu": 0, "temperature_c": 35, "power_mw": 70000,
  "energy_mj": 7000 $5}]}
JSON
  mv "$SCENARIO.tmp" "$SCENARIO"
}
write_scenario 0 0 "" "" ""

"$GPUFLEET" up --gpus "nvml:$FAKENVML" --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" \
  --port -1 --node-name mon-node --sample-interval 1s --no-process-after 2s >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" gf nodes

gpu_json() { gf gpus --json | jq -c ".gpus[] | select(.uuid == \"$1\") | $2"; }
gpu_is() { [ "$(gpu_json "$1" "$2")" = "$3" ]; }
api() { curl -sf --unix-socket "$GPUFLEET_SOCKET" "http://gpufleet$1"; }
db() { sqlite3 "$WORK/data/state.db" "$1"; }

# 1. A process gpufleet did not start: mapped to its Unix user, flagged, and a condition.
wait_for "the stray process to be attributed" gpu_is GPU-e2e-1 '.sample.processes[0].unmanaged' true
gpu_is GPU-e2e-1 '.sample.processes[0].user' "\"$me\"" || fail "stray owner: $(gpu_json GPU-e2e-1 .sample.processes)"
wait_for "unallocated_process condition" gpu_is GPU-e2e-1 '.conditions' '["unallocated_process"]'
ok "unmanaged process $STRAY of $me on GPU 1, condition unallocated_process"

# 2. A job's GPU without a process for 2 s: allocated_no_process, with an event on the job.
id=$(submit --gpus 1 --gpu-type H100-80GB -- sleep 300)
wait_for "job $id to run" state_is "$id" RUNNING
uuid=$(job_field "$id" 'gpu_uuids[0]')
# Placement spreads load: of the idle free GPUs (0 and 2; GPU 1 has a stray process) it takes
# the lowest index. The scenario then puts the job's process on GPU 0.
[ "$uuid" = GPU-e2e-0 ] || fail "job $id allocation: $(gf show --json "$id")"
wait_for "allocated_no_process on $uuid" gpu_is "$uuid" '.conditions' '["allocated_no_process"]'
has_condition_event() { [ -n "$(db "select 1 from events where kind='gpu_condition' and job_id=$id")" ]; }
wait_for "the condition event" has_condition_event
ok "job $id on $uuid with no process: condition allocated_no_process and its event"

# 3. The job's process shows up on its GPU: attributed to the job, condition cleared, usage.
job_pid=$(cut -d" " -f1 "$WORK/data/jobs/$id/job.pid" 2>/dev/null || true)  # "PID STARTTIME"
[ -n "$job_pid" ] || fail "no job.pid for job $id"
write_scenario "$job_pid" 87 "" "" ""
wait_for "the job's process attributed" gpu_is GPU-e2e-0 '.sample.processes[0].job' "$id"
gpu_is GPU-e2e-0 '.sample.processes[0].unmanaged' false || fail "job process flagged unmanaged"
gpu_is GPU-e2e-0 '.sample.util_gpu_pct' 87 || fail "util: $(gpu_json GPU-e2e-0 .sample)"
gpu_is GPU-e2e-0 '.job' "$id" || fail "GPU 0 holder: $(gpu_json GPU-e2e-0 .job)"
wait_for "the condition to clear" gpu_is GPU-e2e-0 '.conditions' '[]'
usage_peak_is() { [ "$(job_field "$id" usage.peak_util_pct)" = "$1" ]; }
wait_for "live usage at 87 %" usage_peak_is 87
gf show "$id" | grep -qi "energy" || fail "show has no energy line: $(gf show "$id")"
ok "job $id's process $job_pid attributed; util 87 %; usage live in show"

# 4. /metrics carries the job label on its GPU's series.
api /metrics >"$WORK/metrics.txt" || fail "GET /metrics"
grep -E "^DCGM_FI_DEV_GPU_UTIL\{.*UUID=\"GPU-e2e-0\".*job=\"$id\"" "$WORK/metrics.txt" | grep -q " 87$" \
  || fail "no DCGM_FI_DEV_GPU_UTIL 87 with job=$id: $(grep GPU_UTIL "$WORK/metrics.txt")"
ok "/metrics: DCGM_FI_DEV_GPU_UTIL of GPU 0 is 87 with job=\"$id\""

# 5. Faults: XID 79 on GPU 0, an uncorrectable ECC error on GPU 1, GPU 2 overheats.
write_scenario "$job_pid" 87 ', "xid_events": [{"xid": 79, "seq": 1}]' \
  ', "ecc": {"volatile_uncorrected": 1, "aggregate_uncorrected": 1}' ', "temperature_c": 96'
wait_for "XID 79 to fail GPU 0" gpu_is GPU-e2e-0 '.health' '"failed"'
gpu_json GPU-e2e-0 .health_cause | grep -q "XID 79" || fail "cause: $(gpu_json GPU-e2e-0 .health_cause)"
wait_for "ECC to fail GPU 1" gpu_is GPU-e2e-1 '.health' '"failed"'
gpu_json GPU-e2e-1 .health_cause | grep -qi "ecc" || fail "cause: $(gpu_json GPU-e2e-1 .health_cause)"
wait_for "heat to degrade GPU 2" gpu_is GPU-e2e-2 '.health' '"degraded"'
gpu_json GPU-e2e-2 .health_cause | grep -q "96" || fail "cause: $(gpu_json GPU-e2e-2 .health_cause)"
ok "XID 79 -> failed, uncorrectable ECC -> failed, 96 C -> degraded"

# 6. GPU 2 falls off the bus.
write_scenario "$job_pid" 87 ', "xid_events": [{"xid": 79, "seq": 1}]' \
  ', "ecc": {"volatile_uncorrected": 1, "aggregate_uncorrected": 1}' ', "temperature_c": 96, "lost": true'
wait_for "GPU 2 lost" gpu_is GPU-e2e-2 '.health' '"failed"'
gpu_is GPU-e2e-2 '.sample.lost' true || fail "GPU 2 sample: $(gpu_json GPU-e2e-2 .sample)"
ok "lost GPU 2 -> failed: $(gpu_json GPU-e2e-2 .health_cause)"

# Every health change is an event, and the nodes view shows the health too.
events=$(db "select message from events where kind='gpu_health' order by seq")
for want in "GPU 0 (GPU-e2e-0) on mon-node: ok -> failed" "GPU 1 (GPU-e2e-1) on mon-node: ok -> failed" \
            "GPU 2 (GPU-e2e-2) on mon-node: ok -> degraded" "GPU 2 (GPU-e2e-2) on mon-node: degraded -> failed"; do
  grep -qF "$want" <<<"$events" || fail "no event '$want' in: $events"
done
gf nodes --json | jq -e '.nodes[0].gpus[2].health == "failed"' >/dev/null || fail "nodes: $(gf nodes --json)"
gf nodes | grep -q "3 failed" || fail "nodes table: $(gf nodes)"
gf gpus | grep -q failed || fail "gpus table shows no failed GPU: $(gf gpus)"
ok "health events recorded: $(wc -l <<<"$events")"

# 7. The job's usage is stored with it when it ends.
gf cancel "$id" >/dev/null
wait_for "job $id cancelled" state_is "$id" CANCELLED
[ "$(job_field "$id" usage.peak_util_pct)" = 87 ] || fail "stored usage: $(job_field "$id" usage)"
energy=$(job_field "$id" usage.energy_mj)
[ "$energy" -gt 0 ] || fail "energy $energy"
ok "stored usage of job $id: peak 87 %, energy $energy mJ"
kill "$STRAY" 2>/dev/null || true
