#!/usr/bin/env bash
# GPU-hour budgets, quota and checkpoints (issue #4): a team with a tiny budget (0.001 GPU-hours,
# 3.6 GPU-seconds) uses it up; its next job waits under the "hold" policy with the budget as its
# reason; `gpufleet quota` shows what was used and what is left; `gpufleet quota approve` (root)
# lets the job run; the job reports a checkpoint from inside with `gpufleet checkpoint`, which
# `gpufleet show` displays; and after a restart the period's usage is still counted.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "skip: quota approve needs root"; exit $SKIP; }
me=$(id -un)
cat >"$WORK/policy.toml" <<TOML
[team.cv]
members = ["$me"]
guaranteed_gpus = 4
gpu_hour_budget = 0.001
over_budget = "hold"
TOML
up() {
  "$GPUFLEET" up --config "$WORK/policy.toml" --gpus sim:4xH100-80GB --data-dir "$WORK/data" \
    --listen-socket "$GPUFLEET_SOCKET" --port 0 --kill-grace 2 --node-name e2e-node \
    >>"$WORK/up.log" 2>&1 &
  UP_PID=$!
  wait_for "gpufleet up to answer" "$GPUFLEET" nodes
}
up

# A typo in --team is refused, naming the field and the configured teams, and never reaches
# /metrics as a team of its own (issue #24).
if gf submit --team nosuch -- true 2>"$WORK/team.err"; then fail "--team nosuch was accepted"; fi
grep -qF "team: unknown team 'nosuch'; known teams: cv" "$WORK/team.err" ||
  fail "unknown team error: $(cat "$WORK/team.err")"
if curl -sf --unix-socket "$GPUFLEET_SOCKET" http://gpufleet/metrics | grep -q nosuch; then
  fail "/metrics carries the refused team"
fi
ok "--team nosuch refused: $(cat "$WORK/team.err")"

# 1 GPU for 4 seconds: 4 GPU-seconds, over the 3.6 of the budget.
first=$(submit --gpus 1 -- sleep 4)
[ "$(job_field "$first" team)" = cv ] || fail "the job is not accounted to team cv"
wait_for "the first job to complete" state_is "$first" COMPLETED

held=$(submit --gpus 1 -- sh -c \
  "\"$GPUFLEET\" checkpoint > $WORK/checkpoint.out 2>&1; while [ ! -e $WORK/release ]; do sleep 0.05; done")
reason_has() { job_field "$held" reason | grep -q "$1"; }
wait_for "the second job held by the budget" reason_has "over its GPU-hour budget"
state_is "$held" PENDING || fail "job $held is $(job_state "$held"), want PENDING"
ok "team cv over its budget: job $held waits ($(job_field "$held" reason))"

gf quota >"$WORK/quota"
cat "$WORK/quota"
grep -Eq "^cv +4 +- +0 +0 +0\.001 +0\.00[1-9][0-9]* +0 +hold" "$WORK/quota" ||
  fail "quota row of cv: $(cat "$WORK/quota")"
grep -Eq "^$me +cv +0\.00" "$WORK/quota" || fail "no user row: $(cat "$WORK/quota")"
used=$(gf quota --json | jq '.teams[] | select(.team == "cv") | .used_gpu_hours')
awk -v u="$used" 'BEGIN { exit !(u >= 0.0011 && u < 0.01) }' || fail "used $used GPU-hours"
ok "quota shows cv's budget 0.001, used $used, 0 left"

if gf quota approve 999999 2>"$WORK/err"; then fail "approved a job that does not exist"; fi
grep -q "not found" "$WORK/err" || fail "approve of a missing job: $(cat "$WORK/err")"
gf quota approve "$held" | grep -q "approved" || fail "quota approve printed nothing"
wait_for "the approved job to run" state_is "$held" RUNNING
[ "$(job_field "$held" budget_approved)" = true ] || fail "approval not shown"
if gf quota approve "$held" 2>"$WORK/err"; then fail "approved a running job"; fi
grep -q "RUNNING, not PENDING" "$WORK/err" || fail "approve of a running job: $(cat "$WORK/err")"
ok "root approved job $held past the budget and it runs"

wait_for "the job's checkpoint" sh -c "$GPUFLEET show --json $held | jq -e '.last_checkpoint_ms != null'"
grep -q "checkpoint recorded" "$WORK/checkpoint.out" || fail "inside the job: $(cat "$WORK/checkpoint.out")"
gf show "$held" | grep -q "^Checkpoint" || fail "show has no checkpoint: $(gf show "$held")"
gf show "$held" | grep -q "approved past its team's GPU-hour budget" || fail "show: no approval"
ok "gpufleet checkpoint from inside job $held recorded $(job_field "$held" last_checkpoint)"

touch "$WORK/release"
wait_for "the approved job to complete" state_is "$held" COMPLETED
stop_up_hard
up
after=$(gf quota --json | jq '.teams[] | select(.team == "cv") | .used_gpu_hours')
awk -v a="$after" -v u="$used" 'BEGIN { exit !(a >= u) }' || fail "after a restart used $after < $used"
third=$(submit --gpus 1 -- true)
wait_for "a new job held after the restart" sh -c \
  "$GPUFLEET show --json $third | jq -r .reason | grep -q 'over its GPU-hour budget'"
ok "after a restart the period's usage ($after GPU-hours) still counts"
