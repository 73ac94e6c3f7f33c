#!/usr/bin/env bash
# Submitting: GPUs in CUDA_VISIBLE_DEVICES, logs, exit codes, script directives.
source "$(dirname "$0")/lib.sh"
start_up

id=$(submit --gpus 2 -- sh -c 'echo $CUDA_VISIBLE_DEVICES; echo GPUFLEET_JOB_ID=$GPUFLEET_JOB_ID; echo oops >&2')
wait_for "job $id to complete" state_is "$id" COMPLETED
out=$(gf logs "$id")
visible=$(echo "$out" | head -n1)
[ "$(echo "$visible" | tr ',' '\n' | wc -l)" = 2 ] || fail "CUDA_VISIBLE_DEVICES='$visible', want two UUIDs"
alloc=$(gf show --json "$id" | jq -r '.gpu_uuids | join(",")')
[ "$visible" = "$alloc" ] || fail "CUDA_VISIBLE_DEVICES '$visible' != allocation '$alloc'"
for uuid in $(echo "$visible" | tr ',' ' '); do
  gf gpus --json | jq -e --arg u "$uuid" '.gpus[] | select(.uuid == $u)' >/dev/null ||
    fail "$uuid is not a GPU of this node"
done
echo "$out" | grep -qx "GPUFLEET_JOB_ID=$id" || fail "GPUFLEET_JOB_ID missing: $out"
[ "$(gf logs --stderr "$id")" = "oops" ] || fail "stderr log wrong"
[ "$(gf logs -e "$id")" = "oops" ] || fail "logs -e is not standard error alone"
[ "$(gf logs --stdout "$id" | tail -n1)" = "GPUFLEET_JOB_ID=$id" ] || fail "logs --stdout: $(gf logs --stdout "$id")"
[ "$(echo "$out" | tail -n1)" = "oops" ] || fail "logs merges no standard error: $out"
[ "$(job_field "$id" exit_code)" = 0 ] || fail "exit code of a successful job"
ok "two UUIDs in CUDA_VISIBLE_DEVICES ($visible), logs and exit code 0"

id=$(submit --gpus 0 -- sh -c 'exit 3')
wait_for "job $id to fail" state_is "$id" FAILED
[ "$(job_field "$id" exit_code)" = 3 ] || fail "exit code 3 not recorded"
ok "exit 3 -> FAILED with exit code 3"

# A failed job whose traceback went to standard error alone: plain `logs` shows it, and
# --stdout says where the output is instead of printing nothing.
id=$(submit --gpus 0 -- sh -c 'echo "Traceback: boom" >&2; exit 1')
wait_for "job $id to fail" state_is "$id" FAILED
[ "$(gf logs "$id" 2>/dev/null)" = "Traceback: boom" ] || fail "logs of a failed job: '$(gf logs "$id" 2>&1)'"
note=$(gf logs --stdout "$id" 2>&1 >/dev/null)
echo "$note" | grep -q "nothing to standard output.*gpufleet logs --stderr $id" || fail "empty stdout note: '$note'"
[ -z "$(gf logs --stdout "$id" 2>/dev/null)" ] || fail "logs --stdout printed output of an empty stream"
ok "logs of a failed job show its standard error; --stdout notes where it is: $note"

id=$(submit --gpus 0 -- /no/such/program)
wait_for "job $id to fail" state_is "$id" FAILED
[ "$(job_field "$id" exit_code)" = 127 ] || fail "missing program: exit code $(job_field "$id" exit_code)"
ok "missing program -> FAILED 127: $(job_field "$id" reason)"

script=$WORK/job.sh
printf '#!/bin/sh\n#GPUFLEET --gpus=3 --time=10m --no-requeue --checkpoint-signal=USR1\n#GPUFLEET --name directive-job\necho "args: $*"\n' >"$script"
id=$(submit --name from-cli "$script" one two)
wait_for "script job $id" state_is "$id" COMPLETED
[ "$(gf show --json "$id" | jq '.gpu_uuids | length')" = 3 ] || fail "#GPUFLEET --gpus=3 ignored"
[ "$(job_field "$id" name)" = from-cli ] || fail "command line should override #GPUFLEET --name"
[ "$(job_field "$id" time_limit_s)" = 600 ] || fail "#GPUFLEET --time=10m ignored"
[ "$(job_field "$id" requeue)" = false ] || fail "#GPUFLEET --no-requeue ignored"
[ "$(job_field "$id" checkpoint_signal)" = USR1 ] || fail "#GPUFLEET --checkpoint-signal=USR1 ignored"
[ "$(job_field "$(submit --requeue "$script")" requeue)" = true ] || fail "command line --requeue should override #GPUFLEET --no-requeue"
[ "$(gf logs "$id")" = "args: one two" ] || fail "script args: $(gf logs "$id")"
ok "script with #GPUFLEET directives"

# The README's form: a script in the current directory, named without a '/' (as sbatch takes it).
id=$(cd "$WORK" && submit job.sh --fast)
wait_for "bare-name script job $id" state_is "$id" COMPLETED
[ "$(job_field "$id" name)" = directive-job ] || fail "#GPUFLEET lines of ./job.sh ignored: name $(job_field "$id" name)"
[ "$(gf show --json "$id" | jq '.gpu_uuids | length')" = 3 ] || fail "#GPUFLEET --gpus=3 of ./job.sh ignored"
[ "$(gf logs "$id")" = "args: --fast" ] || fail "bare-name script: $(gf logs "$id")"
ok "gpufleet submit job.sh --fast runs ./job.sh with its directives"

# Issue #24: a drain's reason shows in `nodes`, and a job that waits for the drained node says so.
gf node drain e2e-node --reason "fan replacement" >/dev/null
gf nodes | grep -Eq "(draining|drained) .*fan replacement" || fail "nodes shows no drain reason: $(gf nodes)"
id=$(submit --gpus 1 -- true)
reason_names_drain() { job_field "$id" reason | grep -Eq "node e2e-node is (draining|drained): fan replacement"; }
wait_for "job $id to name the drain" reason_names_drain
ok "a drained node's reason in nodes and in the waiting job's reason: $(job_field "$id" reason)"
gf node resume e2e-node >/dev/null
wait_for "job $id to run after the resume" state_is "$id" COMPLETED

gf queue --all | grep -q "directive-job\|from-cli" || fail "queue --all misses finished jobs"
gf queue | grep -q COMPLETED && fail "queue without --all lists finished jobs"
ok "queue"
