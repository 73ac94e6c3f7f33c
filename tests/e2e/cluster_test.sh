#!/usr/bin/env bash
# gpufleet over several nodes: one `gpufleet server` and three `gpufleet agent` processes on
# simulated GPUs, joined over TLS with a node token. Jobs spread over the nodes; kill -9 of an
# agent while its jobs run takes its node down and requeues the jobs elsewhere (NODE_FAIL →
# PENDING → RUNNING); when the agent comes back, the copies it still runs are killed, so no job
# runs twice; every job ends COMPLETED exactly once.
source "$(dirname "$0")/lib.sh"

make_pki
start_server --node-timeout 3s --tls-cert "$WORK/pki/server.pem" --tls-key "$WORK/pki/server.key"
[[ $SERVER_URL == https://* ]] || fail "the server does not speak TLS: $SERVER_URL"
# A join token any node may use (made by root over the Unix socket), kept 0600.
gf node token create --output "$WORK/node.token" --description e2e >/dev/null
[ "$(stat -c %a "$WORK/node.token")" = 600 ] || fail "node token file mode $(stat -c %a "$WORK/node.token")"

nodes_up() { [ "$(gf nodes --json | jq '[.nodes[] | select(.state == "up")] | length')" = "$1" ]; }

for n in 1 2 3; do start_agent $n "$WORK/node.token"; done
wait_for "three nodes up" nodes_up 3
ok "three agents joined: $(gf nodes --json | jq -c '[.nodes[] | {name, state, gpus: (.gpus | length)}]')"

# Four one-GPU jobs on six GPUs: each logs its start, then waits for the go file.
go=$WORK/go
runs=$WORK/runs.log
ids=()
for i in 1 2 3 4; do
  ids+=("$(submit --gpus 1 -- sh -c "echo \$GPUFLEET_JOB_ID >> $runs; echo hello \$GPUFLEET_JOB_ID; while [ ! -e $go ]; do sleep 0.05; done")")
done
all_running() { for id in "${ids[@]}"; do state_is "$id" RUNNING || return 1; done; }
wait_for "four jobs running" all_running
first=${ids[0]}
wait_for "job $first output" sh -c "$GPUFLEET logs $first | grep -q 'hello $first'"
ok "four jobs run; logs of job $first read from its node: $(gf logs "$first")"

# The node of the first job loses its agent.
victim=$(job_field "$first" node)
vn=${victim#e}
on_victim=()
for id in "${ids[@]}"; do
  [ "$(job_field "$id" node)" = "$victim" ] && on_victim+=("$id")
done
old_pids=()
for id in "${on_victim[@]}"; do old_pids+=("$(cut -d' ' -f1 "$WORK/agent$vn/jobs/$id/job.pid")"); done
kill -9 "${AGENT_PIDS[$vn]}"
wait "${AGENT_PIDS[$vn]}" 2>/dev/null || true
wait_for "node $victim down" sh -c "[ \"\$($GPUFLEET nodes --json | jq -r '.nodes[] | select(.name == \"$victim\") | .state')\" = down ]"
for id in "${on_victim[@]}"; do
  wait_for "job $id running again elsewhere" sh -c "[ \"\$($GPUFLEET show --json $id | jq -r '.state + \" \" + .node')\" != \"RUNNING $victim\" ] && [ \"\$($GPUFLEET show --json $id | jq -r .state)\" = RUNNING ]"
done
ok "node $victim down after kill -9 of its agent; jobs ${on_victim[*]} requeued and running on other nodes"
for p in "${old_pids[@]}"; do
  pid_running "$p" || fail "the first copy $p died with its agent (it should outlive it, as on a partition)"
done

# The agent comes back: the old copies are orphans and are killed, not left to run twice.
start_agent "$vn" "$WORK/node.token"
wait_for "node $victim up again" nodes_up 3
for p in "${old_pids[@]}"; do
  wait_for "orphan copy $p killed" sh -c "! kill -0 $p 2>/dev/null || [ \"\$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f1)\" = Z ]"
done
ok "agent of $victim back: orphan copies ${old_pids[*]} killed"

touch "$go"
all_completed() { for id in "${ids[@]}"; do state_is "$id" COMPLETED || return 1; done; }
wait_for "every job completed" all_completed
for id in "${on_victim[@]}"; do
  [ "$(grep -c "^$id\$" "$runs")" = 2 ] || fail "job $id started $(grep -c "^$id\$" "$runs") times"
  curl -sf --unix-socket "$GPUFLEET_SOCKET" "http://gpufleet/api/v1/jobs/$id/events" |
    jq -e '[.events[] | select(.message | test("RUNNING -> NODE_FAIL: node .* down"))] | length == 1' >/dev/null ||
    fail "job $id: not one NODE_FAIL event naming the node"
done
ok "each job COMPLETED once; the ones on $victim ran twice (before and after the failure), never both after its return"
