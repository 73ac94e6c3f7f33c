#!/usr/bin/env bash
# GPU memory enforcement on shared GPUs (issue #7), end to end on the stand-in NVML library
# (tests/fakenvml): the test writes the GPU's process list with the jobs' real pids and the
# memory each uses, as the driver would report it.
#  1. job A (limit 10 GiB) runs two processes using 13,000 and 12,000 MiB: its largest is
#     killed through the agent; the other alone is still over the limit, so once
#     [sharing] memory_breach_grace (3s) has passed the job is stopped and ends FAILED;
#  2. job B (limit 10 GiB) runs one process using 11,000 MiB beside its main one: that process
#     is killed, the breach clears, and the job runs on past the grace;
#  3. a subscriber gets memory_breach for both.
source "$(dirname "$0")/lib.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
SCENARIO=$WORK/scenario.json
export GF_FAKENVML_SCENARIO=$SCENARIO
GPU0=GPU-b0000000-0000-4000-8000-000000000000
GPU1=GPU-b0000000-0000-4000-8000-000000000001

# write_scenario PROCS0: two H100s; GPU 0's compute processes as a JSON array.
write_scenario() {
  cat >"$SCENARIO.tmp" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "$GPU0", "memory_total_mib": 81920,
  "util_gpu": 50, "temperature_c": 50, "power_mw": 300000, "energy_mj": 1000,
  "processes": $1},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "$GPU1", "memory_total_mib": 81920,
  "util_gpu": 0, "temperature_c": 40, "power_mw": 80000, "energy_mj": 5000}]}
JSON
  mv "$SCENARIO.tmp" "$SCENARIO"
}
write_scenario "[]"
cat >"$WORK/gpufleet.toml" <<TOML
[sharing]
memory_breach = "kill"
memory_breach_grace = "3s"
[notify]
webhook_allow = ["127.0.0.1"]  # the test's receiver: loopback is refused unless listed
TOML

start_webhook_receiver
"$GPUFLEET" up --config "$WORK/gpufleet.toml" --gpus "nvml:$FAKENVML" --data-dir "$WORK/data" \
  --listen-socket "$GPUFLEET_SOCKET" --port -1 --node-name mb-node --sample-interval 1s \
  --kill-grace 2 >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" gf nodes
gf notify add --webhook "$HOOK_URL/hook" --all --events memory_breach >/dev/null
gf gpu mode mb-node 0 shared | grep -q "is shared" || fail "gpu mode 0 shared"

# Each job starts its GPU processes in the background, writes their pids, then waits on them;
# B goes on after its process ends.
run=$WORK/run; mkdir -p "$run"
a=$(submit --gpu-mem 10G -- sh -c \
  "sleep 300 & echo \$! >$run/a1; sleep 300 & echo \$! >$run/a2; wait")
b=$(submit --gpu-mem 10G -- sh -c \
  "sleep 300 & echo \$! >$run/b1; wait; echo survived >$run/b.out; sleep 300")
wait_for "jobs $a and $b to run" eval "state_is $a RUNNING && state_is $b RUNNING"
wait_for "the jobs' pids" eval "test -s $run/a2 && test -s $run/b1"
for id in "$a" "$b"; do
  [ "$(job_field "$id" 'gpu_uuids[0]')" = "$GPU0" ] || fail "job $id not on GPU 0: $(gf show "$id")"
  [ "$(job_field "$id" alloc_gpu_mem_mib)" = 10240 ] || fail "job $id limit: $(gf show --json "$id" | jq .alloc_gpu_mem_mib)"
done
a1=$(cat "$run/a1"); a2=$(cat "$run/a2"); b1=$(cat "$run/b1")
write_scenario "[{\"pid\": $a1, \"used_memory_mib\": 13000}, {\"pid\": $a2, \"used_memory_mib\": 12000},
                 {\"pid\": $b1, \"used_memory_mib\": 11000}]"

# 1. Job A: its largest process is killed, then the job is stopped after the grace.
wait_for "job $a's process $a1 killed" eval "! pid_running $a1"
wait_for "job $a to end FAILED" state_is "$a" FAILED
events=$(gf show "$a")
for want in "uses 25000 MiB on GPU 0 of node mb-node, over its limit of 10240 MiB" \
            "killed its process $a1" \
            "still over its GPU memory limit 3s after its largest process was killed"; do
  grep -qF "$want" <<<"$events" || fail "job $a events lack '$want': $events"
done
ok "job $a: process $a1 (13000 MiB) killed; still over with $a2, stopped after 3s: FAILED"

# 2. Job B: its process is killed, the breach clears, the job goes on.
wait_for "job $b's process $b1 killed" eval "! pid_running $b1"
wait_for "job $b to go on" test -s "$run/b.out"
wait_for "job $b's breach to clear" eval "gf show $b | grep -q 'gpu_memory_over_limit cleared'"
sleep 4  # past the grace
state_is "$b" RUNNING || fail "job $b stopped although its breach cleared: $(gf show "$b")"
gf show "$b" | grep -qF "killed its process $b1" || fail "job $b events: $(gf show "$b")"
ok "job $b: process $b1 (11000 MiB) killed, breach cleared, the job runs on"

# 3. Notifications.
for id in "$a" "$b"; do
  wait_for "memory_breach notification for job $id" hook_with \
    ".kind == \"memory_breach\" and .job == $id"
done
ok "memory_breach sent for jobs $a and $b"
gf cancel "$b" >/dev/null
