#!/usr/bin/env bash
# A job keeps running across kill -9 and restart of gpufleet up, and ends COMPLETED.
source "$(dirname "$0")/lib.sh"
start_up

go=$WORK/go
id=$(submit --gpus 1 -- sh -c "echo before; while [ ! -e $go ]; do sleep 0.05; done; echo after")
wait_for "job $id to run" state_is "$id" RUNNING
wait_for "first output" sh -c "$GPUFLEET logs $id | grep -q before"
shim=$(cat "$WORK"/data/jobs/"$id"/shim.pid | tr -dc '0-9 ' | cut -d' ' -f1)
stop_up_hard
pid_running "$shim" || fail "the job's supervisor died with gpufleet up"
touch "$go"  # the job finishes while no gpufleet is watching
start_up
wait_for "job $id to complete after restart" state_is "$id" COMPLETED
[ "$(gf logs "$id")" = "$(printf 'before\nafter')" ] || fail "log: $(gf logs "$id")"
ok "job $id survived kill -9 of gpufleet up and ended COMPLETED"

go2=$WORK/go2
id2=$(submit --gpus 1 -- sh -c "while [ ! -e $go2 ]; do sleep 0.05; done")
wait_for "job $id2 to run" state_is "$id2" RUNNING
stop_up_hard
start_up
state_is "$id2" RUNNING || fail "job $id2 not RUNNING after restart: $(job_state "$id2")"
touch "$go2"
wait_for "job $id2 to complete" state_is "$id2" COMPLETED
id3=$(submit --gpus 0 -- true)
[ "$id3" -gt "$id2" ] || fail "job ids went backwards after restart"
ok "re-attached to running job $id2; ids keep increasing"
