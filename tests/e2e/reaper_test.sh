#!/usr/bin/env bash
# The idle reaper end to end on the stand-in NVML library (tests/fakenvml): a job whose GPU runs
# its process at 0 % with no memory change is warned, then requeued with the cause in
# `gpufleet show`; a busy job next to it is left alone. Also: --no-reap is refused where the
# class does not allow it and accepted (from a #GPUFLEET line) where it does; --interactive
# shows. The owner's webhook (a receiver started here) gets the warning and the reaping.
# Thresholds are seconds here; the scenario file is rewritten as the jobs start. The idle
# threshold (20 s) leaves the test's setup (starting both jobs, reading their pids: many CLI
# calls, seconds each on a loaded machine) time to show the busy job's work first.
source "$(dirname "$0")/lib.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
SCENARIO=$WORK/scenario.json
export GF_FAKENVML_SCENARIO=$SCENARIO

cat >"$WORK/gpufleet.toml" <<'TOML'
[class.normal]
idle_after = "20s"
idle_grace = "5s"
idle_util_below = 5
idle_action = "requeue"

[class.high]
idle_opt_out = true

[notify]
webhook_allow = ["127.0.0.1"]  # the test's receiver: loopback is refused unless listed
TOML

# write_scenario IDLE_PID IDLE_UUID BUSY_PID BUSY_UUID: two GPUs; the idle job's process sits
# at 0 % with constant memory, the busy job's runs at 90 %. Renamed into place atomically.
write_scenario() {
  local devices="" uuid procs util
  for uuid in GPU-e2e-0 GPU-e2e-1; do
    procs="[]" util=0
    [ "$uuid" = "$2" ] && procs="[{\"pid\": $1, \"used_memory_mib\": 3000}]"
    [ "$uuid" = "$4" ] && procs="[{\"pid\": $3, \"used_memory_mib\": 3000}]" util=90
    devices+="${devices:+,}{\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"$uuid\",
      \"memory_total_mib\": 81559, \"memory_used_mib\": 3100, \"util_gpu\": $util,
      \"temperature_c\": 40, \"power_mw\": 100000, \"energy_mj\": 1000, \"processes\": $procs}"
  done
  echo "{\"driver_version\": \"550.54.15\", \"devices\": [$devices]}" >"$SCENARIO.tmp"
  mv "$SCENARIO.tmp" "$SCENARIO"
}
write_scenario 0 none 0 none

"$GPUFLEET" up --config "$WORK/gpufleet.toml" --gpus "nvml:$FAKENVML" --data-dir "$WORK/data" \
  --listen-socket "$GPUFLEET_SOCKET" --port -1 --node-name reap-node --sample-interval 1s \
  --kill-grace 2 >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" gf nodes
start_webhook_receiver
gf notify add --webhook "$HOOK_URL/mine" --events idle_warning,preempted >/dev/null

job_pid() { cut -d" " -f1 "$WORK/data/jobs/$1/job.pid" 2>/dev/null; }
has_pid() { [ -n "$(job_pid "$1")" ]; }
events_of() { gf show "$1" | sed -n '/^Events/,$p'; }
has_event() { events_of "$1" | grep -q "  $2 (reaper): "; }

# 1. Two jobs: `idle` holds its GPU and does nothing, `busy` computes.
idle=$(submit --gpus 1 --name idle -- sleep 300)
busy=$(submit --gpus 1 --name busy -- sleep 300)
for id in "$idle" "$busy"; do
  wait_for "job $id to run" state_is "$id" RUNNING
  wait_for "job $id's pid" has_pid "$id"
done
write_scenario "$(job_pid "$idle")" "$(job_field "$idle" 'gpu_uuids[0]')" \
  "$(job_pid "$busy")" "$(job_field "$busy" 'gpu_uuids[0]')"

# 2. Warned after 20 s idle, with the GPUs and the threshold; requeued 5 s later.
wait_for "the idle warning of job $idle" has_event "$idle" idle_warning
events_of "$idle" | grep -q "idle_warning (reaper): GPU [01] on reap-node idle for 2[0-9]s" ||
  fail "warning: $(events_of "$idle")"
events_of "$idle" | grep -q "requeued in 5s unless they are used" || fail "warning: $(events_of "$idle")"
ok "job $idle warned: $(events_of "$idle" | grep idle_warning | head -1 | cut -c1-140)"
wait_for "job $idle to be reaped" has_event "$idle" idle_reap
reaped_again() { events_of "$idle" | grep -q "PREEMPTED -> PENDING.*requeued after idle reaping: GPU"; }
wait_for "job $idle to be requeued with the cause" reaped_again
gf show "$idle" | grep -q "idle_reap (reaper): idle reaping: GPU [01] on reap-node idle for" ||
  fail "reap event: $(gf show "$idle")"
wait_for "job $idle to run again" state_is "$idle" RUNNING
ok "job $idle requeued after idle reaping, cause in gpufleet show, and started again"
wait_for "idle_warning of job $idle at the webhook" hook_with \
  ".kind == \"idle_warning\" and .job == $idle and (.message | test(\"idle for\"))"
wait_for "the reaping of job $idle at the webhook" hook_with \
  ".kind == \"preempted\" and .job == $idle and (.subject | test(\"stayed idle\"))"
ok "the owner's webhook got idle_warning and preempted for job $idle"

# 3. The busy job ran all along (longer than the threshold and grace) without a warning.
state_is "$busy" RUNNING || fail "busy job $busy: $(gf show "$busy")"
if events_of "$busy" | grep -q idle_; then fail "busy job warned: $(events_of "$busy")"; fi
ok "busy job $busy left alone"

# 4. --no-reap: refused in class normal, naming the flag, the class and the fix; allowed in
#    class high (idle_opt_out) from a #GPUFLEET line. --interactive shows in `show`.
if gf submit --no-reap -- sleep 1 >"$WORK/out" 2>&1; then fail "--no-reap accepted in class normal"; fi
grep -q "no-reap: class 'normal' does not let its jobs opt out of idle reaping" "$WORK/out" ||
  fail "refusal: $(cat "$WORK/out")"
grep -q "idle_opt_out = true" "$WORK/out" || fail "refusal without the fix: $(cat "$WORK/out")"
printf '#!/bin/sh\n#GPUFLEET --priority high --no-reap --gpus 0\nsleep 300\n' >"$WORK/job.sh"
chmod +x "$WORK/job.sh"
exempt=$(submit "$WORK/job.sh")
[ "$(job_field "$exempt" idle_reap)" = false ] || fail "directive --no-reap: $(gf show --json "$exempt")"
gf show "$exempt" | grep -q "Idle reaper exempt (--no-reap)" || fail "show: $(gf show "$exempt")"
session=$(submit --interactive --gpus 0 -- sleep 300)
gf show "$session" | grep -q "Idle reaper interactive (--interactive)" || fail "show: $(gf show "$session")"
ok "--no-reap refused in class normal, accepted in class high from a #GPUFLEET line; --interactive shown"
