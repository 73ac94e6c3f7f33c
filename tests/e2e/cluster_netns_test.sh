#!/usr/bin/env bash
# A real network partition (issue #6). One `gpufleet server` and three `gpufleet agent`
# processes, each agent in a network namespace of its own, joined to the server's by a veth pair
# on a bridge, over TLS with a node token: the agents reach the server only through their own
# link. Taking one node's link down while its job runs is a partition, not a crash: the agent
# and its job live on, cut off. The server takes the node down after --node-timeout and runs
# the job elsewhere; when the link comes back, the agent's old connection resumes, the server
# answers its stale session with a new hello, and the copy it still runs is killed as an orphan.
# Every job ends COMPLETED once; the partitioned one ran twice (before and during the partition),
# never both after the partition healed.
#
# Needs root and `ip netns` (iproute2, installed by scripts/bootstrap.sh; CI runs as root).
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
  echo "skip: needs root and ip (network namespaces)"
  exit $SKIP
fi

# Names unique to this run (interface names have at most 15 characters), on a /24 of its own.
tag=$$
net=10.231.$((tag % 250))
BRIDGE=gfb$tag
NETNS=()
net_cleanup() {
  for ns in "${NETNS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  ip link del "$BRIDGE" 2>/dev/null || true
}
trap 'cleanup; net_cleanup' EXIT

# A container without CAP_NET_ADMIN cannot: say so rather than fail (CI's machines can).
ip link add "$BRIDGE" type bridge || { echo "skip: cannot create a bridge here"; exit $SKIP; }
ip netns add "gf-$tag-probe" || { echo "skip: cannot create a network namespace here"; exit $SKIP; }
ip netns del "gf-$tag-probe"
ip addr add "$net.1/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
# node_ns N: namespace gf-TAG-N with veth gfhTAGN (host side, on the bridge) and its peer inside
# at $net.(N+1).
node_ns() {
  local ns=gf-$tag-$1 host=gfh$tag$1 peer=gfa$tag$1
  ip netns add "$ns"
  NETNS+=("$ns")
  ip link add "$host" type veth peer name "$peer"
  ip link set "$peer" netns "$ns"
  ip link set "$host" master "$BRIDGE" up
  ip netns exec "$ns" ip addr add "$net.$(($1 + 1))/24" dev "$peer"
  ip netns exec "$ns" ip link set "$peer" up
  ip netns exec "$ns" ip link set lo up
}
for n in 1 2 3; do node_ns $n; done

make_pki "$net.1"
start_server --host "$net.1" --node-timeout 3s \
  --tls-cert "$WORK/pki/server.pem" --tls-key "$WORK/pki/server.key"
[[ $SERVER_URL == "https://$net.1:"* ]] || fail "the server does not listen on the bridge: $SERVER_URL"
gf node token create --output "$WORK/node.token" --description e2e-netns >/dev/null
nodes_up() { [ "$(gf nodes --json | jq '[.nodes[] | select(.state == "up")] | length')" = "$1" ]; }
for n in 1 2 3; do
  AGENT_WRAP=(ip netns exec "gf-$tag-$n")
  start_agent $n "$WORK/node.token"
done
AGENT_WRAP=()
wait_for "three nodes up" nodes_up 3
# Each agent really is in its namespace, where the only way out is its link.
for n in 1 2 3; do
  [ "$(ip netns identify "${AGENT_PIDS[$n]}")" = "gf-$tag-$n" ] ||
    fail "agent $n is in namespace '$(ip netns identify "${AGENT_PIDS[$n]}")'"
done
ok "three agents joined from their own network namespaces over $BRIDGE ($net.0/24)"

# Three one-GPU jobs that log each start and wait for the go file.
go=$WORK/go
runs=$WORK/runs.log
ids=()
for i in 1 2 3; do
  ids+=("$(submit --gpus 1 -- sh -c "echo \$GPUFLEET_JOB_ID >> $runs; while [ ! -e $go ]; do sleep 0.05; done")")
done
all_running() { for id in "${ids[@]}"; do state_is "$id" RUNNING || return 1; done; }
wait_for "three jobs running" all_running
first=${ids[0]}
victim=$(job_field "$first" node)
vn=${victim#e}
old_pid=$(cut -d' ' -f1 "$WORK/agent$vn/jobs/$first/job.pid")
on_victim=" "  # the jobs on the victim's node (best fit packs two there): all run again
for id in "${ids[@]}"; do
  [ "$(job_field "$id" node)" = "$victim" ] && on_victim+="$id "
done

# The partition: the victim's link goes down. Its agent and job stay alive, cut off.
ip link set "gfh$tag$vn" down
wait_for "node $victim down" sh -c "[ \"\$($GPUFLEET nodes --json | jq -r '.nodes[] | select(.name == \"$victim\") | .state')\" = down ]"
wait_for "job $first running again elsewhere" sh -c "[ \"\$($GPUFLEET show --json $first | jq -r .state)\" = RUNNING ] && [ \"\$($GPUFLEET show --json $first | jq -r .node)\" != $victim ]"
pid_alive "${AGENT_PIDS[$vn]}" || fail "the partitioned agent died"
pid_running "$old_pid" || fail "the partitioned copy $old_pid died: a partition is not a crash"
ok "partition of $victim: node down ($(gf nodes --json | jq -r ".nodes[] | select(.name == \"$victim\") | .state_reason")), job $first running on $(job_field "$first" node); the cut-off copy $old_pid lives on"

# The link comes back: the agent's session is stale, its hello reconciles, the copy is killed.
ip link set "gfh$tag$vn" up
wait_for "node $victim up again" nodes_up 3
wait_for "orphan copy $old_pid killed" sh -c "! kill -0 $old_pid 2>/dev/null || [ \"\$(sed 's/.*) //' /proc/$old_pid/stat | cut -d' ' -f1)\" = Z ]"
[ "$(grep -c "agent: joined" "$WORK/agent$vn.log")" = 2 ] ||
  fail "the agent of $victim did not say hello again: $(grep "agent:" "$WORK/agent$vn.log")"
ok "link of $victim back: the agent said hello again and its orphan copy $old_pid was killed"

touch "$go"
all_completed() { for id in "${ids[@]}"; do state_is "$id" COMPLETED || return 1; done; }
wait_for "every job completed" all_completed
for id in "${ids[@]}"; do
  want=1
  [[ $on_victim == *" $id "* ]] && want=2
  [ "$(grep -c "^$id\$" "$runs")" = "$want" ] || fail "job $id started $(grep -c "^$id\$" "$runs") times, not $want"
done
ok "every job COMPLETED once; those on $victim (${on_victim# }) ran before and during the partition, never after it healed"
