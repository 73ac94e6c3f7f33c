#!/usr/bin/env bash
# Kubernetes mode (issue #27): a real `gpufleet server --kubernetes`, a real `gpufleet agent
# --kubernetes` on the stand-in NVML library (four GPUs whose processes the test writes), the
# stand-in kubelet (tests/fakekubelet) serving pod-resources on a Unix socket, and a synthetic
# node: /proc/PID/cgroup of each GPU process (--proc-root) in several kubelet cgroup layouts, and
# the kubelet's log folders (--kubelet-logs). The scenario:
#   GPU-k-0, GPU-k-1  held by research/train-0's container trainer; its processes 4101 (GPU 0,
#                     systemd driver, cgroup v2) and 4102 (GPU 1, cgroupfs driver, cgroup v1);
#                     its sidecar `logs` (no GPU) runs 4105 on GPU 1: outside its allocation
#   GPU-k-2           held by serving/idle-api's container server, which runs nothing on it;
#                     the kubelet names it by index ("2", DEVICE_ID_STRATEGY=index)
#   GPU-k-3           held by no pod; 4103 in no container, 4104 in train-0's trainer
#   GPU-k-4           held by dev/notebook's container jupyter, which runs nothing on it; its
#                     namespace opted in to idle reaping (idle_action "delete_pod")
#   GPU-k-5           in MIG mode: its 3g.40gb device MIG-k-5a held by research/infer-0's
#                     container infer, which runs 4106 there and 4107 on the 1g.10gb MIG-k-5b
#                     (outside its allocation)
# Checks: every process of the pods' GPU-holding containers attributed to its pod (100 %, 0
# misattributed), the others to none; both pods listed as jobs (namespace as team, pod name as
# name, the UID's job id); /metrics' namespace/pod/container labels; submissions and cancels
# refused with the kubectl way; the idle pod warned by the idle reaper and its GPU flagged
# allocated_no_process; the opted-in idle pod deleted through the API server and its job
# CANCELLED once the kubelet no longer lists it; processes outside any pod flagged unallocated_process; a kubelet that
# is down ends no pod; a pod the kubelet no longer lists ends; an agent without --kubernetes
# drains its node with the fix; the month's report sums the pods by workload.
source "$(dirname "$0")/lib.sh"
FAKENVML=${FAKENVML:?set FAKENVML to the stand-in libnvidia-ml.so.1}
FAKEKUBELET=${FAKEKUBELET:?set FAKEKUBELET to the stand-in kubelet}
need jq curl
WAIT_FOR_SECONDS=60

UID_A=0f2c9a4e-1b7d-4c3a-9e8f-5a6b7c8d9e01  # research/train-0
UID_B=7d3e5f10-2a4b-4c6d-8e9f-0a1b2c3d4e5f  # serving/idle-api
UID_C=3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f  # dev/notebook
UID_D=5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b  # research/infer-0
TRAINER=$(printf 'a1%.0s' {1..32})  # container ids: 64 hex digits
SIDECAR=$(printf 'b2%.0s' {1..32})
SERVER=$(printf 'c3%.0s' {1..32})
JUPYTER=$(printf 'd4%.0s' {1..32})
INFER=$(printf 'e5%.0s' {1..32})
# The job id of a pod: its UID's first 12 hex digits (docs/decisions/0014).
job_of_uid() { local hex=${1//-/}; echo $((16#${hex:0:12})); }
JOB_A=$(job_of_uid "$UID_A")
JOB_B=$(job_of_uid "$UID_B")
JOB_C=$(job_of_uid "$UID_C")
JOB_D=$(job_of_uid "$UID_D")

# The node's processes: /proc/PID/{status,cgroup,cmdline} under $WORK/proc.
proc() {  # proc PID CGROUP-FILE-TEXT
  mkdir -p "$WORK/proc/$1"
  printf 'Name:\tpython\nPid:\t%s\nUid:\t0\t0\t0\t0\nVmRSS:\t1024 kB\n' "$1" >"$WORK/proc/$1/status"
  printf '%s\n' "$2" >"$WORK/proc/$1/cgroup"
  printf 'python\0train.py\0' >"$WORK/proc/$1/cmdline"
}
systemd_pod=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_A//-/_}.slice
proc 4101 "0::$systemd_pod/cri-containerd-$TRAINER.scope"
proc 4102 "12:memory:/kubepods/burstable/pod$UID_A/$TRAINER
4:cpu,cpuacct:/kubepods/burstable/pod$UID_A/$TRAINER"
proc 4105 "0::/kubepods/burstable/pod$UID_A/$SIDECAR"
proc 4103 "0::/user.slice/user-0.slice/session-3.scope"
proc 4104 "0::$systemd_pod/cri-containerd-$TRAINER.scope"
proc 4106 "0::/kubepods/pod$UID_D/$INFER"
proc 4107 "0::/kubepods/pod$UID_D/$INFER"
# The kubelet's log names (kube/kube_log_names.h).
mkdir -p "$WORK/log/pods/research_train-0_$UID_A" "$WORK/log/pods/serving_idle-api_$UID_B" \
  "$WORK/log/pods/dev_notebook_$UID_C" "$WORK/log/pods/research_infer-0_$UID_D" "$WORK/log/containers"
touch "$WORK/log/containers/train-0_research_trainer-$TRAINER.log" \
  "$WORK/log/containers/train-0_research_logs-$SIDECAR.log" \
  "$WORK/log/containers/idle-api_serving_server-$SERVER.log" \
  "$WORK/log/containers/notebook_dev_jupyter-$JUPYTER.log" \
  "$WORK/log/containers/infer-0_research_infer-$INFER.log"

# The GPUs as NVML reports them.
gpu() {  # gpu N UTIL PROCESSES-JSON [MORE-KEYS]
  echo "{\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-k-$1\", \"memory_total_mib\": 81559,
   \"memory_used_mib\": 2000, \"util_gpu\": $2, \"temperature_c\": 50, \"power_mw\": 300000,
   \"energy_mj\": 1000, \"processes\": $3${4:+, $4}}"
}
p() { echo "{\"pid\": $1, \"used_memory_mib\": 1000${2:+, \"gpu_instance_id\": $2, \"compute_instance_id\": 0}}"; }
cat >"$WORK/nvml.json" <<JSON
{"driver_version": "550.54.15", "devices": [
 $(gpu 0 80 "[$(p 4101)]"), $(gpu 1 70 "[$(p 4102), $(p 4105)]"), $(gpu 2 0 "[]"),
 $(gpu 3 10 "[$(p 4103), $(p 4104)]"), $(gpu 4 0 "[]"),
 $(gpu 5 60 "[$(p 4106 1), $(p 4107 9)]" '"mig": {"enabled": true, "profiles": "H100-80GB",
   "instances": [{"profile": "3g.40gb", "gpu_instance_id": 1, "uuid": "MIG-k-5a"},
                 {"profile": "1g.10gb", "gpu_instance_id": 9, "uuid": "MIG-k-5b"}]}')]}
JSON
# What the kubelet's device manager gave each container; train-0 only when $1 is "both",
# dev/notebook until Kubernetes has deleted it (NOTEBOOK=gone).
NOTEBOOK=here
write_kubelet() {
  local train="" notebook=""
  [ "$1" = both ] && train='{"namespace": "research", "name": "train-0", "containers": [
      {"name": "trainer", "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-k-0", "GPU-k-1"]}]},
      {"name": "logs"}]},'
  [ "$NOTEBOOK" = here ] && notebook='{"namespace": "dev", "name": "notebook", "containers": [
      {"name": "jupyter", "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-k-4"]}]}]},'
  local infer='{"namespace": "research", "name": "infer-0", "containers": [
      {"name": "infer", "devices": [{"resource": "nvidia.com/mig-3g.40gb", "ids": ["MIG-k-5a"]}]}]},'
  cat >"$WORK/kubelet.json.tmp" <<JSON
{"pods": [$train $notebook $infer
  {"namespace": "serving", "name": "idle-api", "containers": [
    {"name": "server", "devices": [{"resource": "nvidia.com/gpu", "ids": ["2"]}]}]},
  {"namespace": "kube-system", "name": "nvidia-device-plugin-x", "containers": [{"name": "ctr"}]}],
 "allocatable": [{"resource": "nvidia.com/gpu", "ids": ["GPU-k-0", "GPU-k-1", "GPU-k-2", "GPU-k-3", "GPU-k-4"]},
   {"resource": "nvidia.com/mig-3g.40gb", "ids": ["MIG-k-5a"]}]}
JSON
  mv "$WORK/kubelet.json.tmp" "$WORK/kubelet.json"
}
write_kubelet both
KUBELET_SOCK=$WORK/kubelet.sock
start_kubelet() {
  "$FAKEKUBELET" --socket "$KUBELET_SOCK" --scenario "$WORK/kubelet.json" >>"$WORK/kubelet.log" 2>&1 &
  KUBELET_PID=$!
  wait_for "the stand-in kubelet's socket" test -S "$KUBELET_SOCK"
}
start_kubelet

cat >"$WORK/gpufleet.toml" <<'TOML'
[scheduler]
default_class = "kubernetes"
[class.kubernetes]   # the class of every pod
rank = 1
idle_after = "5s"
idle_grace = "5s"
idle_util_below = 5
idle_action = "requeue"  # on a Kubernetes server: warn only
[team.dev]           # namespace dev opts in: its idle pods are deleted
idle_action = "delete_pod"
TOML
# The API server (tests/e2e/fake_kube_api.py): train-0 is a Deployment's pod (through its
# ReplicaSet) running as service account trainer; idle-api a bare pod of the default account.
cat >"$WORK/kube-api.json" <<JSON
{"/api/v1/pods": [
  {"metadata": {"name": "train-0", "namespace": "research", "uid": "$UID_A", "resourceVersion": "1",
    "ownerReferences": [{"kind": "ReplicaSet", "name": "train-7d9", "controller": true}]},
   "spec": {"serviceAccountName": "trainer"}, "status": {"phase": "Running"}},
  {"metadata": {"name": "idle-api", "namespace": "serving", "uid": "$UID_B", "resourceVersion": "1"},
   "spec": {}, "status": {"phase": "Running"}},
  {"metadata": {"name": "notebook", "namespace": "dev", "uid": "$UID_C", "resourceVersion": "1"},
   "spec": {}, "status": {"phase": "Running"}},
  {"metadata": {"name": "infer-0", "namespace": "research", "uid": "$UID_D", "resourceVersion": "1"},
   "spec": {}, "status": {"phase": "Running"}}],
 "/apis/apps/v1/replicasets": [
  {"metadata": {"name": "train-7d9", "namespace": "research", "uid": "r-1", "resourceVersion": "1",
    "ownerReferences": [{"kind": "Deployment", "name": "train", "controller": true}]}}],
 "/apis/batch/v1/jobs": []}
JSON
python3 "$(dirname "$0")/fake_kube_api.py" "$WORK/kube-api.json" "$WORK/kube-api.port" \
  2>>"$WORK/kube-api.log" &
KUBE_API_PID=$!
trap 'kill "$KUBELET_PID" "$KUBE_API_PID" 2>/dev/null || true; cleanup' EXIT
wait_for "the stand-in API server" test -s "$WORK/kube-api.port"
start_server --kubernetes --config "$WORK/gpufleet.toml" \
  --kube-api "http://127.0.0.1:$(cat "$WORK/kube-api.port")"
gf node token create --output "$WORK/node.token" --description e2e >/dev/null
GF_FAKENVML_SCENARIO=$WORK/nvml.json "$GPUFLEET" agent --server "$SERVER_URL" \
  --token-file "$WORK/node.token" --kubernetes --pod-resources-socket "$KUBELET_SOCK" \
  --kubelet-logs "$WORK/log" --proc-root "$WORK/proc" --gpus "nvml:$FAKENVML" \
  --data-dir "$WORK/agent1" --node-name k8s-1 --sample-interval 1s >>"$WORK/agent1.log" 2>&1 &
AGENT_PIDS[1]=$!
node_up() { [ "$(gf nodes --json | jq -r '.nodes[] | select(.name == "k8s-1") | .state')" = up ]; }
wait_for "the Kubernetes agent's node up" node_up

# 1. Both pods are jobs, under their UIDs' ids, with namespace as team and pod name as name.
wait_for "pod train-0 to run as job $JOB_A" state_is "$JOB_A" RUNNING
wait_for "pod idle-api to run as job $JOB_B" state_is "$JOB_B" RUNNING
[ "$(job_field "$JOB_A" team)/$(job_field "$JOB_A" name)" = research/train-0 ] ||
  fail "job $JOB_A: $(gf show --json "$JOB_A")"
[ "$(job_field "$JOB_B" team)/$(job_field "$JOB_B" name)" = serving/idle-api ] ||
  fail "job $JOB_B: $(gf show --json "$JOB_B")"
[ "$(gf show --json "$JOB_A" | jq -c '.gpu_uuids')" = '["GPU-k-0","GPU-k-1"]' ] ||
  fail "job $JOB_A's GPUs: $(gf show --json "$JOB_A")"
gf show "$JOB_A" | grep -q "Pod .*research/train-0  uid $UID_A  containers trainer (GPU-k-0,GPU-k-1)" ||
  fail "show $JOB_A lacks its pod: $(gf show "$JOB_A")"
gf gpus | grep "GPU-k-2\|idle-api" | grep -q "serving/idle-api" || fail "gpus: $(gf gpus)"
ok "pods as jobs: $JOB_A research/train-0 on GPU-k-0,1; $JOB_B serving/idle-api on GPU-k-2"

# 1b. The API server names each pod's service account (the job's user, as Kubernetes names it)
#     and workload: a Deployment through its ReplicaSet; a bare pod is its own.
env_of() { gf show --json "$1" | jq -r --arg k "$2" '.env[$k] // ""'; }
named() { [ "$(job_field "$JOB_A" user)" = system:serviceaccount:research:trainer ]; }
wait_for "job $JOB_A's user to be its service account" named
[ "$(env_of "$JOB_A" POD_WORKLOAD)" = Deployment/train ] ||
  fail "job $JOB_A's workload: $(gf show --json "$JOB_A")"
wait_for "job $JOB_B's user" eval '[ "$(job_field "$JOB_B" user)" = system:serviceaccount:serving:default ]'
[ "$(env_of "$JOB_B" POD_WORKLOAD)" = Pod/idle-api ] ||
  fail "job $JOB_B's workload: $(gf show --json "$JOB_B")"
ok "from the API server: $JOB_A system:serviceaccount:research:trainer, Deployment/train; $JOB_B Pod/idle-api"

# 2. Attribution: the truth is the scenario's. "pid gpu job pod container unmanaged" a line.
expected="4101 GPU-k-0 $JOB_A research/train-0 trainer false
4102 GPU-k-1 $JOB_A research/train-0 trainer false
4105 GPU-k-1 - research/train-0 logs true
4103 GPU-k-3 - - - true
4104 GPU-k-3 - research/train-0 trainer true
4106 GPU-k-5 $JOB_D research/infer-0 infer false
4107 GPU-k-5 - research/infer-0 infer true"
seen() {
  gf gpus --json | jq -r '.gpus[] | .uuid as $g | (.sample.processes // [])[] |
    "\(.pid) \($g) \(.job // "-") \(if .pod == "" then "-" else .pod end) \(if .container == "" then "-" else .container end) \(.unmanaged)"' |
    sort
}
all_seen() { [ "$(seen | wc -l)" = 7 ] && ! seen | grep -q ' - - - false$'; }
wait_for "the seven GPU processes attributed" all_seen
actual=$(seen)
in_pods=0 right=0 wrong=0
while read -r pid gpu job pod container unmanaged; do
  line=$(grep "^$pid $gpu " <<<"$actual") || fail "process $pid on $gpu not reported: $actual"
  [ "$job" != - ] && in_pods=$((in_pods + 1))
  if [ "$line" = "$pid $gpu $job $pod $container $unmanaged" ]; then
    [ "$job" != - ] && right=$((right + 1))
  else
    wrong=$((wrong + 1))
    echo "misattributed: got '$line', want '$pid $gpu $job $pod $container $unmanaged'"
  fi
done <<<"$expected"
[ "$wrong" = 0 ] && [ "$right" = "$in_pods" ] ||
  fail "attribution: $right of $in_pods pod processes, $wrong wrong"$'\n'"$actual"
ok "attribution: $right/$in_pods processes of the pods' containers on their GPUs and MIG devices (100 %), 0 misattributed; 4 outside (1 in no pod, 3 outside their allocation)"
# 2b. The MIG pod holds its device's share of GPU-k-5 (3 of 7 slices), as a MIG job does.
[ "$(gf show --json "$JOB_D" | jq -c '[.gpu_uuids, .alloc_mig, .alloc_gpu_share, .mig]')" = '[["GPU-k-5"],"MIG-k-5a",0.428,"3g.40gb"]' ] ||
  fail "job $JOB_D's allocation: $(gf show --json "$JOB_D")"
ok "MIG pod: job $JOB_D on MIG-k-5a (3g.40gb) of GPU-k-5, 0.428 of the GPU"

# 3. /metrics: dcgm-exporter's pod labels on the pods' GPUs, empty ones elsewhere.
api() { curl -sf --unix-socket "$GPUFLEET_SOCKET" "http://gpufleet$1"; }
util_line() { api /metrics | grep -E "^DCGM_FI_DEV_GPU_UTIL\{.*UUID=\"$1\""; }
util_line GPU-k-1 | grep -q "namespace=\"research\",pod=\"train-0\",container=\"trainer\"" ||
  fail "GPU-k-1's series: $(util_line GPU-k-1)"
util_line GPU-k-1 | grep -q "job=\"$JOB_A\"" || fail "GPU-k-1's job label: $(util_line GPU-k-1)"
util_line GPU-k-2 | grep -q "namespace=\"serving\",pod=\"idle-api\",container=\"server\"" ||
  fail "GPU-k-2's series: $(util_line GPU-k-2)"
util_line GPU-k-3 | grep -q 'namespace="",pod="",container=""' ||
  fail "GPU-k-3's series: $(util_line GPU-k-3)"
ok "metrics: $(util_line GPU-k-1 | cut -c1-200)"

# 4. Kubernetes schedules and stops pods, not gpufleet.
out=$(gf submit -- true 2>&1) && fail "a submission was accepted in Kubernetes mode: $out"
grep -q "follows Kubernetes (--kubernetes): create pods with kubectl" <<<"$out" ||
  fail "the refusal does not name the fix: $out"
out=$(gf cancel "$JOB_A" 2>&1) && fail "a pod was cancelled: $out"
grep -q "kubectl delete pod -n research train-0" <<<"$out" || fail "the cancel refusal: $out"
state_is "$JOB_A" RUNNING || fail "job $JOB_A after a refused cancel: $(job_state "$JOB_A")"
ok "submissions and cancels refused: $out"

# 5. Conditions: outside any pod (and outside an allocation on an unheld GPU) is unallocated;
# the idle pod is warned by the reaper (not stopped) and its GPU flagged after 60 s.
gpu_is() { [ "$(gf gpus --json | jq -c ".gpus[] | select(.uuid == \"$1\") | $2")" = "$3" ]; }
wait_for "unallocated_process on GPU-k-3" gpu_is GPU-k-3 '.conditions' '["unallocated_process"]'
warned() { gf show "$JOB_B" | sed -n '/^Events/,$p' | grep -q "idle_warning (reaper): GPU 2 on k8s-1 idle for"; }
wait_for "the idle warning of pod idle-api" warned
gf show "$JOB_B" | grep -q "reported only: gpufleet stops a pod only where idle_action is" ||
  fail "warning: $(gf show "$JOB_B")"
WAIT_FOR_SECONDS=120 wait_for "allocated_no_process on GPU-k-2" \
  gpu_is GPU-k-2 '.conditions' '["allocated_no_process"]'
state_is "$JOB_B" RUNNING || fail "the idle pod was stopped: $(gf show "$JOB_B")"
gf show "$JOB_B" | grep -q "idle_reap" && fail "the idle pod was reaped: $(gf show "$JOB_B")"
ok "idle pod warned and flagged, still running; processes outside pods flagged"

# 5b. dev opted in (idle_action "delete_pod"): its idle notebook is deleted through the API
#     server, with its UID as precondition, after the warning's grace; its job ends CANCELLED
#     (the reaper's cause) once the kubelet no longer lists the pod, as when Kubernetes deletes it.
wait_for "the notebook's stop to be accepted" \
  eval 'gf show "$JOB_C" | sed -n "/^Events/,\$p" | grep -q "pod_stop (kubernetes): pod dev/notebook deleted"'
stop_line=$(grep '^STOP ' "$WORK/kube-api.log")
[ "$stop_line" = "STOP DELETE /api/v1/namespaces/dev/pods/notebook application/json {\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"preconditions\":{\"uid\":\"$UID_C\"}}" ] ||
  fail "the API server was asked: $stop_line"
gf show "$JOB_C" | grep -q "idle_reap (reaper): .*delete pod dev/notebook (idle_action delete_pod)" ||
  fail "no idle_reap event: $(gf show "$JOB_C")"
NOTEBOOK=gone
write_kubelet both
wait_for "the notebook's job to end" state_is "$JOB_C" CANCELLED
job_field "$JOB_C" reason | grep -q "^idle reaping: GPU 4 on k8s-1 idle for" ||
  fail "job $JOB_C's reason: $(job_field "$JOB_C" reason)"
state_is "$JOB_B" RUNNING || fail "serving (not opted in) was stopped: $(gf show "$JOB_B")"
ok "opted-in idle pod deleted ($stop_line); job $JOB_C CANCELLED: $(job_field "$JOB_C" reason | cut -c1-80)"

# 6. A kubelet that is down ends nothing; a pod it no longer lists has ended.
kill "$KUBELET_PID"; wait "$KUBELET_PID" 2>/dev/null || true
wait_for "the agent to log the kubelet's absence" grep -q "cannot read the node's pods" "$WORK/agent1.log"
state_is "$JOB_A" RUNNING && state_is "$JOB_B" RUNNING ||
  fail "a pod ended while the kubelet was down: $(job_state "$JOB_A") $(job_state "$JOB_B")"
write_kubelet idle-only
start_kubelet
wait_for "pod train-0 to end" state_is "$JOB_A" COMPLETED
state_is "$JOB_B" RUNNING || fail "job $JOB_B: $(job_state "$JOB_B")"
grep -q "the node's pods are read again" "$WORK/agent1.log" || fail "no recovery line in the agent's log"
ok "kubelet down: no pod ended; train-0 gone from the kubelet: job $JOB_A COMPLETED"

# 7. An agent without --kubernetes drains its node with the fix.
gf node token create --output "$WORK/node2.token" --description e2e2 >/dev/null
start_agent 2 "$WORK/node2.token" plain-1
reason() { gf nodes --json | jq -r '.nodes[] | select(.name == "plain-1") | .state_reason'; }
drained() { reason | grep -q "start the agent with --kubernetes"; }
wait_for "plain-1 drained with the fix" drained
ok "plain agent: $(reason)"

# 8. The month's report sums pods by workload (counted by hand: one pod each, train-0's run
#    ended, idle-api's running). Figures run to the start of the current minute, so a run
#    shows once a minute has begun since it started: up to 60 s more.
workloads() { gf report --format json | jq -c '[.workloads[] | [.team, .workload, .usage.jobs]]'; }
want='[["dev","Pod/notebook",1],["research","Deployment/train",1],["research","Pod/infer-0",1],["serving","Pod/idle-api",1]]'
WAIT_FOR_SECONDS=75 wait_for "the report's workloads to be $want" \
  eval '[ "$(workloads)" = "$want" ]'
text=$(gf report)
grep -q "^Kubernetes workloads" <<<"$text" || fail "report text: $text"
ok "report: workloads Pod/notebook (dev), Deployment/train and Pod/infer-0 (research), Pod/idle-api (serving), one pod each"
