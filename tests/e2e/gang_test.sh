#!/usr/bin/env bash
# Multi-node (gang) jobs on a real cluster: one `gpufleet server` and three agents of 2 simulated
# GPUs. `submit --nodes 2 --gpus 2` queues two member jobs that start together on two nodes,
# each with the gang's environment (rank, node list, master address). A gang that does not fit
# starts no member. When one member fails the other is cancelled; when one member's node dies
# the other is stopped too and the gang starts again whole on the nodes left. Cancelling the
# gang's id cancels every member. Bad --nodes values are refused with the field named.
source "$(dirname "$0")/lib.sh"

start_server --node-timeout 3s
gf node token create --output "$WORK/node.token" >/dev/null
for n in 1 2 3; do start_agent $n "$WORK/node.token"; done
nodes_up() { [ "$(gf nodes --json | jq '[.nodes[] | select(.state == "up")] | length')" = "$1" ]; }
wait_for "three nodes up" nodes_up 3

# Each member writes its environment to env.<job id> (under a run directory given per gang),
# then waits for `go`, or exits 3 if `fail.<job id>` appears.
member_cmd() {
  echo "env | grep ^GPUFLEET_ | sort > $1/env.\$GPUFLEET_JOB_ID; echo \$\$ > $1/pid.\$GPUFLEET_JOB_ID; while [ ! -e $1/go ]; do [ -e $1/fail.\$GPUFLEET_JOB_ID ] && exit 3; sleep 0.05; done"
}
env_of() { sed -n "s/^$2=//p" "$1"; }

run1=$WORK/run1; mkdir -p "$run1"
out=$(gf submit --nodes 2 --gpus 2 -- sh -c "$(member_cmd "$run1")")
g=$(echo "$out" | sed -n 's/^Submitted job \([0-9]*\) on 2 nodes (members: jobs [0-9]*-[0-9]*)$/\1/p')
[ -n "$g" ] || fail "submit --nodes 2 printed: $out"
m=$((g + 1))
both_running() { state_is "$1" RUNNING && state_is "$2" RUNNING; }
wait_for "gang $g running" both_running "$g" "$m"
n0=$(job_field "$g" node); n1=$(job_field "$m" node)
[ "$n0" != "$n1" ] || fail "both members of gang $g run on $n0"
[ "$(job_field "$m" gang_job)" = "$g" ] && [ "$(job_field "$m" gang_rank)" = 1 ] && [ "$(job_field "$m" nodes)" = 2 ] ||
  fail "member $m: $(gf show --json "$m" | jq -c '{gang_job, gang_rank, nodes}')"
gf show "$m" | grep -q "^Gang *node 2 of 2 of job $g (members: jobs $g-$m)" || fail "gpufleet show $m: $(gf show "$m")"
wait_for "both members' environments" test -s "$run1/env.$g" -a -s "$run1/env.$m"
for id in "$g" "$m"; do
  f=$run1/env.$id
  [ "$(env_of "$f" GPUFLEET_GANG_ID)" = "$g" ] || fail "job $id: $(cat "$f")"
  [ "$(env_of "$f" GPUFLEET_NUM_NODES)" = 2 ] || fail "job $id: $(cat "$f")"
  [ "$(env_of "$f" GPUFLEET_NODELIST)" = "$n0,$n1" ] || fail "job $id: nodelist $(env_of "$f" GPUFLEET_NODELIST), want $n0,$n1"
  [ "$(env_of "$f" GPUFLEET_MASTER_ADDR)" = "$n0" ] || fail "job $id: master $(env_of "$f" GPUFLEET_MASTER_ADDR), want $n0"
done
[ "$(env_of "$run1/env.$g" GPUFLEET_NODE_RANK)" = 0 ] && [ "$(env_of "$run1/env.$m" GPUFLEET_NODE_RANK)" = 1 ] ||
  fail "ranks: $(cat "$run1/env.$g" "$run1/env.$m")"
ok "gang $g: members $g on $n0 (rank 0) and $m on $n1 (rank 1), node list $n0,$n1, master $n0"

# All or nothing: a gang of 2 nodes x 2 GPUs while only one node is free starts no member.
run2=$WORK/run2; mkdir -p "$run2"
g2=$(submit --nodes 2 --gpus 2 -- sh -c "$(member_cmd "$run2")")
m2=$((g2 + 1))
reason_has() { job_field "$1" reason | grep -q "$2"; }
wait_for "gang $g2's reason" reason_has "$g2" "needs 2 GPUs on each of 2 nodes"
state_is "$g2" PENDING && state_is "$m2" PENDING || fail "gang $g2: $(job_state "$g2") $(job_state "$m2")"
reason_has "$m2" "needs 2 GPUs on each of 2 nodes" || fail "member $m2's reason: $(job_field "$m2" reason)"
ok "gang $g2 waits whole while one node is free: $(job_field "$g2" reason)"

# One member fails: the other is cancelled (its process stopped), with the cause.
touch "$run1/fail.$m"
wait_for "member $m FAILED" state_is "$m" FAILED
wait_for "member $g CANCELLED" state_is "$g" CANCELLED
reason_has "$g" "its gang's member $m (node 2 of 2) ended FAILED" || fail "job $g's reason: $(job_field "$g" reason)"
wait_for "job $g's process gone" sh -c "! kill -0 $(cat "$run1/pid.$g") 2>/dev/null"
ok "member $m failed; member $g cancelled: $(job_field "$g" reason)"

# The waiting gang now fits and starts whole. Then one member's node dies: the gang is
# requeued whole and starts again on the two nodes left.
wait_for "gang $g2 running" both_running "$g2" "$m2"
dead=$(job_field "$m2" node)
old_pid=$(cat "$run2/pid.$g2")
kill -9 "${AGENT_PIDS[${dead#e}]}"
wait_for "member $g2 requeued with its gang" sh -c "$GPUFLEET show $g2 | grep -q 'requeue (controller): requeued with its gang.s member $m2 (node 2 of 2) (requeued after node failure: node $dead down'"
wait_for "gang $g2 running again" both_running "$g2" "$m2"
a=$(job_field "$g2" node); b=$(job_field "$m2" node)
[ "$a" != "$b" ] && [ "$a" != "$dead" ] && [ "$b" != "$dead" ] || fail "gang $g2 restarted on $a and $b (dead node: $dead)"
wait_for "a new run of member $g2" sh -c "[ \"\$(cat $run2/pid.$g2)\" != $old_pid ]"
wait_for "the new environment" sh -c "grep -q '^GPUFLEET_NODELIST=$a,$b\$' $run2/env.$g2"
ok "node $dead died under member $m2: member $g2 stopped and requeued with it; gang runs again on $a and $b"

# Cancelling the gang's id cancels every member.
gf cancel "$g2" >/dev/null
wait_for "gang $g2 cancelled" sh -c "[ \"\$($GPUFLEET show --json $g2 | jq -r .state)\" = CANCELLED ] && [ \"\$($GPUFLEET show --json $m2 | jq -r .state)\" = CANCELLED ]"
ok "gpufleet cancel $g2: both members CANCELLED"

# Bad input names the field and the fix.
refused() {  # refused PATTERN ARGS...: gpufleet submit ARGS fails with a message matching PATTERN
  local pattern=$1 err; shift
  if err=$(gf submit "$@" -- true 2>&1); then fail "submit $* accepted"; fi
  grep -q -- "$pattern" <<<"$err" || fail "submit $*: $err"
  echo "$err"
}
refused "--nodes: '0' is not a node count" --nodes 0 >/dev/null
refused "nodes: 2 GPUs on each of 3 nodes requested" --nodes 3 --gpus 2 >/dev/null
err=$(refused "nodes: a job array's tasks run on one node each" --nodes 2 --array 0-1)
ok "bad --nodes refused: $err"
