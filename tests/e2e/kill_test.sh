#!/usr/bin/env bash
# Cancel and time limits leave no process of the job alive, background children included.
source "$(dirname "$0")/lib.sh"
start_up

check_gone() {  # every pid in file $1 is gone
  for p in $(cat "$1"); do
    wait_for "process $p to end" sh -c "! [ -d /proc/$p ] || [ \"\$(sed 's/.*) //' /proc/$p/stat | cut -c1)\" = Z ]"
  done
}

pids=$WORK/cancel.pids
id=$(submit --gpus 1 -- sh -c "sleep 300 & echo \$! >$pids; setsid sleep 300 & echo \$! >>$pids; wait")
wait_for "job $id to run" state_is "$id" RUNNING
wait_for "its children" sh -c "[ \$(wc -l <$pids) = 2 ]"
for p in $(cat "$pids"); do pid_running "$p" || fail "child $p not running before cancel"; done
gf cancel "$id"
wait_for "job $id cancelled" state_is "$id" CANCELLED
check_gone "$pids"
ok "cancel ended the job and its children ($(tr '\n' ' ' <"$pids"))"

pids=$WORK/timeout.pids
id=$(submit --gpus 1 --time 3s -- sh -c "trap '' TERM; sleep 300 & echo \$! >$pids; while :; do sleep 1; done")
wait_for "job $id to run" state_is "$id" RUNNING
wait_for "job $id to time out" state_is "$id" TIMEOUT
check_gone "$pids"
job_field "$id" reason | grep -q "time limit 3s reached" || fail "timeout reason: $(job_field "$id" reason)"
ok "time limit: TERM-ignoring job killed, state TIMEOUT: $(job_field "$id" reason)"

id=$(submit --gpus 4 -- true)
blocked=$(submit --gpus 4 -- true)
gf cancel "$blocked" >/dev/null || true
wait_for "job $id" state_is "$id" COMPLETED
ok "cancel of a pending job"
