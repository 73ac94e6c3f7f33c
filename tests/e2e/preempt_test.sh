#!/usr/bin/env bash
# Preemption of real processes (issue #4): on a full node a high-priority job stops low-priority
# work with the victim's checkpoint signal; the victim is requeued at its place, with the cause
# shown, and runs again once the high job is done. Stock classes: high may preempt low.
source "$(dirname "$0")/lib.sh"

# The stock minimum run time (10 minutes) would keep the fresh low job from being preempted.
cat >"$WORK/policy.toml" <<TOML
[scheduler]
min_run_time = "0s"
TOML
"$GPUFLEET" up --config "$WORK/policy.toml" --gpus sim:2xH100-80GB --data-dir "$WORK/data" \
  --listen-socket "$GPUFLEET_SOCKET" --port 0 --kill-grace 5 --node-name e2e-node \
  >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" "$GPUFLEET" nodes

# The low job counts its runs; on USR1 it saves a checkpoint and exits (as a trainer would).
low=$(submit --gpus 2 --priority low --checkpoint-signal USR1 -- sh -c \
  "echo run >> $WORK/runs; trap 'echo saved > $WORK/checkpoint; exit 0' USR1;
   while [ ! -e $WORK/release-low ]; do sleep 0.05; done")
wait_for "low job to run" state_is "$low" RUNNING
wait_for "low job's first run" test -s "$WORK/runs"
[ "$(job_field "$low" checkpoint_signal)" = USR1 ] || fail "checkpoint signal not stored"

high=$(submit --gpus 2 --priority high -- sh -c \
  "while [ ! -e $WORK/release-high ]; do sleep 0.05; done")
wait_for "the low job's checkpoint (USR1 received)" test -s "$WORK/checkpoint"
wait_for "low job requeued" state_is "$low" PENDING
wait_for "high job to run" state_is "$high" RUNNING
gf show "$low" >"$WORK/show"
grep -q "requeued after preemption (preempted for job $high" "$WORK/show" ||
  fail "the cause is not shown: $(cat "$WORK/show")"
grep -q "high priority beats low" "$WORK/show" || fail "no rule in: $(cat "$WORK/show")"
[ "$(job_field "$low" node)" = null ] || fail "the requeued job kept its allocation"
gf queue
ok "high job $high preempted low job $low with SIGUSR1; low requeued with the cause shown"

touch "$WORK/release-high"
wait_for "high job to end" state_is "$high" COMPLETED
wait_for "low job to run again" state_is "$low" RUNNING
wait_for "low job's second run" sh -c "[ \$(wc -l < $WORK/runs) -eq 2 ]"
touch "$WORK/release-low"
wait_for "low job to complete" state_is "$low" COMPLETED
[ "$(job_field "$high" end_time_ms)" -le "$(job_field "$low" start_time_ms)" ] ||
  fail "the low job restarted before the high job ended"
ok "low job $low ran again after the high job ended and completed"
