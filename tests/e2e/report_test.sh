#!/usr/bin/env bash
# The monthly report end to end (issue #9) on the stand-in NVML library (tests/fakenvml):
# a job on GPU 0 whose energy counter jumps by a known amount, a CPU job that fails, GPU 1
# never allocated. `gpufleet report --period <this month>` must show, in JSON: the energy of the
# cluster's closed GPU-minutes and of the team equal to the counter jump (and its price), the
# team's GPU-hours equal to the job's run, the failure, GPU 1 idle with a recommendation; the
# HTML file well-formed, self-contained, with its charts; the CSV and text with their sections.
source "$(dirname "$0")/lib.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
need python3
SCENARIO=$WORK/scenario.json
export GF_FAKENVML_SCENARIO=$SCENARIO
me=$(id -un)
JUMP_MJ=720000000  # 720 kJ: 0.2 kWh

# write_scenario UTIL0 ENERGY0: GPU 0's utilisation and energy counter (mJ); GPU 1 runs at a
# steady 30 % (so that placement, which spreads load, takes GPU 0) and its counter stands still.
write_scenario() {
  cat >"$SCENARIO.tmp" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-rep-0", "memory_total_mib": 81559,
  "memory_used_mib": 2000, "util_gpu": $1, "temperature_c": 50, "power_mw": 300000,
  "energy_mj": $2},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-rep-1", "memory_total_mib": 81559,
  "memory_used_mib": 0, "util_gpu": 30, "temperature_c": 40, "power_mw": 80000,
  "energy_mj": 5000}]}
JSON
  mv "$SCENARIO.tmp" "$SCENARIO"
}
write_scenario 0 1000000

# The whole test must fall in one calendar month (UTC): started in the last 150 s of a month, it
# waits for the next one.
month_left=$(( $(date -u -d "$(date -u +%Y-%m-01) +1 month" +%s) - $(date -u +%s) ))
[ "$month_left" -ge 150 ] || sleep $((month_left + 1))

cat >"$WORK/gpufleet.toml" <<TOML
[energy]
price_per_kwh = 0.25
currency = "EUR"
co2_g_per_kwh = 400

[team.cv]
members = ["$me"]
gpu_hour_budget = 100
TOML

"$GPUFLEET" up --config "$WORK/gpufleet.toml" --gpus "nvml:$FAKENVML" --data-dir "$WORK/data" \
  --listen-socket "$GPUFLEET_SOCKET" --port -1 --node-name rep-node --sample-interval 1s \
  --kill-grace 2 >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" gf nodes
MONTH=$(date -u +%Y-%m)
report() { gf report --period "$MONTH" --format json; }
rj() { report | jq -r "$1"; }

# 1. A CPU job that fails, and a GPU job whose GPU's energy counter jumps while it runs.
bad=$(submit --gpus 0 -- false)
wait_for "job $bad to fail" state_is "$bad" FAILED
id=$(submit --gpus 1 --name "<script>alert(1)</script>" -- sleep 300)
wait_for "job $id to run" state_is "$id" RUNNING
[ "$(job_field "$id" 'gpu_uuids[0]')" = GPU-rep-0 ] \
  || fail "job $id allocation: $(gf show --json "$id")"
samples_counted() { [ "$(job_field "$id" usage.samples)" -ge 1 ] 2>/dev/null; }
wait_for "a sample of job $id" samples_counted
write_scenario 80 $((1000000 + JUMP_MJ))
job_energy_is() { [ "$(job_field "$id" usage.energy_mj)" = "$JUMP_MJ" ]; }
wait_for "job $id's energy to be the counter jump" job_energy_is
ok "job $id on GPU 0: energy $JUMP_MJ mJ"

# 2. The minute holding the jump closes once a sample of the next minute arrives (≤ 60 s).
deadline=$((SECONDS + 90))
until [ "$(rj .cluster.figures.energy.energy_mj)" = "$JUMP_MJ" ]; do
  [ $SECONDS -lt $deadline ] || fail "report energy: $(report | jq -c .cluster.figures)"
  sleep 1
done
gf cancel "$id" >/dev/null
wait_for "job $id cancelled" state_is "$id" CANCELLED
report >"$WORK/report.json" || fail "gpufleet report --format json"
r() { jq -r "$@" "$WORK/report.json"; }
[ "$(r .period)" = "$MONTH" ] || fail "period: $(r .period)"
[ "$(r .cluster.gpus)" = 2 ] || fail "cluster: $(r -c .cluster)"
jq -e '.cluster.figures | .minutes_allocated > 0 and .minutes_observed >= 2' \
  "$WORK/report.json" >/dev/null \
  || fail "minutes: $(r -c .cluster.figures)"
# Priced at 0.25 EUR/kWh and 400 g/kWh: 0.2 kWh, 0.05 EUR, 0.08 kg.
jq -e '.cluster.figures.energy | (.energy_kwh - 0.2 | fabs) < 1e-9 and (.cost - 0.05 | fabs) < 1e-9
       and (.co2_kg - 0.08 | fabs) < 1e-9 and .currency == "EUR"' "$WORK/report.json" >/dev/null \
  || fail "cluster energy: $(r -c .cluster.figures.energy)"
ok "cluster: $(r .cluster.figures.minutes_observed) GPU-minutes, energy = the counter jump, priced"

# 3. Team cv: its GPU-hours are the job's run (start to end, cut where the figures end: the start
#    of the report's minute), its energy the jump; one failure. The cluster's GPU-hours, from the
#    GPU minutes' samples taken while the job held GPU 0, are the same time within a sample or two
#    at each end (1 s samples).
run_hours=$(gf show --json "$id" | jq --argjson until "$(r .covered_until_ms)" \
  '(([.end_time_ms, $until] | min) - .start_time_ms) / 3600000')
jq -e --argjson h "$run_hours" '(.cluster.figures.allocated_gpu_hours - $h | fabs) < 4 / 3600' \
  "$WORK/report.json" >/dev/null \
  || fail "cluster GPU-hours are not the run's $run_hours h: $(r -c .cluster.figures)"
ok "cluster: $(r .cluster.figures.allocated_gpu_hours) GPU-h allocated, the run's $run_hours h" 
jq -e --argjson h "$run_hours" --argjson e "$JUMP_MJ" '.teams[] | select(.team == "cv")
   | (.usage.allocated_gpu_hours - $h | fabs) < 1e-9 and .usage.energy.energy_mj == $e
     and .events.failed == 1 and .budget_gpu_hours == 100
     and (.budget_used_pct - $h | fabs) < 1e-9 and .usage.jobs >= 1' \
  "$WORK/report.json" >/dev/null \
  || fail "team cv (run $run_hours h): $(r -c '.teams')"
jq -e --arg me "$me" '.users | length == 1 and .[0].user == $me and .[0].team == "cv"' \
  "$WORK/report.json" >/dev/null || fail "users: $(r -c .users)"
[ "$(r .events.failed)" = 1 ] || fail "events: $(r -c .events)"
jq -e '.queue | any(.priority == "normal" and .runs >= 1)' "$WORK/report.json" >/dev/null \
  || fail "queue: $(r -c .queue)"
ok "team cv: $(r '.teams[0].usage.allocated_gpu_hours') GPU-h = the run, energy = the jump"

# 4. GPU 1 was never allocated: idle, with a recommendation naming it; GPU 0 was used at most 80 %.
jq -e '.gpus[] | select(.uuid == "GPU-rep-1") | .idle and .figures.minutes_allocated == 0' \
  "$WORK/report.json" >/dev/null || fail "GPU 1: $(r -c '.gpus')"
jq -e '.gpus[] | select(.uuid == "GPU-rep-0") | .figures.used_pct > 0 and .figures.used_pct <= 80' \
  "$WORK/report.json" >/dev/null || fail "GPU 0: $(r -c '.gpus')"
jq -e '.recommendations | any(.kind == "idle_gpu" and .subject == "rep-node/1")' \
  "$WORK/report.json" >/dev/null || fail "recommendations: $(r -c .recommendations)"
ok "GPU 1 idle: $(r '.recommendations[] | select(.kind == "idle_gpu") | .message')"

# 5. HTML: one well-formed file (a strict XML parse), no script, no external resource, the job's
#    name escaped, the charts inline (the top wasters' only with a job in the waste list).
gf report --period "$MONTH" --format html --output "$WORK/report.html" 2>/dev/null \
  || fail "gpufleet report --format html"
python3 - "$WORK/report.html" <<'PY' || fail "report.html is not well-formed or not self-contained"
import sys, xml.etree.ElementTree as ET
text = open(sys.argv[1], encoding="utf-8").read()
root = ET.fromstring(text.split("\n", 1)[1])  # after <!DOCTYPE html>
svg = "{http://www.w3.org/2000/svg}svg"
charts = {el.get("id"): el for el in root.iter("section") if el.get("class") == "chart"}
assert sorted(charts) == ["chart-days", "chart-teams", "chart-waste"], sorted(charts)
# The days and the team drawn; the top wasters only when the file's waste table has a job (the
# same report: a JSON fetched apart could hold a minute more).
waste = [t for t in root.iter("table") if t.get("id") == "waste"][0]
want = {"chart-days": 1, "chart-teams": 1, "chart-waste": 1 if list(waste.iter("td")) else 0}
for name, section in charts.items():
    assert len(list(section.iter(svg))) == want[name], f"{name}: {want[name]} charts wanted"
assert not any(el.tag == "script" for el in root.iter()), "no script element"
for el in root.iter():
    for name in ("src", "href"):
        assert name not in el.attrib, f"external resource in <{el.tag}>"
PY
# The job's name appears only escaped (in the waste table, if its first minute was idle).
! grep -q "<script>" "$WORK/report.html" || fail "an unescaped <script> in report.html"
ok "report.html: well-formed, its inline SVG charts, nothing external"

# 6. CSV and text: every section, with its header.
gf report --period "$MONTH" --format csv >"$WORK/report.csv" || fail "gpufleet report --format csv"
for section in cluster nodes gpus days teams users waste queue events recommendations; do
  grep -q "^$section"$'\r'"\$" "$WORK/report.csv" || fail "no CSV section $section"
done
python3 - "$WORK/report.csv" <<'PY' || fail "report.csv does not parse as CSV"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="", encoding="utf-8")))
assert rows[0] == ["cluster"] and rows[1][:2] == ["NODES", "GPUS"], rows[:2]
PY
gf report --period "$MONTH" >"$WORK/report.txt" || fail "gpufleet report (text)"
grep -q "^Recommendations" "$WORK/report.txt" || fail "text: $(cat "$WORK/report.txt")"
ok "CSV sections and the text report"

# 7. Bad input: a malformed month is refused with the fix.
out=$(gf report --period 2026-13 2>&1) && fail "accepted --period 2026-13"
grep -q "use YYYY-MM" <<<"$out" || fail "message: $out"
ok "--period 2026-13 refused: $out"
