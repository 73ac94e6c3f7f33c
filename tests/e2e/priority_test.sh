#!/usr/bin/env bash
# High priority starts before earlier normal and low work.
source "$(dirname "$0")/lib.sh"
start_up

# A class the cluster does not define is refused at submit, naming the classes it has.
if out=$(gf submit --priority urgent -- true 2>&1); then fail "unknown class accepted: $out"; fi
grep -qF "priority: no class 'urgent'; the classes are high, normal, low" <<<"$out" ||
  fail "unknown class: $out"
ok "unknown class refused: $out"

release=$WORK/release
blocker=$(submit --gpus 4 -- sh -c "while [ ! -e $release ]; do sleep 0.05; done")
wait_for "blocker to run" state_is "$blocker" RUNNING
normal=$(submit --gpus 4 --priority normal -- true)
low=$(submit --gpus 4 --priority low -- true)
high=$(submit --gpus 4 --priority high -- true)
wait_for "pending reasons" sh -c "$GPUFLEET show --json $normal | jq -e '.reason | test(\"behind job $high\")'"
queue=$(gf queue)
echo "$queue"
# Pending jobs first, in the scheduler's order, numbered as the API numbers them.
order=$(awk 'NR > 1 && $4 == "PENDING" {print $1 ":" $5}' <<<"$queue" | tr '\n' ' ')
[ "$order" = "$high:1 $normal:2 $low:3 " ] || fail "queue order and POS: '$order'\n$queue"
api=$(gf queue --json | jq -r --argjson h "$high" '.jobs[] | select(.id == $h) | .queue_position')
[ "$api" = 1 ] || fail "the API puts job $high at $api"
touch "$release"
for j in "$high" "$normal" "$low"; do wait_for "job $j" state_is "$j" COMPLETED; done
t_high=$(job_field "$high" start_time_ms)
t_normal=$(job_field "$normal" start_time_ms)
t_low=$(job_field "$low" start_time_ms)
[ "$t_high" -le "$t_normal" ] && [ "$t_normal" -le "$t_low" ] ||
  fail "start order high=$t_high normal=$t_normal low=$t_low"
# Each needed all 4 GPUs, so they ran one after another: strictly ordered ends too.
[ "$(job_field "$high" end_time_ms)" -le "$t_normal" ] || fail "normal started before high ended"
ok "high ($high) started before normal ($normal) before low ($low)"
