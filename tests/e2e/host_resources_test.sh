#!/usr/bin/env bash
# Host CPUs and memory (issue #24), end to end on `gpufleet up --gpus sim:4xH100-80GB` with the
# node's capacity set by flags (4 CPUs, 4 GiB, nothing reserved):
#  1. `gpufleet nodes` shows the capacity; a job asking more than the node has is refused at
#     submit, naming the resource;
#  2. jobs are counted: a 3-CPU job runs, a second 2-CPU one waits with reason cpu_mem_busy
#     although GPUs are free, and starts once the first ends; `show` lists its CPUs/memory;
#     `nodes` shows what running jobs hold of each node's (CPUS(A/T)); `show`'s Request line;
#  3. #SBATCH --cpus-per-task / --mem in a script map to them; `update` changes a pending job's;
#     what a job used (CPU time, peak host memory) is measured at its end and shown by `eff`
#     (of what it reserved), `history` (cpu_time, max_rss) and the API (host_usage);
#  4. where the agent can write cgroups (root here), a job over its --mem is killed by the
#     kernel and ends FAILED with an OUT_OF_MEMORY reason; elsewhere its log says the limits
#     are not enforced.
source "$(dirname "$0")/lib.sh"
start_up --node-cpus 4 --node-mem 4G --reserve-cpus 0 --reserve-mem 0

node=$(gf nodes --json | jq -c '.nodes[0] | [.cpus, .memory_mib]')
[ "$node" = '[4,4096]' ] || fail "node capacity: $node, want [4,4096]"
gf nodes | grep -q "4 GiB" || fail "nodes table: $(gf nodes)"
ok "nodes shows the capacity the flags set"

refused 2 "cpus: 8 CPUs requested on one node, the largest node has 4 for jobs" \
  gf submit --gpus 1 --cpus 8 -- true
refused 2 "mem: 8 GiB requested on one node, the largest node has 4 GiB for jobs" \
  gf submit --gpus 1 --mem 8G -- true
refused 2 "--mem: '4X' is not a memory size" gf submit --gpus 1 --mem 4X -- true
refused 2 "--cpus: 'two' is not a CPU count" gf submit --gpus 1 --cpus two -- true
ok "more than the node has, and malformed sizes, are refused naming the field"

a=$(submit --gpus 1 --cpus 3 --mem 1G -- sleep 300)
wait_for "job $a to run" state_is "$a" RUNNING
[ "$(job_field "$a" alloc_cpus)" = 3 ] || fail "job $a alloc_cpus: $(gf show --json "$a")"
[ "$(job_field "$a" alloc_mem_mib)" = 1024 ] || fail "job $a alloc_mem_mib"
gf show "$a" | grep -q "CPUs/memory *3 CPUs, 1 GiB memory" || fail "show $a: $(gf show "$a")"
gf show "$a" | grep -q "^Request  *1 GPU(s), type any, 3 CPUs, 1 GiB memory, time limit" || fail "show $a request: $(gf show "$a")"
[ "$(gf nodes --json | jq -c '.nodes[0] | [.cpus_in_use, .memory_mib_in_use]')" = '[3,1024]' ] ||
  fail "nodes in use: $(gf nodes --json | jq -c .nodes[0])"
gf nodes | grep -q " 3/4 *1 GiB/4 GiB " || fail "nodes table with job $a: $(gf nodes)"
b=$(submit --gpus 1 --cpus 2 -- sleep 300)
wait_for "job $b's reason" eval '[ "$(job_field '"$b"' reason_code)" = cpu_mem_busy ]'
state_is "$b" PENDING || fail "job $b started with 3 of 4 CPUs held"
job_field "$b" reason | grep -q "needs 1 GPU, 2 CPUs; its GPUs are free but not" ||
  fail "job $b reason: $(job_field "$b" reason)"
ok "a job short of CPUs waits with cpu_mem_busy while GPUs are free"

# A pending job's CPUs can be changed (update), checked like a submission.
refused 2 "cpus: 9 CPUs requested" gf update "$b" --cpus 9
gf update "$b" --cpus 1 | grep -q "1 CPUs" || fail "update $b --cpus 1"
wait_for "job $b to start with 1 CPU" state_is "$b" RUNNING
[ "$(gf nodes --json | jq -c '.nodes[0] | [.cpus_in_use, .memory_mib_in_use]')" = '[4,1024]' ] ||
  fail "nodes in use with jobs $a and $b: $(gf nodes --json | jq -c .nodes[0])"
gf cancel "$a" "$b" >/dev/null
ok "update --cpus of a pending job; it starts once it fits; nodes counts what both hold"

# What a job used (issue #24): about a second of CPU and 64 MiB touched, measured when it ends
# (its cgroup where the agent has one, else the kernel's count of its processes).
need python3
burn=$(submit --gpus 0 --cpus 1 --mem 512M -- python3 -c "import time
b = bytearray(64 * 1024 * 1024)
for i in range(0, len(b), 4096): b[i] = 1
t = time.process_time()
while time.process_time() - t < 1.0: pass")
wait_for "job $burn to end" eval "state_is $burn COMPLETED || state_is $burn FAILED"
state_is "$burn" COMPLETED || fail "job $burn: $(gf show "$burn"; gf logs --stderr "$burn")"
used=$(gf show --json "$burn" | jq -c .host_usage)
[ "$(echo "$used" | jq '.cpu_ms > 500 and .cpu_ms < 60000')" = true ] || fail "job $burn cpu: $used"
[ "$(echo "$used" | jq '.peak_memory_kib > 40960 and .peak_memory_kib < 4194304')" = true ] ||
  fail "job $burn peak memory: $used"
gf eff "$burn" | grep -q "^CPU efficiency: .* of .* core-time ([0-9]* %)" || fail "eff $burn: $(gf eff "$burn")"
gf eff "$burn" | grep -q "^Peak host memory: .* MiB of 512 MiB requested ([0-9]* %)" ||
  fail "eff $burn: $(gf eff "$burn")"
[ "$(gf eff --json "$burn" | jq '.cpu_time_s > 0.5 and .peak_host_memory_mib > 40')" = true ] ||
  fail "eff --json $burn: $(gf eff --json "$burn")"
csv=$(gf history --csv --format id,cpu_time,max_rss | grep "^$burn,")
echo "$csv" | awk -F, '{ exit !($2 > 0.5 && $3 > 40) }' || fail "history csv of $burn: $csv"
gf history --format id,cpu_time,max_rss | grep -q "^$burn .*MiB" || fail "history: $(gf history --format id,cpu_time,max_rss)"
ok "job $burn's CPU time and peak host memory: $used; eff and history show them"

cat >"$WORK/job.sh" <<'SH'
#!/bin/sh
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=2
#SBATCH --mem=512M
echo hi
SH
chmod +x "$WORK/job.sh"
s=$(cd "$WORK" && gf submit --json job.sh | jq -r .id)
[ "$(job_field "$s" cpus)" = 2 ] || fail "sbatch job cpus: $(gf show --json "$s" | jq .cpus)"
[ "$(job_field "$s" mem_mib)" = 512 ] || fail "sbatch job mem_mib"
wait_for "sbatch job $s to end" eval "state_is $s COMPLETED || state_is $s FAILED"
ok "#SBATCH --cpus-per-task and --mem map to --cpus and --mem"

# Enforcement: 512 MiB of string in a job held to 64 MiB.
oom=$(submit --gpus 0 --mem 64M -- perl -e 'my $x = "a" x (512 * 1024 * 1024); print "survived\n"')
wait_for "job $oom to end" eval "state_is $oom FAILED || state_is $oom COMPLETED"
if gf logs "$oom" 2>&1 | grep -q "not enforced"; then
  state_is "$oom" COMPLETED || fail "unlimited job $oom: $(gf show "$oom")"
  job_field "$oom" reason | grep -q "limits were not enforced" || fail "reason: $(job_field "$oom" reason)"
  ok "skipped the OOM check: no writable cgroup here ($(gf logs "$oom" 2>&1 | head -1))"
else
  state_is "$oom" FAILED || fail "job $oom over its --mem: $(gf show "$oom")"
  job_field "$oom" reason | grep -q "^OUT_OF_MEMORY: the kernel's OOM killer stopped it" ||
    fail "job $oom reason: $(job_field "$oom" reason)"
  gf eff "$oom" | grep -q "OUT_OF_MEMORY" || fail "eff $oom: $(gf eff "$oom")"
  ok "a job over its --mem is killed and ends FAILED with OUT_OF_MEMORY"
fi
