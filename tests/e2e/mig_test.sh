#!/usr/bin/env bash
# MIG (issue #7) end to end on the stand-in NVML library (tests/fakenvml): an H100 with MIG on
# and two 3g.40gb devices, beside a whole H100.
#  1. the agent reports the GPU with MIG on: it is in mig mode, lists its devices, and refuses
#     other modes; the whole H100 refuses mig;
#  2. --mig 3g.40gb jobs each get a device (CUDA_VISIBLE_DEVICES names it); a third waits with
#     the reason; a job for a profile no GPU offers is refused;
#  3. `gpufleet gpu mig-layout` on the held GPU waits for its jobs; once they end the agent
#     applies it (the stand-in driver's devices change) and the GPU reports the new devices;
#     a 1g.10gb job then runs on one of them.
source "$(dirname "$0")/lib.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
SCENARIO=$WORK/scenario.json
export GF_FAKENVML_SCENARIO=$SCENARIO
GPU0=GPU-c0000000-0000-4000-8000-000000000000
GPU1=GPU-c0000000-0000-4000-8000-000000000001
cat >"$SCENARIO" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "$GPU0", "memory_total_mib": 81559,
  "util_gpu": 0, "temperature_c": 40, "power_mw": 90000, "energy_mj": 1000,
  "mig": {"enabled": true, "profiles": "H100-80GB",
          "instances": [{"profile": "3g.40gb", "gpu_instance_id": 1},
                        {"profile": "3g.40gb", "gpu_instance_id": 2}]}},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "$GPU1", "memory_total_mib": 81559,
  "util_gpu": 0, "temperature_c": 40, "power_mw": 80000, "energy_mj": 5000}]}
JSON

"$GPUFLEET" up --gpus "nvml:$FAKENVML" --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" \
  --port -1 --node-name mig-node --sample-interval 1s --kill-grace 2 >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" gf nodes

gpu_json() { gf gpus --json | jq -c ".gpus[] | select(.index == $1)"; }
# 1. Modes follow the hardware.
[ "$(gpu_json 0 | jq -r .sharing)" = mig ] || fail "GPU 0 not in mig mode: $(gpu_json 0)"
[ "$(gpu_json 0 | jq -r '[.mig_instances[].profile] | join(",")')" = "3g.40gb,3g.40gb" ] ||
  fail "GPU 0 devices: $(gpu_json 0)"
gf gpu mode mig-node 0 shared 2>"$WORK/err" && fail "GPU 0 went shared with MIG on"
grep -q "has MIG mode on" "$WORK/err" || fail "mode error: $(cat "$WORK/err")"
gf gpu mode mig-node 1 mig 2>"$WORK/err" && fail "GPU 1 went mig with MIG off"
grep -q "has MIG mode off; turn it on with \`nvidia-smi -i 1 -mig 1\`" "$WORK/err" ||
  fail "mode error: $(cat "$WORK/err")"
ok "GPU 0 (MIG on) is in mig mode with two 3g.40gb devices; modes against the hardware refused"

# 2. MIG jobs.
run=$WORK/run; mkdir -p "$run"
job_cmd="echo \$CUDA_VISIBLE_DEVICES > $run/cvd.\$GPUFLEET_JOB_ID; while [ ! -e $run/go ]; do sleep 0.05; done"
a=$(submit --mig 3g.40gb -- sh -c "$job_cmd")
b=$(submit --mig 3g.40gb -- sh -c "$job_cmd")
c=$(submit --mig 3g.40gb -- sh -c "$job_cmd")
wait_for "jobs $a and $b to run" eval "state_is $a RUNNING && state_is $b RUNNING"
wait_for "their environment" eval "test -s $run/cvd.$a && test -s $run/cvd.$b"
devices=$(gpu_json 0 | jq -r '[.mig_instances[].uuid] | sort | join(" ")')
held="$(sort <<<"$(cat "$run/cvd.$a"; cat "$run/cvd.$b")" | tr '\n' ' ' | sed 's/ $//')"
[ "$held" = "$devices" ] || fail "jobs see '$held', the devices are '$devices'"
[ "$(job_field "$a" alloc_mig)" = "$(cat "$run/cvd.$a")" ] || fail "alloc_mig: $(gf show --json "$a")"
[ "$(job_field "$a" alloc_gpu_share)" = 0.428 ] || fail "share: $(job_field "$a" alloc_gpu_share)"
wait_for "job $c to wait with a reason" eval "job_field $c reason | grep -q 'needs a MIG device 3g.40gb; all 2 of them are held'"
state_is "$c" PENDING || fail "job $c: $(gf show "$c")"
gf submit --mig 2g.24gb -- true 2>"$WORK/err" && fail "a profile no GPU offers was accepted"
grep -q "no GPU offers MIG profile 2g.24gb" "$WORK/err" || fail "submit error: $(cat "$WORK/err")"
gf submit --mig 3g.40gb --gpu-share 0.5 -- true 2>"$WORK/err" && fail "--mig with a share accepted"
grep -q "mig: a MIG device is a fixed part of a GPU" "$WORK/err" || fail "error: $(cat "$WORK/err")"
ok "jobs $a and $b each on a 3g.40gb device (CUDA_VISIBLE_DEVICES = its MIG uuid), job $c waits"

# 3. A new layout waits for the GPU to empty, then the agent applies it.
gf cancel "$c" >/dev/null
gf gpu mig-layout mig-node 0 1g.10gb,1g.10gb,3g.40gb | grep -q "once no job holds it" ||
  fail "mig-layout output"
[ "$(gpu_json 0 | jq -r '.mig_layout_next | join(",")')" = "1g.10gb,1g.10gb,3g.40gb" ] ||
  fail "layout not waiting: $(gpu_json 0)"
sleep 2
[ "$(gpu_json 0 | jq -r '[.mig_instances[].profile] | join(",")')" = "3g.40gb,3g.40gb" ] ||
  fail "the layout changed under running jobs: $(gpu_json 0)"
touch "$run/go"
wait_for "jobs $a and $b to end" eval "state_is $a COMPLETED && state_is $b COMPLETED"
new_layout() { [ "$(gpu_json 0 | jq -r '[.mig_instances[].profile] | sort | join(",")')" = "1g.10gb,1g.10gb,3g.40gb" ]; }
wait_for "the new layout on GPU 0" new_layout
[ "$(gpu_json 0 | jq -r .mig_layout_next)" = null ] || fail "layout still waiting: $(gpu_json 0)"
rm "$run/go"
d=$(submit --mig 1g.10gb -- sh -c "$job_cmd")
wait_for "job $d to run" state_is "$d" RUNNING
[ "$(job_field "$d" alloc_gpu_mem_mib)" -gt 9000 ] || fail "job $d memory: $(gf show --json "$d")"
gf show "$d" >/dev/null
touch "$run/go"
ok "layout 1g.10gb,1g.10gb,3g.40gb applied once the GPU emptied; job $d runs on a 1g.10gb"
