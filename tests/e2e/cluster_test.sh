#!/usr/bin/env bash
# gpufleet over several nodes: one `gpufleet server` and three `gpufleet agent` processes on
# simulated GPUs, joined over TLS with a node token. Jobs spread over the nodes; kill -9 of an
# agent while its jobs run takes its node down and requeues the jobs elsewhere (NODE_FAIL →
# PENDING → RUNNING); when the agent comes back, the copies it still runs are killed, so no job
# runs twice; every job ends COMPLETED exactly once. A `--no-requeue` job on that node ends
# FAILED with the cause instead, and never runs again. `gpufleet logs` (and -f) of a job on a
# node whose files the server cannot reach come over the agent link, and so does a signal
# (`gpufleet cancel --signal`); a down node's error names them.
source "$(dirname "$0")/lib.sh"

make_pki
# 6 s: short enough to see nodes go down within the test, long enough that a loaded machine's
# late heartbeats (every 1 s; an ASan build) do not take a live node down mid-test.
start_server --node-timeout 6s --tls-cert "$WORK/pki/server.pem" --tls-key "$WORK/pki/server.key"
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
  if [ "$i" = 1 ]; then
    # Must not run twice. Best fit packs it next to the first job (checked below).
    once=$(submit --gpus 1 --no-requeue -- sh -c "echo \$GPUFLEET_JOB_ID >> $runs; while [ ! -e $go ]; do sleep 0.05; done")
  fi
done
all_running() { for id in "${ids[@]}" "$once"; do state_is "$id" RUNNING || return 1; done; }
wait_for "five jobs running" all_running
first=${ids[0]}
wait_for "job $first output" sh -c "$GPUFLEET logs $first | grep -q 'hello $first'"
ok "five jobs run; logs of job $first read from its node: $(gf logs "$first")"

# The node of the first job loses its agent.
victim=$(job_field "$first" node)
vn=${victim#e}
on_victim=()
for id in "${ids[@]}"; do
  [ "$(job_field "$id" node)" = "$victim" ] && on_victim+=("$id")
done
old_pids=()
[ "$(job_field "$once" node)" = "$victim" ] || fail "--no-requeue job $once is on $(job_field "$once" node), not next to job $first on $victim"
gf show "$once" | grep -q "^Requeue *no (--no-requeue)" || fail "gpufleet show $once: $(gf show "$once")"
for id in "${on_victim[@]}" "$once"; do old_pids+=("$(cut -d' ' -f1 "$WORK/agent$vn/jobs/$id/job.pid")"); done
kill -9 "${AGENT_PIDS[$vn]}"
wait "${AGENT_PIDS[$vn]}" 2>/dev/null || true
wait_for "node $victim down" sh -c "[ \"\$($GPUFLEET nodes --json | jq -r '.nodes[] | select(.name == \"$victim\") | .state')\" = down ]"
for id in "${on_victim[@]}"; do
  wait_for "job $id running again elsewhere" sh -c "[ \"\$($GPUFLEET show --json $id | jq -r '.state + \" \" + .node')\" != \"RUNNING $victim\" ] && [ \"\$($GPUFLEET show --json $id | jq -r .state)\" = RUNNING ]"
done
ok "node $victim down after kill -9 of its agent; jobs ${on_victim[*]} requeued and running on other nodes"
state_is "$once" FAILED || fail "--no-requeue job $once is $(job_state "$once"), not FAILED"
job_field "$once" reason | grep -q "node $victim down: .*; not requeued (--no-requeue)" ||
  fail "--no-requeue job $once: cause '$(job_field "$once" reason)'"
ok "--no-requeue job $once FAILED with its node: $(job_field "$once" reason)"
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
[ "$(grep -c "^$once\$" "$runs")" = 1 ] || fail "--no-requeue job $once started $(grep -c "^$once\$" "$runs") times"
state_is "$once" FAILED || fail "--no-requeue job $once is $(job_state "$once") after all"
ok "each job COMPLETED once; the ones on $victim ran twice (before and after the failure), never both after its return; --no-requeue job $once ran once"

# Logs over the agent link. Node e4 keeps its data dir on a tmpfs of its own mount namespace:
# neither the server nor this script can open its files by path, so what `gpufleet logs` shows
# came from the agent (read_log). Without root (by hand), e4 only has a data dir of its own.
private=false
if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
  mkdir -p "$WORK/agent4"
  AGENT_WRAP=(unshare --mount --propagation private sh -c 'mount -t tmpfs gf-e2e "$0" && exec "$@"' "$WORK/agent4")
  private=true
fi
start_agent 4 "$WORK/node.token" e4 --label disk=private
AGENT_WRAP=()
wait_for "node e4 up" nodes_up 4
go4=$WORK/go4
expected=$WORK/expected.out
# More than one remote chunk (512 KiB each) after the go.
{ echo "first line"; seq 1 200000; echo "last line"; } >"$expected"
# It traps USR1 (gpufleet cancel --signal, over the agent link) and runs on.
id4=$(submit --gpus 1 --constraint disk=private -- sh -c "trap 'touch $WORK/usr1-e4' USR1; echo first line; echo to stderr >&2; while [ ! -e $go4 ]; do sleep 0.05; done; seq 1 200000; echo last line")
wait_for "job $id4 running on e4" sh -c "[ \"\$($GPUFLEET show --json $id4 | jq -r '.state + \" \" + .node')\" = 'RUNNING e4' ]"
wait_for "job $id4 output" sh -c "$GPUFLEET logs $id4 | grep -q 'first line'"
if $private; then
  [ ! -e "$WORK/agent4/jobs/$id4/stdout.log" ] || fail "the server could reach e4's log by path"
fi
[ "$(gf logs --stderr "$id4")" = "to stderr" ] || fail "stderr of job $id4: $(gf logs --stderr "$id4")"
# After the stderr check: the shell reports its sleep killed by USR1 there.
gf cancel --signal USR1 "$id4" | grep -q "Sent SIGUSR1 to job $id4" || fail "cancel --signal USR1 $id4"
wait_for "job $id4's trap on e4" test -e "$WORK/usr1-e4"
state_is "$id4" RUNNING || fail "--signal USR1 ended job $id4 on e4: $(gf show "$id4")"
ok "cancel --signal USR1 reached job $id4 on e4 over the agent link; it runs on"
gf logs --stdout -f "$id4" >"$WORK/follow.out" 2>"$WORK/follow.err" &
follow=$!
wait_for "logs -f to print the first line" grep -q "first line" "$WORK/follow.out"
touch "$go4"
wait_for "job $id4 completed" state_is "$id4" COMPLETED
wait "$follow" || fail "gpufleet logs -f $id4 failed: $(cat "$WORK/follow.err")"
cmp -s "$expected" "$WORK/follow.out" || fail "logs -f of job $id4 differs: $(cmp "$expected" "$WORK/follow.out" 2>&1)"
gf logs --stdout "$id4" >"$WORK/logs.out" || fail "gpufleet logs $id4 failed"
cmp -s "$expected" "$WORK/logs.out" || fail "logs of job $id4 differ: $(cmp "$expected" "$WORK/logs.out" 2>&1)"
ok "logs of job $id4 on e4 ($(wc -c <"$expected") bytes; private data dir: $private) came over the agent link, plain and -f"

# An interactive session on e4 (gpufleet run): keys go out on the command stream, output comes
# back over the agent link, and the job's exit code is the session's.
out=$(printf 'hello there\n' | gf run --constraint disk=private -- sh -c 'read x; echo "got:$x on $(hostname)"; exit 3') && rc=0 || rc=$?
[ "$rc" = 3 ] || fail "gpufleet run on e4 exited $rc, want 3: $out"
echo "$out" | grep -q "got:hello there" || fail "gpufleet run on e4: $out"
ok "gpufleet run on e4 over the agent link: $(echo "$out" | grep got: | tr -d '\r')"

# e4 goes away: its node goes down, and the logs of its job say where they are instead.
kill -9 "${AGENT_PIDS[4]}"
wait "${AGENT_PIDS[4]}" 2>/dev/null || true
wait_for "node e4 down" sh -c "[ \"\$($GPUFLEET nodes --json | jq -r '.nodes[] | select(.name == \"e4\") | .state')\" = down ]"
if gf logs "$id4" >/dev/null 2>"$WORK/down.err"; then fail "gpufleet logs of a job on a down node succeeded"; fi
grep -q "node e4 is down" "$WORK/down.err" || fail "down node error: $(cat "$WORK/down.err")"
grep -qF "$WORK/agent4/jobs/$id4/stdout.log" "$WORK/down.err" || fail "down node error names no file: $(cat "$WORK/down.err")"
ok "logs of job $id4 with e4 down: $(cat "$WORK/down.err")"
