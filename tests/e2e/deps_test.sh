#!/usr/bin/env bash
# Dependencies and job arrays (issue #4): `--after JOB` starts only once JOB has ended;
# `--after JOB:ok` is cancelled, with the cause, when JOB fails; `--array 0-5%2` never has more
# than 2 tasks running at once, and each task sees GPUFLEET_ARRAY_JOB_ID / _TASK_ID;
# `cancel --array` ends every task of an array.
source "$(dirname "$0")/lib.sh"

# Not grep -q: it would stop reading at the first match, and the help's later writes would end
# gpufleet with SIGPIPE, which pipefail reports as a failure.
start_up  # 4 simulated GPUs

reason_is() { [ "$(job_field "$1" reason)" = "$2" ]; }

# ---- --after: A runs until released, then fails (exit 1).
a=$(submit --gpus 1 -- sh -c "while [ ! -e $WORK/release-a ]; do sleep 0.05; done; exit 1")
wait_for "A to run" state_is "$a" RUNNING
b=$(submit --gpus 1 --after "$a" -- sh -c "touch $WORK/b-ran")
c=$(submit --gpus 1 --after "$a:ok" -- sh -c "touch $WORK/c-ran")
wait_for "B to wait for A" reason_is "$b" "waiting for job $a to end"
wait_for "C to wait for A's success" reason_is "$c" "waiting for job $a to complete successfully"
state_is "$b" PENDING || fail "B left PENDING while A runs (3 GPUs are free, but it must wait)"
gf queue | grep -q "waiting for job $a to end" || fail "queue does not show B's reason"
ok "jobs $b (--after $a) and $c (--after $a:ok) wait while $a runs"

touch "$WORK/release-a"
wait_for "A to fail" state_is "$a" FAILED
wait_for "B to complete" state_is "$b" COMPLETED
[ -e "$WORK/b-ran" ] || fail "B completed without running"
[ "$(job_field "$a" end_time_ms)" -le "$(job_field "$b" start_time_ms)" ] ||
  fail "B started before A ended"
wait_for "C to be cancelled" state_is "$c" CANCELLED
[ "$(job_field "$c" reason)" = "dependency job $a failed (exit 1)" ] ||
  fail "C's cause: $(job_field "$c" reason)"
[ ! -e "$WORK/c-ran" ] || fail "C ran although A failed"
gf show "$c" | grep -q "After       $a (ok)" || fail "show does not list C's dependency"
ok "B ran after A ended; C was cancelled: dependency job $a failed (exit 1)"

set +e
err=$(gf submit --after 99999 -- true 2>&1); rc=$?
set -e
[ "$rc" = 2 ] || fail "a missing dependency: exit $rc, want 2"
echo "$err" | grep -q "after: job 99999 does not exist" || fail "error: $err"
set +e
err=$(gf submit --array 0-5%0 -- true 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && echo "$err" | grep -q -- "--array: '%0'" || fail "bad --array: exit $rc: $err"
ok "a missing dependency and a bad --array are refused, naming the option"

# ---- --array 0-5%2: each task logs its start and end in one file (appends are atomic) and
# holds until released, so the throttle can be seen at work.
out=$(gf submit --gpus 1 --array 0-5%2 -- sh -c "
  echo \"start \$GPUFLEET_ARRAY_TASK_ID\" >> $WORK/array.log
  echo \"\$GPUFLEET_ARRAY_JOB_ID \$GPUFLEET_JOB_ID\" > $WORK/task-\$GPUFLEET_ARRAY_TASK_ID
  while [ ! -e $WORK/release-array ]; do sleep 0.05; done
  sleep 0.2
  echo \"end \$GPUFLEET_ARRAY_TASK_ID\" >> $WORK/array.log")
arr=$(echo "$out" | sed -n 's/^Submitted array job \([0-9]*\) (6 tasks: jobs .*/\1/p')
[ -n "$arr" ] || fail "submit said: $out"
[ "$out" = "Submitted array job $arr (6 tasks: jobs $arr-$((arr + 5)))" ] || fail "submit said: $out"
wait_for "two tasks to run" state_is "$((arr + 1))" RUNNING
wait_for "task 2 to be throttled" reason_is "$((arr + 2))" "array $arr: 2 tasks running, limit 2"
state_is "$((arr + 5))" PENDING || fail "task 5 is not pending"
gf queue | grep -q "${arr}_3" || fail "queue does not name task ${arr}_3: $(gf queue)"
# The task id queue prints is taken wherever a job id is (issue #24).
[ "$(gf show --json "${arr}_3" | jq -r .id)" = "$((arr + 3))" ] || fail "show ${arr}_3: $(gf show "${arr}_3" 2>&1)"
explained=$(gf explain "${arr}_3" 2>&1 || true)  # throttled: explain says why, of job arr+3
echo "$explained" | grep -q "job $((arr + 3))" || fail "explain ${arr}_3: $explained"
gf show "${arr}_9" >/dev/null 2>"$WORK/no-task" && fail "show ${arr}_9 found a task the array lacks"
grep -q "array $arr has no task of index 9" "$WORK/no-task" || fail "show ${arr}_9: $(cat "$WORK/no-task")"
ok "array $arr: tasks 0 and 1 run, the others wait (array $arr: 2 tasks running, limit 2)"

touch "$WORK/release-array"
for i in 0 1 2 3 4 5; do
  wait_for "task $i to complete" state_is "$((arr + i))" COMPLETED
  [ "$(cat "$WORK/task-$i")" = "$arr $((arr + i))" ] ||
    fail "task $i saw GPUFLEET_ARRAY_JOB_ID GPUFLEET_JOB_ID = $(cat "$WORK/task-$i")"
done
max=$(awk '$1 == "start" {n++} $1 == "end" {n--} n > max {max = n} END {print max}' "$WORK/array.log")
[ "$max" = 2 ] || fail "$max tasks ran at once (limit 2): $(cat "$WORK/array.log")"
ok "every task saw its index; never more than 2 ran at once"
gf logs "${arr}_4" 2>&1 | grep -q "job ${arr}_4 has written nothing" || fail "logs ${arr}_4: $(gf logs "${arr}_4" 2>&1)"

# ---- cancel: one task, then the whole array.
arr2=$(submit --gpus 1 --array 0-2%1 -- sh -c "while [ ! -e $WORK/never ]; do sleep 0.05; done")
wait_for "the first task to run" state_is "$arr2" RUNNING
gf cancel "${arr2}_2" >/dev/null
wait_for "task 2 cancelled" state_is "$((arr2 + 2))" CANCELLED
state_is "$((arr2 + 1))" PENDING || fail "cancelling one task touched another"
out=$(gf cancel "$arr2")
echo "$out" | grep -q "gpufleet cancel --array $arr2" || fail "no hint for the whole array: $out"
wait_for "task 0 cancelled" state_is "$arr2" CANCELLED
wait_for "task 1 to run" state_is "$((arr2 + 1))" RUNNING
out=$(gf cancel --array "$arr2")
[ "$out" = "Cancel of array $arr2 requested (1 task)" ] || fail "cancel --array said: $out"
wait_for "task 1 cancelled" state_is "$((arr2 + 1))" CANCELLED
ok "cancel JOB cancels one task (with a hint); cancel --array $arr2 cancels what is left"

# ---- #GPUFLEET directives carry --array and --after too.
cat >"$WORK/job.sh" <<SCRIPT
#!/bin/sh
#GPUFLEET --gpus=0 --array=1,3 --after=$b
echo "\$GPUFLEET_ARRAY_TASK_ID" > $WORK/directive-\$GPUFLEET_ARRAY_TASK_ID
SCRIPT
chmod +x "$WORK/job.sh"
d=$(submit "$WORK/job.sh")
wait_for "directive task 1" state_is "$d" COMPLETED
wait_for "directive task 3" state_is "$((d + 1))" COMPLETED
[ -e "$WORK/directive-1" ] && [ -e "$WORK/directive-3" ] || fail "directive array tasks did not run"
[ "$(job_field "$d" 'after[0].job')" = "$b" ] || fail "directive --after lost"
ok "#GPUFLEET --array=1,3 --after=$b submitted tasks 1 and 3"
