#!/usr/bin/env bash
# gpufleet explain: a waiting job names the job ahead of it and the node facts; a running job
# says where it runs; an ended job is refused with the reason.
source "$(dirname "$0")/lib.sh"
start_up

release=$WORK/release
blocker=$(submit --gpus 4 -- sh -c "while [ ! -e $release ]; do sleep 0.05; done")
wait_for "blocker to run" state_is "$blocker" RUNNING
normal=$(submit --gpus 4 --priority normal -- true)
high=$(submit --gpus 4 --priority high -- true)
wait_for "pending reasons" sh -c "$GPUFLEET show --json $normal | jq -e '.reason | test(\"behind job $high\")'"

text=$(gf explain "$normal")
echo "$text"
for want in "Job $normal: waits" \
            "reason          behind job $high (high priority, needs 4 GPUs)" \
            "position        2 of 2 waiting" \
            "#1 job $high (high," \
            "class           normal (rank 1)" \
            "e2e-node (up, 4 GPUs H100-80GB): busy - 0 of 4 matching GPUs free; needs 4 GPUs" \
            "GPU 0,1,2,3: held by job $blocker (no time limit); then " \
            "job $blocker (normal): spared: protected: ran"; do
  grep -qF -- "$want" <<<"$text" || fail "explain $normal lacks: $want"
done
gf explain --json "$normal" |
  jq -e --argjson high "$high" \
    '.ahead[0].id == $high and .nodes[0].node == "e2e-node" and .nodes[0].verdict == "busy"
     and .nodes_by_verdict.busy == 1 and .priority.priority == "normal"' >/dev/null ||
  fail "explain --json $normal: $(gf explain --json "$normal")"
grep -E "GPU 0,1,2,3: held by job $blocker .*for job $high" <<<"$text" >/dev/null ||
  fail "explain $normal does not say job $high has the GPUs next"
ok "explain names job $high ahead of $normal and the node's GPUs"

running=$(gf explain "$blocker")
echo "$running"
grep -qF "Job $blocker: running on e2e-node GPUs 0,1,2,3" <<<"$running" || fail "explain $blocker"
grep -qF "preempted by    jobs of class high" <<<"$running" || fail "explain $blocker: preempted by"
ok "explain of a running job says where and who may preempt it"

touch "$release"
wait_for "blocker to end" state_is "$blocker" COMPLETED
if out=$(gf explain "$blocker" 2>&1); then fail "explain of an ended job succeeded: $out"; fi
grep -qF "has ended (COMPLETED)" <<<"$out" || fail "ended job: $out"
ok "explain of an ended job is refused: $out"
