#!/usr/bin/env bash
# Placement on one node: labels from the settings file and --label, --constraint jobs (accepted
# on a labelled node, refused at submit with the labels there are), GPU topology shown by
# `gpufleet gpus`, and a 2-GPU job placed on an NVLink pair rather than the first free GPUs.
source "$(dirname "$0")/lib.sh"

# A bad --label stops up before it takes anything.
if timeout 20 "$GPUFLEET" up --gpus sim:1xH100-80GB --label 'rack' --data-dir "$WORK/data" \
    --listen-socket "$GPUFLEET_SOCKET" --port -1 >"$WORK/out" 2>&1; then
  fail "up accepted --label rack"
fi
grep -q -- "--label: 'rack' is not KEY=VALUE" "$WORK/out" || fail "bad label: $(cat "$WORK/out")"
ok "a bad --label is refused"

printf '[up]\nlabels = { rack = "a", zone = "x" }\n' >"$WORK/gf.toml"
"$GPUFLEET" up --config "$WORK/gf.toml" --label zone=y --gpus sim:8xH100-80GB \
  --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" --port 0 --kill-grace 2 \
  --node-name place-node >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" "$GPUFLEET" nodes

labels=$(gf nodes --json | jq -c '.nodes[0].labels')
[ "$labels" = '{"rack":"a","zone":"y"}' ] || fail "node labels: $labels (--label should win for zone)"
ok "labels from [up] labels and --label"

# The sim backend's HGX-like topology: two NVLink quads on two NUMA nodes.
peers=$(gf gpus --json | jq -c '[.gpus[] | select(.index == 5) | .nvlink_peers, .numa_node, .pcie_switch]')
[ "$peers" = '[[4,6,7],1,4]' ] || fail "GPU 5 topology: $peers"
ok "gpus shows NVLink peers, NUMA node and PCIe switch"

# Constraints: a label the node has runs; one it lacks is refused at submit, naming what exists.
id=$(submit --gpus 0 --constraint rack=a --constraint zone=y -- true)
wait_for "constrained job $id to complete" state_is "$id" COMPLETED
[ "$(gf show --json "$id" | jq -c .node_labels)" = '{"rack":"a","zone":"y"}' ] ||
  fail "node_labels of job $id: $(gf show --json "$id" | jq -c .node_labels)"
if gf submit --gpus 1 --constraint rack=b -- true >"$WORK/out" 2>&1; then
  fail "job with rack=b accepted on a rack=a cluster"
fi
grep -q "constraint: no node has label rack=b; labels in this cluster: rack=a, zone=y" "$WORK/out" ||
  fail "constraint error: $(cat "$WORK/out")"
printf '#!/bin/sh\n#GPUFLEET --constraint=rack=c\ntrue\n' >"$WORK/job.sh"
chmod +x "$WORK/job.sh"
if gf submit "$WORK/job.sh" >"$WORK/out" 2>&1; then
  fail "#GPUFLEET --constraint=rack=c accepted"
fi
grep -q "no node has label rack=c" "$WORK/out" || fail "directive constraint: $(cat "$WORK/out")"
if gf submit --constraint 'rack' -- true >"$WORK/out" 2>&1; then
  fail "--constraint rack accepted"
fi
grep -q -- "--constraint: 'rack' is not KEY=VALUE" "$WORK/out" || fail "bad constraint: $(cat "$WORK/out")"
ok "--constraint: met, refused with the labels there are, from #GPUFLEET lines too"

# Topology: a 3-GPU job fills 0-2 of quad 0; a 2-GPU job then gets an NVLink pair of quad 1
# (4, 5), not the first free GPUs 3 and 4 (which straddle the quads and the NUMA nodes).
gpu_indexes() {
  local uuids
  uuids=$(gf show --json "$1" | jq -c .gpu_uuids)
  gf gpus --json | jq -c --argjson u "$uuids" '[.gpus[] | select(.uuid as $x | $u | index($x)) | .index] | sort'
}
first=$(submit --gpus 3 -- sleep 300)
wait_for "job $first to run" state_is "$first" RUNNING
[ "$(gpu_indexes "$first")" = "[0,1,2]" ] || fail "3-GPU job on $(gpu_indexes "$first")"
pair=$(submit --gpus 2 -- sleep 300)
wait_for "job $pair to run" state_is "$pair" RUNNING
[ "$(gpu_indexes "$pair")" = "[4,5]" ] || fail "2-GPU job on $(gpu_indexes "$pair"), not an NVLink pair"
gf cancel "$first" "$pair" >/dev/null
wait_for "jobs to end" state_is "$pair" CANCELLED
ok "a 2-GPU job lands on an NVLink pair"
