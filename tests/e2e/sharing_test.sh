#!/usr/bin/env bash
# GPU sharing (issue #7) on `gpufleet up` with three simulated H100s: an admin puts GPUs 0 and 1
# in shared mode; four --gpu-share 0.25 jobs fill GPU 0 and the fifth opens GPU 1; each job sees
# its share and memory limit; a whole-GPU job goes to the exclusive GPU 2 only; `gpus` lists a
# shared GPU's holders; a mode change on a held GPU waits until its job ends; bad requests are
# refused with the field named.
source "$(dirname "$0")/lib.sh"

"$GPUFLEET" up --gpus sim:3xH100-80GB --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" \
  --port 0 --kill-grace 2 --node-name share-node >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" "$GPUFLEET" nodes

uuid_of() { gf gpus --json | jq -r ".gpus[] | select(.index == $1) | .uuid"; }
mode_of() { gf gpus --json | jq -r ".gpus[] | select(.index == $1) | .sharing"; }
for g in 0 1; do
  gf gpu mode share-node "$g" shared | grep -q "is shared" || fail "gpu mode $g shared"
done
[ "$(mode_of 0)" = shared ] && [ "$(mode_of 2)" = exclusive ] || fail "modes: $(gf gpus --json | jq -c '[.gpus[].sharing]')"
ok "GPUs 0 and 1 shared, GPU 2 exclusive"

# Each job writes its environment, then waits for `go`.
run=$WORK/run; mkdir -p "$run"
job_cmd="env | grep -E '^(GPUFLEET_GPU|CUDA_VISIBLE)' | sort > $run/env.\$GPUFLEET_JOB_ID; while [ ! -e $run/go ]; do sleep 0.05; done"
ids=()
for i in 1 2 3 4 5; do ids+=("$(submit --gpu-share 0.25 -- sh -c "$job_cmd")"); done
whole=$(submit --gpus 1 -- sh -c "$job_cmd")
all_running() { for id in "$@"; do state_is "$id" RUNNING || return 1; done; }
wait_for "six jobs running" all_running "${ids[@]}" "$whole"
g0=$(uuid_of 0); g1=$(uuid_of 1); g2=$(uuid_of 2)
for id in "${ids[@]:0:4}"; do
  [ "$(job_field "$id" 'gpu_uuids[0]')" = "$g0" ] || fail "job $id on $(job_field "$id" 'gpu_uuids[0]'), want GPU 0"
  [ "$(job_field "$id" alloc_gpu_share)" = 0.25 ] && [ "$(job_field "$id" alloc_gpu_mem_mib)" = 20480 ] ||
    fail "job $id holds $(gf show --json "$id" | jq -c '{alloc_gpu_share, alloc_gpu_mem_mib}')"
done
[ "$(job_field "${ids[4]}" 'gpu_uuids[0]')" = "$g1" ] || fail "fifth job on $(job_field "${ids[4]}" 'gpu_uuids[0]'), want GPU 1"
[ "$(job_field "$whole" 'gpu_uuids[0]')" = "$g2" ] || fail "whole-GPU job on $(job_field "$whole" 'gpu_uuids[0]'), want GPU 2"
ok "four 0.25 jobs on GPU 0, the fifth on GPU 1, the whole-GPU job on GPU 2"

f=$run/env.${ids[0]}
wait_for "job ${ids[0]}'s environment" test -s "$f"
grep -qx "CUDA_VISIBLE_DEVICES=$g0" "$f" && grep -qx "GPUFLEET_GPU_SHARE=0.25" "$f" &&
  grep -qx "GPUFLEET_GPU_MEMORY_LIMIT_MIB=20480" "$f" || fail "environment: $(cat "$f")"
ok "a share job sees its GPU, share and memory limit"

holders=$(gf gpus --json | jq -c "[.gpus[] | select(.index == 0) | .holders[].job] | sort")
[ "$holders" = "$(printf '%s\n' "${ids[@]:0:4}" | jq -sc 'sort')" ] || fail "GPU 0 holders: $holders"
gf show "${ids[0]}" | grep -qi "share" || fail "show: $(gf show "${ids[0]}")"
ok "gpus lists GPU 0's four holders: $holders"

# The exclusive GPU is held: a change to shared waits for its job, and GPU 2 takes nothing new.
gf gpu mode share-node 2 shared | grep -q "once its jobs end" || fail "mode change on a held GPU"
[ "$(gf gpus --json | jq -r '.gpus[] | select(.index == 2) | .sharing_next')" = shared ] || fail "sharing_next"
gf cancel "$whole" >/dev/null
mode_is() { [ "$(mode_of "$1")" = "$2" ]; }
wait_for "GPU 2 shared after its job" mode_is 2 shared
ok "a mode change waits until the GPU's job ended"

# Bad requests name the field.
out=$(gf submit --gpu-share 1.5 -- true 2>&1) && fail "share 1.5 accepted"
echo "$out" | grep -q "gpu-share" || fail "share 1.5: $out"
out=$(gf submit --gpu-share 0.5 --gpus 2 -- true 2>&1) && fail "share with 2 GPUs accepted"
echo "$out" | grep -q "gpus" || fail "share with --gpus 2: $out"
out=$(gf submit --gpu-mem 100G -- true 2>&1) && fail "100G accepted on 80 GB GPUs"
echo "$out" | grep -q "gpu-mem" || fail "100G: $out"
out=$(gf gpu mode share-node 0 sliced 2>&1) && fail "mode sliced accepted"
echo "$out" | grep -q "mode" || fail "mode sliced: $out"
ok "bad shares, memory sizes and modes are refused with the field named"
touch "$run/go"
