#!/usr/bin/env bash
# gpufleet sim: a tiny inline trace with exact answers (both formats, a policy file, the
# per-job CSV), the same seed giving the same output, and clear errors for bad input. Runs no
# `gpufleet up`: the simulator is self-contained.
source "$(dirname "$0")/lib.sh"

# Tiresias format: a holds both GPUs 0-100; b and c then start together at 100.
cat >"$WORK/t.csv" <<'CSV'
job_id,num_gpu,submit_time,iterations,model_name,duration,interval
a,2,0,1,resnet50,100,0
b,1,10,1,resnet50,50,0
c,1,20,1,resnet50,30,0
CSV
out=$(gf sim --trace "$WORK/t.csv" --cluster 1x2xV100 --json --jobs-csv "$WORK/jobs.csv")
jq -e '.finished == 3 and .jct_s.median == 110 and .makespan_s == 150
       and (.jct_s.avg * 3 | round) == 350 and .queueing_s.avg * 3 == 170' <<<"$out" >/dev/null ||
  fail "tiresias trace summary: $out"
grep -qx 'b,,,1,10.000,100.000,150.000,140.000,90.000,0,completed' "$WORK/jobs.csv" ||
  fail "jobs csv: $(cat "$WORK/jobs.csv")"
ok "3 jobs on 1x2: exact JCTs and per-job CSV"

# Normalized format with teams, under a FIFO policy file: c may not pass the waiting b.
cat >"$WORK/n.csv" <<'CSV'
job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,status
a,0,100,1,alice,vision,Pass
b,10,50,2,bob,speech,Pass
c,20,10,0.5,carol,vision,Pass
CSV
cat >"$WORK/fifo.toml" <<'TOML'
[scheduler]
backfill = false
preemption = false
TOML
out=$(gf sim --trace "$WORK/n.csv" --cluster 1x2xV100 --policy "$WORK/fifo.toml" --no-fair-share --json)
jq -e '.makespan_s == 160 and .jct_s.p99 > 139 and ([.teams[].team] == ["speech", "vision"])' \
  <<<"$out" >/dev/null || fail "fifo summary: $out"
text=$(gf sim --trace "$WORK/n.csv" --cluster 1x2xV100 --policy "$WORK/fifo.toml" 2>/dev/null)
grep -q '^utilisation  *65.6 % of GPU time' <<<"$text" || fail "table: $text"
ok "normalized trace under a FIFO policy file: head-of-line blocking, per-team table"

# Same seed, same output; another seed, another.
one=$(gf sim --synthetic 150 --seed 5 --cluster 2x8xA100 --json 2>/dev/null)
two=$(gf sim --synthetic 150 --seed 5 --cluster 2x8xA100 --json 2>/dev/null)
three=$(gf sim --synthetic 150 --seed 6 --cluster 2x8xA100 --json 2>/dev/null)
[ "$one" = "$two" ] || fail "same seed, different output"
[ "$one" != "$three" ] || fail "another seed, same output"
[ "$(jq .jobs <<<"$one")" = 150 ] || fail "synthetic job count: $one"
ok "synthetic: same seed same output"

# --compare: one row per policy on one trace; --json an array; --svg one line per policy.
# On one GPU: a runs 0-100; FIFO then runs b (50 s) 100-150 and c (10 s) 150-160: JCTs 100,
# 140, 140. SJF runs c first, 100-110, then b 110-160: JCTs 100, 150, 90.
cat >"$WORK/s.csv" <<'CSV'
job_id,num_gpu,submit_time,iterations,model_name,duration,interval
a,1,0,1,resnet50,100,0
b,1,10,1,resnet50,50,0
c,1,20,1,resnet50,10,0
CSV
printf '[scheduler]\norder = "sjf"\n' >"$WORK/sjf.toml"
out=$(gf sim --trace "$WORK/s.csv" --cluster 1x1xV100 --compare "$WORK/fifo.toml" "$WORK/sjf.toml" \
  --json --svg "$WORK/cmp.svg" 2>/dev/null)
jq -e 'map(.policy) == ["fifo", "sjf"] and (.[0].jct_s.avg * 3 | round) == 380
       and (.[1].jct_s.avg * 3 | round) == 340' <<<"$out" >/dev/null || fail "compare json: $out"
# The series: 1 s steps over the 160 s; the GPU always busy; 1 job waiting at 15 s, 2 at 25 s.
jq -e '.[0].series.step_s == 1 and (.[0].series.utilisation | length) == 160
       and (.[0].series.utilisation | min) == 1 and .[0].series.queue[15] == 1
       and .[0].series.queue[25] == 2' <<<"$out" >/dev/null || fail "series: $out"
table=$(gf sim --trace "$WORK/s.csv" --cluster 1x1xV100 --compare "$WORK/fifo.toml" "$WORK/sjf.toml" 2>/dev/null)
grep -qE '^fifo +100\.0 +127 ' <<<"$table" && grep -qE '^sjf +100\.0 +113 ' <<<"$table" ||
  fail "compare table: $table"
head -c 5 "$WORK/cmp.svg" | grep -q '<svg' || fail "svg: $(head -c 200 "$WORK/cmp.svg")"
[ "$(grep -o '<polyline' "$WORK/cmp.svg" | wc -l)" = 4 ] || fail "svg: want 2 charts x 2 lines"
grep -q '<title>sjf</title>' "$WORK/cmp.svg" || fail "svg lacks the sjf line"
if command -v xmllint >/dev/null; then
  xmllint --noout "$WORK/cmp.svg" || fail "svg is not well-formed XML"
fi
ok "--compare: one row per policy, JSON array with the time series, --svg"

# A cluster file: two 1-GPU nodes of different models run a and b side by side.
printf '[[node]]\nname = "x"\ngpus = 1\nmodel = "A100"\n[[node]]\nname = "y"\ngpus = 1\nmodel = "L4"\n' \
  >"$WORK/c.toml"
out=$(gf sim --trace "$WORK/s.csv" --cluster "$WORK/c.toml" --json 2>/dev/null)
jq -e '.total_gpus == 2 and .makespan_s == 100' <<<"$out" >/dev/null || fail "cluster file: $out"
ok "--cluster FILE.toml"

# --confine-teams: with x labelled team p's and y team q's, p's two jobs run one after the
# other on x; pooled, side by side. Team r has no node: rejected.
printf '[[node]]\nname = "x"\ngpus = 1\nmodel = "A100"\nlabels = { vc = "p" }\n[[node]]\nname = "y"\ngpus = 1\nmodel = "A100"\nlabels = { vc = "q" }\n' \
  >"$WORK/vc.toml"
printf 'job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,status\n1,0,100,1,,p,\n2,0,100,1,,p,\n3,0,5,1,,r,\n' \
  >"$WORK/vc.csv"
out=$(gf sim --trace "$WORK/vc.csv" --cluster "$WORK/vc.toml" --confine-teams vc --json 2>/dev/null)
jq -e '.makespan_s == 200 and .rejected == 1' <<<"$out" >/dev/null || fail "confined: $out"
out=$(gf sim --trace "$WORK/vc.csv" --cluster "$WORK/vc.toml" --json 2>/dev/null)
jq -e '.rejected == 0 and .jct_s.p99 <= 105' <<<"$out" >/dev/null || fail "pooled: $out"
ok "--confine-teams: each team on its own nodes"

# --node-mtbf: failures drawn from the seed requeue jobs; the same seed, the same run.
one=$(gf sim --synthetic 300 --seed 4 --cluster 4x8xA100 --node-mtbf 1d --node-repair 2h --json 2>/dev/null)
two=$(gf sim --synthetic 300 --seed 4 --cluster 4x8xA100 --node-mtbf 1d --node-repair 2h --json 2>/dev/null)
[ "$one" = "$two" ] || fail "--node-mtbf: the same seed gave two runs"
jq -e '.node_failures > 0 and .finished == 300' <<<"$one" >/dev/null || fail "--node-mtbf: $one"
ok "--node-mtbf: node failures requeue jobs, deterministic for the seed"

# GPU sharing, inflation: shares of 0.3, 0.8, 0.2 and 0.7 on two shared GPUs, never leaving.
# The fullest GPU that fits (stock) places all four; first-fit puts 0.2 beside 0.3 and 0.7
# fits nowhere: 35 % of the capacity unallocated, 65 % of the demand placed, 20 % fragmented.
cat >"$WORK/shares.csv" <<'CSV'
job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,status
a,0,,0.3,,,
b,1,,0.8,,,
c,2,,0.2,,,
d,3,,0.7,,,
CSV
printf '[sharing]\nplacement = "first-fit"\n' >"$WORK/first-fit.toml"
printf '[sharing]\nplacement = "fullest"\n' >"$WORK/fullest.toml"
out=$(gf sim --trace "$WORK/shares.csv" --cluster 1x2xT4:shared --no-departures \
  --compare "$WORK/fullest.toml" "$WORK/first-fit.toml" 2>/dev/null)
grep -qF '| 100 % | 0.0 % | 100.0 % (100.0 %) | 0.0 % | 35.0 % | 65.0 % (65.0 %) | 20.0 % |' \
  <<<"$out" || fail "inflation table: $out"
grep -qF 'first-fit: 4 jobs: 3 placed, 1 not placed' <<<"$out" || fail "inflation counts: $out"
out=$(gf sim --trace "$WORK/shares.csv" --cluster 1x2xT4 --gpu-sharing shared --no-departures \
  --policy "$WORK/first-fit.toml" --json 2>/dev/null)
jq -e '.running == 3 and .inflation[-1].step_pct == 100 and .inflation[-1].fragmented_pct == 20' \
  <<<"$out" >/dev/null || fail "inflation json: $out"
ok "GPU sharing: --no-departures, fullest-fit beside first-fit, --gpu-sharing"

# Errors: the file, line and column; the flag; exit 1.
printf 'job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,1,m,100,0\n1,2,-4,1,m,5,0\n' >"$WORK/bad.csv"
expect_error() {
  local want=$1; shift
  local err rc=0
  err=$(gf sim "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 1 ] || fail "gf sim $* exited $rc, want 1"
  grep -qF -- "$want" <<<"$err" || fail "gf sim $*: '$err' lacks '$want'"
}
expect_error "bad.csv:3: column 3 (submit_time): '-4' is not a submit time" \
  --trace "$WORK/bad.csv" --cluster 1x2xV100
expect_error "cluster: '4xV100' is not NODESxGPUSxMODEL" --synthetic 3 --cluster 4xV100
expect_error "give either --trace FILE or --synthetic N" --cluster 1x2xV100
expect_error "does not exist" --trace "$WORK/none.csv" --cluster 1x2xV100
expect_error "format: 'x' is not a trace format" --trace "$WORK/t.csv" --format x --cluster 1x1xA
expect_error "--policy: not with --compare" --trace "$WORK/s.csv" --cluster 1x1xV100 \
  --policy "$WORK/fifo.toml" --compare "$WORK/sjf.toml"
expect_error "[scheduler] order: 'lifo' is not an order" --trace "$WORK/s.csv" --cluster 1x1xV100 \
  --compare "$WORK/fifo.toml" <(printf '[scheduler]\norder = "lifo"\n')
expect_error "--node-mtbf: duration 'soon' is not a duration" --synthetic 3 --cluster 1x1xA \
  --node-mtbf soon
expect_error "--gpu-sharing: 'half' is not a sharing mode here" --synthetic 3 --cluster 1x1xA \
  --gpu-sharing half
expect_error "--inflate-to: a multiple of the cluster's GPUs above 0 (e.g. 1.3), with --no-departures" \
  --synthetic 3 --cluster 1x1xA --inflate-to 1.3
expect_error "[sharing] placement: 'best' is not a placement; use fullest or first-fit" \
  --synthetic 3 --cluster 1x1xA --policy <(printf '[sharing]\nplacement = "best"\n')
ok "bad input: clear errors, exit 1"
