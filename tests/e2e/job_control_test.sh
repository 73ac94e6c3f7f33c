#!/usr/bin/env bash
# Job control as a Slurm user does it (issue #24), each row of docs/slurm.md's command map:
# `gpufleet hold`/`release` (scontrol hold/release; an array task ID_INDEX, --array), the hold
# kept across a restart; `gpufleet requeue` (scontrol requeue) of a running job, refused for a
# --no-requeue one; `gpufleet update` (scontrol update) of a pending job; `gpufleet cancel` by
# filter (scancel -u -t -n -A); `gpufleet cancel --signal` (scancel --signal) of a running job that
# traps the signal and runs on. With root, a second user: an administrator's hold its owner
# cannot release, and others' jobs out of reach (cancel and signal alike).
source "$(dirname "$0")/lib.sh"

start_up  # 4 simulated GPUs

reason_is() { [ "$(job_field "$1" reason)" = "$2" ]; }
# A job on every GPU until $WORK/$1 exists, so that what is submitted after it waits.
block() {
  local id
  id=$(submit --gpus 4 --name blocker -- sh -c "while [ ! -e $WORK/$1 ]; do sleep 0.05; done")
  wait_for "the blocker to run" state_is "$id" RUNNING
  echo "$id"
}

# ---- hold / release (scontrol hold / release), across a restart
blocker=$(block free-1)
held=$(submit --gpus 1 --name held -- true)
[ "$(gf hold "$held")" = "Job $held: held (state PENDING)" ] || fail "hold said: $(gf hold "$held")"
touch "$WORK/free-1"
wait_for "the blocker to end" state_is "$blocker" COMPLETED
wait_for "the hold's reason" reason_is "$held" "held by root: gpufleet release $held"
[ "$(job_field "$held" reason_code)" = held ] || fail "reason_code $(job_field "$held" reason_code)"
gf queue | grep -q "held by root: gpufleet release $held" || fail "queue: $(gf queue)"
state_is "$held" PENDING || fail "a held job left PENDING with every GPU free"
stop_up_hard
start_up
wait_for "the hold's reason after a restart" reason_is "$held" "held by root: gpufleet release $held"
[ "$(job_field "$held" held_by)" = root ] || fail "held_by after a restart: $(job_field "$held" held_by)"
gf release "$held" | grep -q "Job $held: released" || fail "release"
wait_for "the released job to complete" state_is "$held" COMPLETED
refused 1 "is COMPLETED, not PENDING" gf hold "$held"
refused 1 "is COMPLETED, not PENDING" gf release "$held"
ok "hold kept job $held pending on free GPUs, across a restart; release ran it"

# ---- an array task (ID_INDEX) and a whole array's pending tasks (--array)
blocker=$(block free-2)
arr=$(gf submit --gpus 1 --array 0-2 -- true | sed -n 's/^Submitted array job \([0-9]*\) .*/\1/p')
[ -n "$arr" ] || fail "no array submitted"
gf hold "${arr}_1" | grep -q "Job ${arr}_1: held" || fail "hold ${arr}_1"
[ "$(job_field "$((arr + 1))" held_by)" = root ] || fail "task 1 not held"
[ "$(job_field "$arr" held_by)" = null ] || fail "task 0 held with task 1"
[ "$(gf hold --array "$arr" | grep -c ": held")" = 3 ] || fail "hold --array $arr"
touch "$WORK/free-2"
wait_for "the blocker to end" state_is "$blocker" COMPLETED
wait_for "task 2's hold reason" reason_is "$((arr + 2))" "held by root: gpufleet release $((arr + 2))"
gf release --array "$arr" >/dev/null
for i in 0 1 2; do wait_for "task $i to complete" state_is "$((arr + i))" COMPLETED; done
ok "hold ${arr}_1 and hold --array $arr held the tasks; release --array ran them"

# ---- requeue (scontrol requeue): stopped, back in the queue at its place, run again
runs=$WORK/runs
rq=$(submit --gpus 1 --name rq -- sh -c "echo run >> $runs; while [ ! -e $WORK/stop-rq ]; do sleep 0.05; done")
wait_for "job $rq to run" state_is "$rq" RUNNING
submitted=$(job_field "$rq" submit_time_ms)
gf requeue "$rq" | grep -q "Job $rq: requeued" || fail "requeue"
wait_for "job $rq to run a second time" sh -c "[ \$(wc -l < $runs) = 2 ]"
wait_for "job $rq to be running again" state_is "$rq" RUNNING
[ "$(job_field "$rq" submit_time_ms)" = "$submitted" ] || fail "requeue moved its place"
gf show "$rq" | grep -q "requeue by root" || fail "show has no requeue event: $(gf show "$rq")"
touch "$WORK/stop-rq"
wait_for "job $rq to complete" state_is "$rq" COMPLETED
once=$(submit --gpus 1 --no-requeue -- sh -c "while [ ! -e $WORK/stop-once ]; do sleep 0.05; done")
wait_for "job $once to run" state_is "$once" RUNNING
refused 1 "was submitted with --no-requeue" gf requeue "$once"
touch "$WORK/stop-once"
wait_for "job $once to complete" state_is "$once" COMPLETED
refused 1 "not RUNNING" gf requeue "$rq"
ok "requeue ran job $rq again at its place; a --no-requeue job is refused"

# ---- update (scontrol update) of a pending job
blocker=$(block free-3)
up=$(submit --gpus 1 --name small -- true)
gf update "$up" --gpus 2 --time 2h --class low --name big | grep -q "Job $up updated: name big" ||
  fail "update"
[ "$(gf show --json "$up" | jq -c '[.gpus, .time_limit_s, .priority, .name]')" = '[2,7200,"low","big"]' ] ||
  fail "after update: $(gf show --json "$up" | jq -c '[.gpus, .time_limit_s, .priority, .name]')"
refused 2 "gpus" gf update "$up" --gpus 5
refused 2 "urgent" gf update "$up" --class urgent
refused 2 "nothing to change" gf update "$up"
refused 1 "is RUNNING, not PENDING" gf update "$blocker" --name x
ok "update changed job $up (2 GPUs, 2h, class low, name big); bad values and a running job refused"

# ---- cancel by filter (scancel -n -t -u)
s1=$(submit --gpus 1 --name sweep -- true)
s2=$(submit --gpus 1 --name sweep -- true)
refused 2 "give job ids, or filters" gf cancel
[ "$(gf cancel --name sweep -t PD)" = "Cancelled 2 jobs: $s1, $s2" ] || fail "cancel --name sweep"
state_is "$s1" CANCELLED && state_is "$s2" CANCELLED || fail "the sweep is not cancelled"
state_is "$up" PENDING || fail "cancel --name sweep took job $up"
[ "$(gf cancel -u root -t R)" = "Cancelled 1 job: $blocker" ] || fail "cancel -u root -t R"
wait_for "the blocker to be cancelled" state_is "$blocker" CANCELLED
[ "$(gf cancel --name nosuch)" = "No job matched: nothing cancelled" ] || fail "cancel nosuch"
ok "cancel --name sweep -t PD and -u root -t R cancelled what they name, and said how many"

# ---- cancel --signal (scancel --signal): the job traps USR1 and runs on; a cancel then ends it
marker=$WORK/usr1
sig=$(submit --gpus 1 --name trapper -- sh -c "trap 'echo usr1 >> $marker' USR1; while [ ! -e $WORK/stop-sig ]; do sleep 0.05; done")
wait_for "job $sig to run" state_is "$sig" RUNNING
said=$(gf cancel --signal USR1 "$sig")
[ "$said" = "Sent SIGUSR1 to job $sig (state RUNNING)" ] || fail "cancel --signal USR1: $said"
wait_for "job $sig's trap to write its marker" test -s "$marker"
state_is "$sig" RUNNING || fail "--signal USR1 ended job $sig: $(gf show "$sig")"
gf show "$sig" | grep -q "signal (root): SIGUSR1 sent by root" || fail "no signal event: $(gf show "$sig")"
refused 2 "--signal: 'FOO' is not a signal; use a name such as USR1" gf cancel --signal FOO "$sig"
refused 2 "KILL would end the job" gf cancel -s KILL "$sig"
pend=$(submit --gpus 1 --name trapper --after "$sig" -- true)
refused 1 "job $pend is pending: --signal reaches running jobs only" gf cancel --signal USR1 "$pend"
said=$(gf cancel -s SIGUSR1 --name trapper)
[ "$said" = "Sent SIGUSR1 to 1 job: $sig
Skipped 1 job not running: $pend (PENDING) (--signal reaches running jobs only)" ] ||
  fail "cancel -s SIGUSR1 --name trapper: $said"
wait_for "the second USR1 in job $sig" sh -c "[ \$(wc -l < $marker) = 2 ]"
state_is "$sig" RUNNING || fail "the second signal ended job $sig"
gf cancel "$sig" >/dev/null
wait_for "job $sig to be cancelled" state_is "$sig" CANCELLED
wait_for "job $pend to run after it" state_is "$pend" COMPLETED
ok "cancel --signal USR1 reached job $sig's trap twice (by id, by --name) and it ran on; a pending job refused; cancel ended it"

# ---- another user: an administrator's hold, and others' jobs out of reach
other_user || exit 0
blocker=$(block free-4)
theirs=$(as_other submit --json --gpus 1 --workdir /tmp -- true | jq -r .id)
as_other hold "$theirs" | grep -q "held" || fail "the owner's hold"
gf hold "$theirs" >/dev/null  # root's hold replaces the owner's
[ "$(job_field "$theirs" held_by)" = root ] || fail "root's hold: $(job_field "$theirs" held_by)"
refused 1 "an administrator's hold" as_other release "$theirs"
refused 1 "not found" as_other hold "$blocker"
refused 1 "not found" as_other requeue "$blocker"
[ "$(as_other cancel -u root)" = "No job matched: nothing cancelled" ] || fail "cancel -u root by $other"
refused 1 "not found" as_other cancel --signal USR1 "$blocker"
[ "$(as_other cancel -s USR1 -u root)" = "No job matched: no signal sent" ] || fail "cancel -s USR1 -u root by $other"
state_is "$blocker" RUNNING || fail "another user's cancel reached root's job"
gf release "$theirs" >/dev/null
touch "$WORK/free-4"
wait_for "their job to complete" state_is "$theirs" COMPLETED
ok "root's hold of $other's job is released only by root; root's jobs are out of $other's reach"
