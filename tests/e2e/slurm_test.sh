#!/usr/bin/env bash
# Slurm batch scripts run unchanged (issue #23): `gpufleet submit job.sh` reads its #SBATCH
# lines (GPUs, time limit, name, output file with %x and %j, array with %A_%a), warns on one line
# of the directives it does not honour, sets SLURM_JOB_ID and its companions in the job, and
# refuses a malformed directive naming it.
source "$(dirname "$0")/lib.sh"

start_up  # 4 simulated GPUs on node e2e-node

mkdir -p "$WORK/run"
cd "$WORK/run"
cat > train.sh <<'SCRIPT'
#!/bin/bash
#SBATCH --job-name=sbatch-e2e
#SBATCH --gres=gpu:2
#SBATCH --time=00:10:00
#SBATCH --output=out-%x-%j.log
#SBATCH --mem=4G
#SBATCH --mem-bind=local

echo "job=$SLURM_JOB_ID gf=$GPUFLEET_JOB_ID ntasks=$SLURM_NTASKS procid=$SLURM_PROCID nodes=$SLURM_JOB_NODELIST name=$SLURM_JOB_NAME"
echo "gpus=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)"
echo "to stderr" >&2
SCRIPT

out=$(gf submit train.sh 2>"$WORK/warn")
id=$(echo "$out" | sed -n 's/^Submitted job \([0-9]*\)$/\1/p')
[ -n "$id" ] || fail "submit said: $out $(cat "$WORK/warn")"
[ "$(wc -l < "$WORK/warn")" = 1 ] || fail "want one warning line: $(cat "$WORK/warn")"
grep -q "#SBATCH directives not honoured: --mem-bind=local (gpufleet reserves whole GPUs" \
  "$WORK/warn" || fail "warning: $(cat "$WORK/warn")"
[ "$(job_field "$id" mem_mib)" = 4096 ] || fail "--mem=4G: mem_mib $(job_field "$id" mem_mib)"
ok "job $id submitted from an #SBATCH script; --mem honoured, --mem-bind named in the one warning line"

wait_for "job $id to complete" state_is "$id" COMPLETED
[ "$(job_field "$id" gpus)" = 2 ] || fail "gpus: $(job_field "$id" gpus)"
[ "$(job_field "$id" time_limit_s)" = 600 ] || fail "time limit: $(job_field "$id" time_limit_s)"
[ "$(job_field "$id" name)" = sbatch-e2e ] || fail "name: $(job_field "$id" name)"
log="$WORK/run/out-sbatch-e2e-$id.log"
[ -f "$log" ] || fail "no output file $log: $(ls "$WORK/run")"
grep -qx "job=$id gf=$id ntasks=1 procid=0 nodes=e2e-node name=sbatch-e2e" "$log" ||
  fail "SLURM_* variables: $(cat "$log")"
grep -qx "gpus=2" "$log" || fail "GPUs: $(cat "$log")"
grep -qx "to stderr" "$log" || fail "stderr did not go to the output file: $(cat "$log")"
gf logs "$id" 2>&1 | grep -q "job $id writes its output to its own files: out-%x-%j.log (--output), in $WORK/run" ||
  fail "logs: $(gf logs "$id" 2>&1)"
ok "job $id: 2 GPUs, 10 min limit, SLURM_JOB_ID=$id, output in out-sbatch-e2e-$id.log (gpufleet logs says so)"

cat > sweep.sh <<'SCRIPT'
#!/bin/sh
#SBATCH --array=0-1
#SBATCH --gpus=1
#GPUFLEET --name=sweep
echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID"
SCRIPT
out=$(gf submit sweep.sh 2>"$WORK/warn")
arr=$(echo "$out" | sed -n 's/^Submitted array job \([0-9]*\) .*/\1/p')
[ -n "$arr" ] || fail "submit said: $out"
[ ! -s "$WORK/warn" ] || fail "unexpected warning: $(cat "$WORK/warn")"
for i in 0 1; do
  wait_for "task $i to complete" state_is "$((arr + i))" COMPLETED
  f="$WORK/run/slurm-${arr}_$i.out"
  [ "$(cat "$f" 2>/dev/null)" = "task $i of $arr" ] || fail "$f: $(cat "$f" 2>&1)"
done
[ "$(job_field "$arr" name)" = sweep ] || fail "#GPUFLEET --name did not win: $(job_field "$arr" name)"
ok "array $arr wrote slurm-${arr}_0.out and slurm-${arr}_1.out (sbatch's default name)"

printf '#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH --time=1:2:3:4\ntrue\n' > bad.sh
set +e
err=$(gf submit bad.sh 2>&1); rc=$?
set -e
[ "$rc" = 2 ] || fail "a malformed directive: exit $rc, want 2 ($err)"
echo "$err" | grep -q "bad.sh line 3: #SBATCH --time=1:2:3:4: '1:2:3:4' is not a Slurm time" ||
  fail "error: $err"
ok "a malformed #SBATCH --time is refused, naming the line and the directive"

# --mail-type/--mail-user: a subscription to the job, gone once the job has ended.
cat > mailed.sh <<'SCRIPT'
#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --mail-type=END,BEGIN
#SBATCH --mail-user=ana@example.org
while [ ! -e go ]; do sleep 0.05; done
SCRIPT
out=$(gf submit mailed.sh 2>"$WORK/warn")
mailed=$(echo "$out" | sed -n 's/^Submitted job \([0-9]*\)$/\1/p')
[ -n "$mailed" ] || fail "submit said: $out"
grep -q "BEGIN: gpufleet has no job-start notification" "$WORK/warn" || fail "warning: $(cat "$WORK/warn")"
subs=$(gf notify list --json)
jq -e --argjson j "$mailed" '.subscriptions | length == 1 and .[0].scope == "job" and .[0].job == $j
    and .[0].target == "ana@example.org" and .[0].events == ["job_end", "job_failed"]' <<<"$subs" >/dev/null \
  || fail "mail subscription: $subs"
touch go
wait_for "job $mailed to complete" state_is "$mailed" COMPLETED
no_subs() { [ "$(gf notify list --json | jq '.subscriptions | length')" = 0 ]; }
wait_for "job $mailed's subscription to go with it" no_subs
ok "--mail-type=END --mail-user made a subscription to job $mailed, removed once it ended"
