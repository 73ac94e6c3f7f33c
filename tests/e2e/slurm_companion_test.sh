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
#   - a job that ends in Slurm ends in gpufleet with Slurm's state and exit code;
#   - a two-node job is one gpufleet job per node, each on its GPUs; cancelling one cancels it;
#   - a job that holds a GPU it does not use is requeued through Slurm by the idle reaper
#     ([class.gpu]: the partition's rules) within threshold + grace + 5 s;
#   - a GPU failure on gpu02 (its agent on the stand-in NVML library, whose scenario the test
#     writes: the job's real pid on GPU 0, then a fatal XID) requeues its job through Slurm and
#     drains gpu02 in Slurm (sinfo); `gpufleet gpu resume` resumes it there.
# Skips when not root (slurmd, munged and mknod need it); fails when slurm-wlm or munge is
# missing (scripts/bootstrap.sh installs them).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/local_slurm.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
SCENARIO=$WORK/scenario.json
# write_scenario PID XIDS: gpu02's two stand-in GPUs; GPU 0 busy with process PID (none: 0),
# with the XID events XIDS (a JSON array).
write_scenario() {
  local procs="[]"
  [ "$1" != 0 ] && procs="[{\"pid\": $1, \"used_memory_mib\": 3000}]"
  cat >"$SCENARIO.tmp" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-slurm-0", "memory_total_mib": 81559,
  "util_gpu": 90, "temperature_c": 50, "power_mw": 300000, "energy_mj": 1000,
  "xid_events": $2, "processes": $procs},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-slurm-1", "memory_total_mib": 81559,
  "util_gpu": 0, "temperature_c": 40, "power_mw": 80000, "energy_mj": 5000, "processes": []}]}
JSON
  mv "$SCENARIO.tmp" "$SCENARIO"
}
write_scenario 0 "[]"
cat >"$WORK/gpufleet.toml" <<'TOML'
[scheduler]
default_class = "gpu"
[class.gpu]            # the Slurm partition "gpu"
rank = 1
idle_after = "15s"
idle_grace = "5s"
idle_util_below = 5
idle_action = "requeue"
TOML

[ "$(id -u)" = 0 ] || { echo "skipped: a local Slurm needs root (slurmd, munged, mknod)"; exit $SKIP; }
need slurmctld slurmd sbatch squeue scontrol scancel sinfo munged
local_slurm_available || fail "cannot start a local Slurm here"
trap 'local_slurm_stop; cleanup' EXIT
local_slurm_start "$WORK/slurm" gfe2e 2 || fail "Slurm did not start"
ok "Slurm up: $(sinfo -h -N -o '%N %T %G' | tr '\n' ' ')"

start_server --slurm --slurm-poll 1s --config "$WORK/gpufleet.toml"
gf node token create --output "$WORK/node.token" --description e2e >/dev/null
# gpu01 on simulated GPUs that follow CUDA_VISIBLE_DEVICES; gpu02 on the stand-in NVML library.
for n in 1 2; do
  gpus=sim:8xH100-80GB
  [ "$n" = 2 ] && gpus=nvml:$FAKENVML
  GF_FAKENVML_SCENARIO=$SCENARIO "$GPUFLEET" agent --server "$SERVER_URL" \
    --token-file "$WORK/node.token" --slurm --gpus "$gpus" --data-dir "$WORK/agent$n" \
    --node-name "gpu0$n" --sample-interval 1s >>"$WORK/agent$n.log" 2>&1 &
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
job=$(runuser -u "$other" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable -w gpu01 -A physics -J train -G 2 -t 30 -o /dev/null --wrap 'sleep 300')
job2=$(sbatch --parsable -w gpu01 -A bio -J prep -G 3 -o /dev/null --wrap 'sleep 300')
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
# The hand count of its GPU-hours, from Slurm's own start and end (to the second).
slurm_time() { date -d "$(scontrol -o show job "$job" | grep -o " $1=[^ ]*" | cut -d= -f2)" +%s; }
hand_hours=$(awk -v s="$(slurm_time StartTime)" -v e="$(slurm_time EndTime)" 'BEGIN { printf "%.9f", 2 * (e - s) / 3600 }')

# A job that ends in Slurm by itself ends here with Slurm's exit code.
job3=$(sbatch --parsable -w gpu01 -A bio -G 1 -o /dev/null --wrap 'sleep 3; exit 3')
wait_for "job $job3 to appear" running_here "$job3"
WAIT_FOR_SECONDS=60 wait_for "job $job3 FAILED in gpufleet" state_is "$job3" FAILED
[ "$(job_field "$job3" exit_code)" = 3 ] || fail "job $job3 exit code $(job_field "$job3" exit_code), want 3"
ok "an ended Slurm job: $(gf show --json "$job3" | jq -c '{state, exit_code, reason}')"

scancel "$job2"
wait_for "job $job2 CANCELLED in gpufleet" state_is "$job2" CANCELLED

# A two-node job: one gpufleet job per node (the second under 100000000 + id), each on its GPUs.
multi=$(sbatch --parsable -N 2 -w gpu01,gpu02 --gpus-per-node=1 -A bio -J multi -o /dev/null --wrap 'srun sleep 300')
second=$((100000000 + multi))
wait_for "both nodes' shares of job $multi running" eval "state_is $multi RUNNING && state_is $second RUNNING"
[ "$(job_field "$multi" node)" = gpu01 ] && [ "$(job_field "$second" node)" = gpu02 ] \
  || fail "multi-node job nodes: $(job_field "$multi" node) $(job_field "$second" node)"
[ "$(gf gpus --json | jq --argjson j "$second" '[.gpus[] | select(.job == $j and .node == "gpu02")] | length')" = 1 ] \
  || fail "job $second holds no GPU on gpu02: $(gf gpus --json | jq -c '[.gpus[] | {node, index, job}]')"
multi_attributed() {
  gf gpus --json | jq -e --argjson j "$multi" '[.gpus[] | select(.node == "gpu01") | .sample.processes[]? | select(.job == $j)] | length > 0' >/dev/null
}
wait_for "job $multi's tasks on gpu01 attributed" multi_attributed
ok "two-node job $multi: $(gf gpus --json | jq -c --argjson a "$multi" --argjson b "$second" '[.gpus[] | select(.job == $a or .job == $b) | {node, index, job}]')"
gf cancel "$second" >/dev/null || fail "gpufleet cancel $second failed"
wait_for "both shares of job $multi CANCELLED" eval "state_is $multi CANCELLED && state_is $second CANCELLED"
ok "cancelling one node's share cancelled Slurm job $multi"

# Idle reaping through Slurm: a job that holds a GPU and runs nothing on it (its process does
# not see the GPU) is requeued by `scontrol requeue` within idle_after + idle_grace + 5 s.
idle=$(sbatch --parsable -w gpu01 -A bio -J idle -G 1 -o /dev/null --wrap 'exec env -u CUDA_VISIBLE_DEVICES sleep 300')
wait_for "job $idle running in gpufleet" running_here "$idle"
t0=$SECONDS
restarted() { scontrol -o show job "$1" | grep -q ' Restarts=[1-9]'; }
WAIT_FOR_SECONDS=40 wait_for "Slurm to requeue idle job $idle" restarted "$idle"
took=$((SECONDS - t0))
[ "$took" -le 25 ] || fail "idle job $idle requeued after $took s, beyond 15 s + 5 s + 5 s"
gf show "$idle" | grep -q "reaper" || fail "no reaper event on job $idle: $(gf show "$idle" | tail -n 8)"
ok "idle job $idle requeued through Slurm $took s after it started (threshold 15 s + grace 5 s)"
scancel "$idle"

# A GPU failure on gpu02: its job is requeued through Slurm and the node drained in Slurm.
job4=$(sbatch --parsable -w gpu02 -A bio -J fo -G 1 -o "$WORK/fo.out" --wrap "echo \$\$ > $WORK/fo.pid; exec sleep 300")
wait_for "job $job4 running in gpufleet" running_here "$job4"
wait_for "job $job4's pid" test -s "$WORK/fo.pid"
write_scenario "$(cat "$WORK/fo.pid")" "[]"
on_gpu() { gf gpus --json | jq -e --argjson j "$1" '[.gpus[] | .sample.processes[]? | select(.job == $j)] | length > 0' >/dev/null; }
wait_for "job $job4's process on gpu02's GPU 0" on_gpu "$job4"
write_scenario "$(cat "$WORK/fo.pid")" '[{"xid": 79, "seq": 1}]'
drained() { sinfo -h -n gpu02 -o '%T' | grep -Eq '^drain'; }
WAIT_FOR_SECONDS=40 wait_for "Slurm to drain gpu02" drained
sinfo -h -n gpu02 -o '%E' | grep -q gpufleet || fail "drain reason: $(sinfo -h -n gpu02 -o '%E')"
WAIT_FOR_SECONDS=40 wait_for "Slurm to requeue job $job4" restarted "$job4"
ok "GPU failure: gpu02 $(sinfo -h -n gpu02 -o '%T: %E'); job $job4 requeued ($(scontrol -o show job "$job4" | grep -o 'Restarts=[0-9]*'))"
scancel "$job4"
write_scenario 0 "[]"
gf gpu resume gpu02 0 >/dev/null || fail "gpufleet gpu resume gpu02 0 failed"
resumed() { ! drained; }
wait_for "Slurm to resume gpu02" resumed
ok "gpufleet gpu resume: gpu02 $(sinfo -h -n gpu02 -o '%T') in Slurm"

# The monthly report counts the Slurm jobs: account physics held 2 GPUs from Slurm's start to
# Slurm's end of job $job, its user is the second user. Report figures run to the start of the
# current minute (docs/reports.md): a run inside the current minute shows once it has turned,
# so the report is read again until then (up to 60 s more).
physics_counted() {
  gf report --period "$(date -u +%Y-%m)" --format json >"$WORK/report.json" || return 1
  jq -e --argjson h "$hand_hours" '.teams[] | select(.team == "physics")
    | (.usage.allocated_gpu_hours - $h | fabs) < 1e-6 and .usage.jobs == 1' "$WORK/report.json"
}
deadline=$((SECONDS + 75))
until physics_counted >/dev/null; do
  [ $SECONDS -lt $deadline ] ||
    fail "report team physics (hand count $hand_hours GPU-h): $(jq -c '.teams' "$WORK/report.json")"
  sleep 1
done
jq -e --arg u "$other" '.users | any(.user == $u and .team == "physics")' "$WORK/report.json" >/dev/null \
  || fail "report users: $(jq -c '.users' "$WORK/report.json")"
ok "report: physics $(jq -c '.teams[] | select(.team == "physics") | .usage | {allocated_gpu_hours, jobs}' "$WORK/report.json") = the hand count $hand_hours"
ok "slurm companion"
