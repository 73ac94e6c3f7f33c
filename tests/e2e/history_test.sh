#!/usr/bin/env bash
# Job history and efficiency as a Slurm user asks for them (issue #24), the sacct and seff rows
# of docs/slurm.md's command map: `gpufleet history` with its filters (--state, --since,
# --until, --format) as a table, CSV and JSON; `gpufleet eff JOB` of an ended and a running
# job; bad input named with its fix. With root, a second user: others' jobs stay out of sight.
source "$(dirname "$0")/lib.sh"

start_up  # 4 simulated GPUs

done_id=$(gf submit --json --gpus 2 --time 1h --name done-job -- sleep 1 | jq -r .id)
failed_id=$(gf submit --json --gpus 1 --name failed-job -- sh -c 'exit 3' | jq -r .id)
wait_for "job $done_id to complete" state_is "$done_id" COMPLETED
wait_for "job $failed_id to fail" state_is "$failed_id" FAILED
running_id=$(gf submit --json --gpus 1 --name running-job -- sh -c "while [ ! -e $WORK/stop ]; do sleep 0.05; done" | jq -r .id)
wait_for "job $running_id to run" state_is "$running_id" RUNNING

# ---- history (sacct): every state, newest first
gf history >"$WORK/table"
head -1 "$WORK/table" | grep -q "^JOBID  NAME .*STATE.*EXIT.*ELAPSED.*GPU-H.*UTIL.*PEAK MEM.*ENERGY.*NODE" ||
  fail "history header: $(head -1 "$WORK/table")"
[ "$(sed -n 2p "$WORK/table" | awk '{print $1}')" = "$running_id" ] || fail "not newest first: $(cat "$WORK/table")"
grep -E "^$done_id +done-job .*COMPLETED +0 .* e2e-node" "$WORK/table" >/dev/null || fail "done row: $(cat "$WORK/table")"
grep -E "^$failed_id +failed-job .*FAILED +3 " "$WORK/table" >/dev/null || fail "failed row: $(cat "$WORK/table")"
ok "history lists running, completed and failed jobs, newest first, with exit codes and node"

[ "$(gf history --state F --format id,state,exit --csv)" = "$(printf 'id,state,exit\n%s,FAILED,3' "$failed_id")" ] ||
  fail "history --state F --csv: $(gf history --state F --format id,state,exit --csv)"
[ "$(gf history --state COMPLETED,FAILED --json | jq -c '[.[].id]')" = "[$failed_id,$done_id]" ] ||
  fail "history --state COMPLETED,FAILED --json: $(gf history --state COMPLETED,FAILED --json | jq -c '[.[].id]')"
[ "$(gf history --since now --format id --csv | tail -n +2)" = "$running_id" ] ||
  fail "history --since now: $(gf history --since now --format id --csv)"
[ "$(gf history --until 2000-01-01 --format id --csv | wc -l)" = 1 ] || fail "history --until 2000-01-01"
gf history --state CD --format id,gpus,elapsed,gpu_hours,util,peak_mem,energy --csv | tail -n +2 |
  grep -Eq "^$done_id,2,[0-9]+,[0-9.]+,[0-9.]*,[0-9]*,[0-9.]*$" ||
  fail "history --csv figures: $(gf history --state CD --format id,gpus,elapsed,gpu_hours,util,peak_mem,energy --csv)"
[ "$(gf history --limit 1 --format id --csv | tail -n +2)" = "$running_id" ] || fail "history --limit 1"
ok "history --state (long and short names), --since, --until, --format, --csv, --json and --limit"

refused 2 "--since: '2026-13-01' is not a time; use a UTC date" gf history --since 2026-13-01
refused 2 "--state: unknown state 'DONE'; use PENDING (PD)" gf history --state DONE
refused 2 "--format: unknown field 'gpuh'; use a comma-separated list of id," gf history --format id,gpuh
ok "a bad --since, --state or --format is refused, naming the flag and the forms"

# ---- eff (seff): held vs used, and advice
gf eff "$done_id" >"$WORK/eff"
grep -q "^State: *COMPLETED  exit code 0" "$WORK/eff" || fail "eff state: $(cat "$WORK/eff")"
grep -q "^Elapsed: .* of time limit 1h (" "$WORK/eff" || fail "eff elapsed: $(cat "$WORK/eff")"
grep -q "^GPUs: *2 on e2e-node" "$WORK/eff" || fail "eff GPUs: $(cat "$WORK/eff")"
grep -q "^GPU-hours: .* allocated, " "$WORK/eff" || fail "eff GPU-hours: $(cat "$WORK/eff")"
grep -q "^GPU memory: .* on the card" "$WORK/eff" || fail "eff memory: $(cat "$WORK/eff")"
grep -q "^Advice: ." "$WORK/eff" || fail "eff advice: $(cat "$WORK/eff")"
gf eff "$running_id" | grep -q "(so far, running)" || fail "eff of a running job: $(gf eff "$running_id")"
refused 1 "not found" gf eff 999999
ok "eff shows state, exit code, elapsed of the limit, GPU-hours, memory, energy and advice"
touch "$WORK/stop"
wait_for "job $running_id to complete" state_is "$running_id" COMPLETED

# ---- another user: only their own jobs
other_user || exit 0
theirs=$(as_other submit --json --gpus 1 --workdir /tmp -- true | jq -r .id)
wait_for "their job to complete" state_is "$theirs" COMPLETED
[ "$(as_other history --format id --csv | tail -n +2)" = "$theirs" ] ||
  fail "$other's history: $(as_other history --format id --csv)"
refused 1 "user" as_other history --user root
refused 1 "not found" as_other eff "$done_id"
gf history --user "$other" --format id --csv | grep -qx "$theirs" || fail "root's history --user $other"
ok "$other sees only their own job $theirs in history; root's jobs and eff are out of reach"
