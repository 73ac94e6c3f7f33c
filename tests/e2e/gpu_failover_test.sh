#!/usr/bin/env bash
# GPU health fail-over and energy accounting end to end (issue #8), on the stand-in NVML library
# (tests/fakenvml), whose scenario file the test rewrites between samples:
#  1. a job's energy is exactly its GPU's energy counter delta, priced by [energy];
#  2. a fatal XID on the job's GPU: the job gets its checkpoint signal, is requeued with the
#     cause and restarts on the healthy GPU; subscribers get gpu_failed;
#  3. the failed GPU takes no new work; once it runs no process the agent's self-test
#     (--gpu-self-test) passes and returns it to service;
#  4. a second failure, while the self-test is not due again: `gpufleet gpu resume` returns it.
source "$(dirname "$0")/lib.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
SCENARIO=$WORK/scenario.json
export GF_FAKENVML_SCENARIO=$SCENARIO
GPU0=GPU-f0000000-0000-4000-8000-000000000000
GPU1=GPU-f0000000-0000-4000-8000-000000000001

# write_scenario ENERGY0 XIDS0 PROCS0: two H100s, GPU 1 a little busy (so that placement, which
# spreads load, picks GPU 0 first); GPU 0's energy counter (mJ), its XID events and its
# processes as JSON arrays. Renamed into place atomically.
write_scenario() {
  cat >"$SCENARIO.tmp" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "$GPU0", "memory_total_mib": 81559,
  "util_gpu": 0, "temperature_c": 50, "power_mw": 300000, "energy_mj": $1,
  "xid_events": $2, "processes": $3},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "$GPU1", "memory_total_mib": 81559,
  "util_gpu": 30, "temperature_c": 40, "power_mw": 80000, "energy_mj": 5000}]}
JSON
  mv "$SCENARIO.tmp" "$SCENARIO"
}
write_scenario 1000000 "[]" "[]"

# The self-test records each GPU it is run on, and passes once $WORK/selftest-ok exists.
cat >"$WORK/selftest.sh" <<SH
#!/bin/sh
echo "\$GPUFLEET_GPU_UUID \$CUDA_VISIBLE_DEVICES" >>"$WORK/selftest.log"
test -e "$WORK/selftest-ok"
SH
chmod 755 "$WORK/selftest.sh"
cat >"$WORK/gpufleet.toml" <<TOML
[energy]
price_per_kwh = 0.25
currency = "EUR"
co2_g_per_kwh = 400
[notify]
webhook_allow = ["127.0.0.1"]  # the test's receiver: loopback is refused unless listed
TOML

start_webhook_receiver
"$GPUFLEET" up --config "$WORK/gpufleet.toml" --gpus "nvml:$FAKENVML" --data-dir "$WORK/data" \
  --listen-socket "$GPUFLEET_SOCKET" --port -1 --node-name fo-node --sample-interval 1s \
  --kill-grace 5 --gpu-self-test "$WORK/selftest.sh" >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" gf nodes
gf notify add --webhook "$HOOK_URL/hook" --all --events gpu_failed >/dev/null

gpu_health() { gf gpus --json | jq -r ".gpus[] | select(.uuid == \"$1\") | .health"; }
health_is() { [ "$(gpu_health "$1")" = "$2" ]; }
job_energy_is() { [ "$(job_field "$1" usage.energy_mj)" = "$2" ]; }

# 1. A job on GPU 0, the idle one. It saves its work on SIGUSR1 (its checkpoint signal) and
#    exits 0.
id=$(submit --gpus 1 --checkpoint-signal USR1 -- sh -c \
  "trap 'echo saved >>$WORK/checkpoints; exit 0' USR1; while :; do sleep 0.1; done")
wait_for "job $id to run" state_is "$id" RUNNING
[ "$(job_field "$id" 'gpu_uuids[0]')" = "$GPU0" ] || fail "job $id not on GPU 0: $(gf show "$id")"
job_pid=$(cut -d" " -f1 "$WORK/data/jobs/$id/job.pid")
procs="[{\"pid\": $job_pid, \"used_memory_mib\": 2000}]"
write_scenario 1000000 "[]" "$procs"
sampled() { [ "$(job_field "$id" usage.samples)" -ge 1 ] 2>/dev/null; }
wait_for "a sample of GPU 0 under job $id" sampled
# The counter moves by 7.2e9 mJ = 2 kWh while the job holds the GPU: its energy is that delta.
write_scenario 7201000000 "[]" "$procs"
wait_for "job $id energy = the counter delta" job_energy_is "$id" 7200000000
[ "$(job_field "$id" energy.energy_kwh)" = 2 ] || fail "kWh: $(gf show --json "$id" | jq .energy)"
[ "$(job_field "$id" energy.cost)" = 0.5 ] || fail "cost: $(gf show --json "$id" | jq .energy)"
[ "$(job_field "$id" energy.co2_kg)" = 0.8 ] || fail "CO2: $(gf show --json "$id" | jq .energy)"
gf show "$id" | grep -q "Energy      7200000 J (2.000 kWh), cost 0.50 EUR, 0.800 kg CO2" ||
  fail "show: $(gf show "$id")"
user_kwh=$(gf quota --json | jq -r ".users[] | select(.user == \"$(id -un)\") | .energy.energy_kwh")
[ "$user_kwh" = 2 ] || fail "quota energy: $(gf quota --json | jq -c .users)"
ok "job $id: 7.2e9 mJ = the counter delta, 2 kWh, 0.50 EUR, 0.8 kg CO2 (show and quota)"

# 2. XID 79 on GPU 0: failed; the job checkpoints, is requeued and restarts on GPU 1.
write_scenario 7201000000 '[{"xid": 79, "seq": 1}]' "$procs"
wait_for "GPU 0 failed" health_is "$GPU0" failed
wait_for "job $id to checkpoint" grep -q saved "$WORK/checkpoints"
on_gpu1() { state_is "$id" RUNNING && [ "$(job_field "$id" 'gpu_uuids[0]')" = "$GPU1" ]; }
wait_for "job $id to run again on GPU 1" on_gpu1
events=$(gf show "$id")
for want in "gpu_failover" "sending SIGUSR1 to checkpoint" "RUNNING -> NODE_FAIL" \
            "requeued after GPU failure: GPU 0 ($GPU0) on fo-node failed: XID 79"; do
  grep -qF "$want" <<<"$events" || fail "job $id events lack '$want': $events"
done
wait_for "gpu_failed notification" hook_with \
  ".kind == \"gpu_failed\" and .job == $id and .node == \"fo-node\""
ok "XID 79: job $id checkpointed (SIGUSR1), requeued and running on GPU 1; gpu_failed sent"

# 3. While job $id's process still shows on GPU 0, no self-test; a new job cannot use GPU 0.
other=$(submit --gpus 1 -- sleep 300)
wait_for "job $other to wait" test -n "$(job_field "$other" reason | grep -v '^null$')"
state_is "$other" PENDING || fail "job $other started on a failed GPU: $(gf show "$other")"
[ ! -s "$WORK/selftest.log" ] || fail "self-test ran on a GPU with a process"
touch "$WORK/selftest-ok"
write_scenario 7201000000 '[{"xid": 79, "seq": 1}]' "[]"  # the old process is gone
wait_for "the self-test" test -s "$WORK/selftest.log"
[ "$(cat "$WORK/selftest.log")" = "$GPU0 $GPU0" ] || fail "self-test: $(cat "$WORK/selftest.log")"
wait_for "GPU 0 back after its self-test" health_is "$GPU0" ok
wait_for "job $other to start on GPU 0" state_is "$other" RUNNING
[ "$(job_field "$other" 'gpu_uuids[0]')" = "$GPU0" ] || fail "job $other: $(gf show "$other")"
ok "self-test passed on GPU 0: back in service, job $other runs on it"

# 4. Another fatal XID; the self-test is not due again for 10 minutes: an operator resumes it.
gf cancel "$other" >/dev/null
wait_for "job $other to end" state_is "$other" CANCELLED
rm "$WORK/selftest-ok"
write_scenario 7201000000 '[{"xid": 79, "seq": 1}, {"xid": 94, "seq": 2}]' "[]"
wait_for "GPU 0 failed again" health_is "$GPU0" failed
gf gpu resume fo-node 7 2>"$WORK/err" && fail "resumed a GPU that does not exist"
grep -q "GPU 7 not found on fo-node" "$WORK/err" || fail "resume error: $(cat "$WORK/err")"
gf gpu resume fo-node 0 | grep -q "was failed: its health is judged afresh" || fail "resume output"
wait_for "GPU 0 back after gpu resume" health_is "$GPU0" ok
gf gpu resume fo-node 0 2>"$WORK/err" && fail "resumed a healthy GPU"
grep -q "is ok: there is nothing to resume" "$WORK/err" || fail "resume error: $(cat "$WORK/err")"
[ "$(wc -l <"$WORK/selftest.log")" = 1 ] || fail "self-test ran again within its interval"
ok "XID 94: GPU 0 failed again; gpufleet gpu resume returned it; self-test not re-run early"
