#!/usr/bin/env bash
# gpufleet tune: on a trace whose replays are worked out by hand (docs/tune.md, "A worked
# example"), the recommendation, its JSON and the settings file it writes (read back by
# `gpufleet sim --policy`); on the store of a running `gpufleet up`, read beside it; and its
# errors.
source "$(dirname "$0")/lib.sh"

# One GPU: low runs 4 h from 0; high arrives at 60 s and preempts low after min_run_time.
cat >"$WORK/h.csv" <<'CSV'
job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,class
low,0,14400,1,alice,,low
high,60,600,1,alice,,high
CSV
out=$(gf tune --trace "$WORK/h.csv" --cluster 1x1xV100 --goal "high.p95_wait<8m" 2>/dev/null)
grep -q '^\* min_run_time = "5m" *4m ok$' <<<"$out" || fail "table: $out"
grep -q '^  current *9m MISSED$' <<<"$out" || fail "current's row: $out"
grep -q '^recommended: min_run_time = "5m"$' <<<"$out" || fail "recommendation: $out"
ok "the table recommends the only candidate that meets the bound"

out=$(gf tune --trace "$WORK/h.csv" --cluster 1x1xV100 --goal "high.p95_wait<30m" \
  --goal "minimize avg_jct" --json --write "$WORK/tuned.toml" 2>/dev/null)
jq -e '.recommended == "min_run_time = \"5m\"" and .meets_all
       and (.candidates[] | select(.name == "current") | .figures[1].value) == 8370' \
  <<<"$out" >/dev/null || fail "json: $out"
grep -q '^min_run_time = "5m"$' "$WORK/tuned.toml" || fail "settings file: $(cat "$WORK/tuned.toml")"
out=$(gf sim --trace "$WORK/h.csv" --cluster 1x1xV100 --policy "$WORK/tuned.toml" --json 2>/dev/null)
jq -e '(.classes[] | select(.class == "high") | .queueing_s.p95) == 240' <<<"$out" >/dev/null ||
  fail "the written policy replayed: $out"
ok "--json and --write; gpufleet sim reads the written file and replays high's 4-minute wait"

if gf tune --trace "$WORK/h.csv" --cluster 1x1xV100 --goal "high.p95_wait<1m" \
  --write "$WORK/none.toml" >"$WORK/out" 2>"$WORK/err"; then
  fail "a goal nothing meets exited 0"
fi
grep -q "no candidate meets every goal" "$WORK/out" || fail "closest: $(cat "$WORK/out")"
grep -q "nothing written" "$WORK/err" && [ ! -e "$WORK/none.toml" ] || fail "wrote: $(cat "$WORK/err")"
err=$(gf tune --trace "$WORK/h.csv" --cluster 1x1xV100 --goal "urgent.p95_wait<1h" 2>&1 >/dev/null) &&
  fail "an unknown class exited 0"
grep -q "goal 'urgent.p95_wait<1h': no class 'urgent'; the classes are high, normal, low" <<<"$err" ||
  fail "unknown class: $err"
err=$(gf tune --trace "$WORK/h.csv" --cluster 1x1xV100 --goal "p95_wait<soon" 2>&1 >/dev/null) &&
  fail "a bad value exited 0"
grep -q "goal 'p95_wait<soon': 'soon' is not a duration" <<<"$err" || fail "bad value: $err"
ok "nothing written when nothing meets the goals; errors name the goal"

# The store of a running gpufleet up: its finished jobs and its node, read beside it.
start_up
high=$(submit --gpus 1 --priority high -- true)
low=$(submit --gpus 2 --priority low -- true)
wait_for "job $high to complete" state_is "$high" COMPLETED
wait_for "job $low to complete" state_is "$low" COMPLETED
out=$(gf tune --data-dir "$WORK/data" --goal "high.p95_wait<1h" --goal "maximize utilisation" \
  --json 2>"$WORK/err") || fail "tune on the store: $(cat "$WORK/err")"
jq -e '.input.jobs == 2 and .input.nodes == 1 and .input.gpus == 4 and .meets_all
       and .recommended == "current"' <<<"$out" >/dev/null || fail "store json: $out"
gf nodes >/dev/null || fail "gpufleet up stopped answering after the tune"
ok "the store of a running gpufleet up: 2 jobs on its node of 4 GPUs"
