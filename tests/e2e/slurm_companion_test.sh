#!/usr/bin/env bash
# Slurm companion mode (issue #23) against a real Slurm (Debian's slurm-wlm, started here: munge
# on a private socket, two slurmd on this host, eight fake GPU devices each): `gpufleet server
# --slurm` follows Slurm's jobs; `gpufleet agent --slurm` beside each slurmd samples simulated
# GPUs that follow the jobs' CUDA_VISIBLE_DEVICES as Slurm sets it (indices) and attributes each
# GPU process to its Slurm job by SLURM_JOB_ID (this Slurm uses no cgroups).
#   - an sbatch'ed job of a second user appears on the GPUs Slurm gave it, with its Slurm job id,
#     user and account (team), in `gpus`, `show` and /metrics; every process of the job is
#     attributed to it (none unmanaged);
#   - gpufleet schedules nothing: a submission is refused with the reason;
#   - `gpufleet cancel` of a Slurm job cancels it in Slurm (scancel), and the job ends CANCELLED;
#   - a job that ends in Slurm ends in gpufleet with Slurm's state and exit code.
# Skips when Slurm cannot be started here (not root, or slurm-wlm missing).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/local_slurm.sh"

local_slurm_available || { echo "skipped: needs root and slurm-wlm + munge (scripts/bootstrap.sh installs them)"; exit $SKIP; }
trap 'local_slurm_stop; cleanup' EXIT
local_slurm_start "$WORK/slurm" gfe2e 2 || fail "Slurm did not start"
ok "Slurm up: $(sinfo -h -N -o '%N %T %G' | tr '\n' ' ')"

start_server --slurm --slurm-poll 1s
gf node token create --output "$WORK/node.token" --description e2e >/dev/null
for n in 1 2; do
  "$GPUFLEET" agent --server "$SERVER_URL" --token-file "$WORK/node.token" --slurm \
    --gpus sim:8xH100-80GB --data-dir "$WORK/agent$n" --node-name "gpu0$n" \
    --sample-interval 1s >>"$WORK/agent$n.log" 2>&1 &
  AGENT_PIDS[$n]=$!
done
nodes_up() { [ "$(gf nodes --json | jq '[.nodes[] | select(.state == "up")] | length')" = 2 ]; }
wait_for "two companion agents up" nodes_up

# gpufleet schedules nothing here.
out=$(gf submit -- true 2>&1) && fail "a submission was accepted in companion mode: $out"
grep -q "follows Slurm" <<<"$out" || fail "the refusal does not say why: $out"
ok "submissions refused: $out"

# A second user's job on two GPUs, and root's on three (Slurm places both on gpu01).
other_user || exit $SKIP
cd "$WORK"
job=$(runuser -u "$other" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable -A physics -J train -G 2 -t 30 -o /dev/null --wrap 'sleep 300')
job2=$(sbatch --parsable -A bio -J prep -G 3 -o /dev/null --wrap 'sleep 300')
slurm_running() { [ "$(squeue -h -j "$1" -o %T)" = RUNNING ]; }
wait_for "Slurm to run job $job" slurm_running "$job"
wait_for "Slurm to run job $job2" slurm_running "$job2"
gpus_of() { scontrol -d show job "$1" | sed -n 's/.*GRES=gpu:h100:[0-9]*(IDX:\([0-9,-]*\)).*/\1/p'; }
ok "Slurm: job $job on $(squeue -h -j "$job" -o %N) GPUs $(gpus_of "$job"), job $job2 GPUs $(gpus_of "$job2")"

running_here() { state_is "$1" RUNNING; }
wait_for "gpufleet to show job $job running" running_here "$job"
[ "$(job_field "$job" user)" = "$other" ] || fail "job $job user: $(job_field "$job" user), want $other"
[ "$(job_field "$job" team)" = physics ] || fail "job $job team: $(job_field "$job" team)"
[ "$(job_field "$job" node)" = "$(squeue -h -j "$job" -o %N)" ] || fail "job $job node: $(job_field "$job" node)"
ok "job $job in gpufleet: $(gf show --json "$job" | jq -c '{id, user, team, state, name, node}')"

# The GPUs gpufleet holds for it are those of Slurm's indices, and its processes are on them.
want_indices() {  # "0-1" / "2,4" → one index per line
  tr ',' '\n' <<<"$1" | awk -F- '{ if (NF == 2) for (i = $1; i <= $2; i++) print i; else print $1 }'
}
held_indices() {
  gf gpus --json | jq -r --argjson j "$1" '.gpus[] | select(.job == $j) | .index' | sort -n
}
for j in "$job" "$job2"; do
  want=$(want_indices "$(gpus_of "$j")" | sort -n | tr '\n' ' ')
  got() { [ "$(held_indices "$j" | tr '\n' ' ')" = "$want" ]; }
  wait_for "job $j on GPUs $want" got
done
ok "gpufleet's GPUs of each job are Slurm's: $(gf gpus --json | jq -c '[.gpus[] | select(.job != null) | {node, index, job, user}]')"

# Every GPU process of the jobs is attributed to its job: none unmanaged.
attributed() {
  local procs
  procs=$(gf gpus --json | jq -c '[.gpus[] | .sample.processes[]?]')
  [ "$(jq 'length' <<<"$procs")" -ge 2 ] || return 1
  [ "$(jq '[.[] | select(.unmanaged == true or .job == null)] | length' <<<"$procs")" = 0 ]
}
wait_for "the jobs' GPU processes attributed" attributed
ok "processes: $(gf gpus --json | jq -c '[.gpus[] | .sample.processes[]? | {pid, job, user, unmanaged}]')"

# /metrics labels the job's GPUs with its id, user and account.
metrics_url="$SERVER_URL/metrics"
labelled() { curl -fsS "$metrics_url" | grep -E "^DCGM_FI_DEV_GPU_UTIL\{.*job=\"$job\"" | grep -q "team=\"physics\""; }
wait_for "/metrics to label job $job" labelled
ok "metrics: $(curl -fsS "$metrics_url" | grep -E "job=\"$job\"" | head -n 1)"

# gpufleet cancel → scancel; the job ends CANCELLED in both.
gf cancel "$job" >/dev/null || fail "gpufleet cancel $job failed"
slurm_done() { [ -z "$(squeue -h -j "$1" -o %T 2>/dev/null)" ] || [ "$(squeue -h -j "$1" -o %T)" = CANCELLED ]; }
wait_for "Slurm to cancel job $job" slurm_done "$job"
wait_for "job $job CANCELLED in gpufleet" state_is "$job" CANCELLED
ok "cancelled through Slurm: $(gf show --json "$job" | jq -c '{state, reason}')"

# A job that ends in Slurm by itself ends here with Slurm's exit code.
job3=$(sbatch --parsable -A bio -G 1 -o /dev/null --wrap 'sleep 3; exit 3')
wait_for "job $job3 to appear" running_here "$job3"
WAIT_FOR_SECONDS=60 wait_for "job $job3 FAILED in gpufleet" state_is "$job3" FAILED
[ "$(job_field "$job3" exit_code)" = 3 ] || fail "job $job3 exit code $(job_field "$job3" exit_code), want 3"
ok "an ended Slurm job: $(gf show --json "$job3" | jq -c '{state, exit_code, reason}')"

scancel "$job2"
wait_for "job $job2 CANCELLED in gpufleet" state_is "$job2" CANCELLED
ok "slurm companion"
