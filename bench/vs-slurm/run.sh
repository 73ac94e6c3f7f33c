#!/usr/bin/env bash
# bench/vs-slurm/run.sh: the same three measurements through a local Slurm (Debian's
# slurm-wlm: slurmctld + 4 slurmd of 8 fake GPUs) and through gpufleet (`gpufleet server` + 4
# `gpufleet agent` of 8 simulated GPUs), in one run on one machine, both driven through their
# command-line clients (`sbatch` / `gpufleet submit`, one process per submission), printed as one
# table with the ratios. See bench/vs-slurm/README.md.
#
#   run.sh [--install] [--gpufleet PATH] [--jobs N] [--submits N] [--latency-jobs K]
#          [--slurm default|tuned|both] [--quick] [--only slurm|gpufleet]
#
# Needs root (slurmd, munged and the fake GPU device nodes). Every file lives in a temp dir,
# removed at the end; every daemon started here is stopped on exit, Ctrl-C included.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
gpufleet="$here/../../build/release/apps/gpufleet/gpufleet"
njobs=1000 submits=1000 latency_jobs=20 slurm_modes=both install=0 only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --install) install=1 ;;
    --gpufleet) gpufleet=$2; shift ;;
    --jobs) njobs=$2; shift ;;
    --submits) submits=$2; shift ;;
    --latency-jobs) latency_jobs=$2; shift ;;
    --slurm) slurm_modes=$2; shift ;;
    --only) only=$2; shift ;;  # slurm or gpufleet: measure one side (to check a setup)
    --quick) njobs=200 submits=200 latency_jobs=5 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$slurm_modes" in
  default|tuned) modes=("$slurm_modes") ;;
  both) modes=(default tuned) ;;
  *) echo "run.sh: --slurm must be default, tuned or both" >&2; exit 2 ;;
esac
[[ $(id -u) -eq 0 ]] || { echo "run.sh: run as root (slurmd, munged, mknod)" >&2; exit 2; }
if [[ $install -eq 1 ]]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    slurm-wlm slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge >/dev/null
fi
for b in slurmctld slurmd sbatch squeue munged; do
  command -v "$b" >/dev/null || { echo "run.sh: $b not found; run with --install (Debian's slurm-wlm and munge)" >&2; exit 2; }
done
[[ $only == slurm || -x "$gpufleet" ]] || { echo "run.sh: $gpufleet is not executable; build the gpufleet target (release preset) or pass --gpufleet PATH" >&2; exit 2; }

tmp=$(mktemp -d /tmp/gf-vs-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()  # gpufleet processes
cleanup() {
  set +e
  stop_slurm
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "vs-slurm: $*" >&2; }
now_ns() { date +%s%N; }
# Seconds (3 decimals) between two nanosecond stamps.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
# Median, min and max of numbers on stdin: "MEDIAN MIN MAX".
stats() { sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f", m, v[1], v[NR] }'; }
# Waits until `cmd` succeeds, at most $1 seconds.
wait_for() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  until "$@"; do
    (( SECONDS < end )) || return 1
    sleep 0.1
  done
}

# ---- one client-side measurement, for either system ----
# $1: a function that submits one held/pending job (kept from running) ($2 = index).
# Prints the rate for `clients` concurrent submitters of $submits jobs in all.
submit_rate() {
  local fn=$1 clients=$2 t0 t1 c
  local workers=()
  t0=$(now_ns)
  for ((c = 0; c < clients; c++)); do
    ( for ((i = c; i < submits; i += clients)); do "$fn" "$i" || exit 1; done ) &
    workers+=($!)
  done
  wait_all_or_fail "${workers[@]}"
  t1=$(now_ns)
  awk -v n="$submits" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / ((b - a) / 1e9) }'
}
wait_all_or_fail() {  # $@: the submitters' pids
  local failed=0 j
  for j in "$@"; do wait "$j" || failed=1; done
  [[ $failed -eq 0 ]] || { echo "run.sh: a submission failed" >&2; exit 1; }
}

# $1: submit one job writing `date +%s%N` to file $2. Prints "MEDIAN MIN MAX" seconds from the
# client starting the submission to the job running, over $latency_jobs jobs, one at a time.
start_latency() {
  local fn=$1 i t0 f
  for ((i = 0; i < latency_jobs; i++)); do
    f=$(mktemp -u "$tmp/stamp.XXXXXXXX")  # unique: a stamp of an earlier run must not count
    t0=$(now_ns)
    "$fn" "$f" >/dev/null
    wait_for 60 test -s "$f" || { echo "run.sh: latency job $i never ran ($fn)" >&2; exit 1; }
    secs "$t0" "$(cat "$f")"; echo
  done | stats
}

# $1: submit one `sleep 0.1` job; $2: succeeds when no job is queued or running. Prints the
# seconds from the first submission to the moment the client sees the queue empty (polled
# every 0.1 s), $njobs jobs from 4 submitters.
makespan() {
  local fn=$1 empty=$2 t0 c workers=()
  t0=$(now_ns)
  for ((c = 0; c < 4; c++)); do
    ( for ((i = c; i < njobs; i += 4)); do "$fn" || exit 1; done ) &
    workers+=($!)
  done
  wait_all_or_fail "${workers[@]}"
  wait_for $((60 + njobs)) "$empty" || { echo "run.sh: jobs still queued at the deadline ($fn)" >&2; exit 1; }
  secs "$t0" "$(now_ns)"
}

# ---- Slurm ----
# tests/lib/local_slurm.sh: slurmctld + 4 slurmd of 8 fake GPUs, munge on a private socket.
source "$here/../../tests/lib/local_slurm.sh"
start_slurm() {  # $1: default|tuned
  local sched=""
  [[ $1 == tuned ]] && sched="SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000"
  local_slurm_start "$tmp/slurm-$1" "gfbench$1" 4 "$sched" || { echo "run.sh: Slurm did not start" >&2; exit 1; }
}
slurm_empty() { [[ -z $(squeue -h -o %i 2>/dev/null) ]]; }
stop_slurm() { local_slurm_stop; }
slurm_hold() { sbatch --hold -G 1 -o /dev/null --wrap true >/dev/null; }
slurm_stamp() { sbatch -G 1 -o /dev/null --wrap "date +%s%N > $1.tmp && mv $1.tmp $1"; }
slurm_sleep() { sbatch -G 1 -o /dev/null --wrap "sleep 0.1" >/dev/null; }

# ---- gpufleet ----
gf_sock="$tmp/gf/gpufleet.sock"
start_gpufleet() {
  mkdir -p "$tmp/gf"
  "$gpufleet" server --data-dir "$tmp/gf/data" --listen-socket "$gf_sock" --port 0 \
    --kill-grace 2 >"$tmp/gf/server.log" 2>&1 &
  pids+=($!)
  wait_for 30 test -S "$gf_sock" || { cat "$tmp/gf/server.log" >&2; exit 1; }
  for n in 1 2 3 4; do
    "$gpufleet" agent --server "unix:$gf_sock" --gpus sim:8xH100-80GB \
      --data-dir "$tmp/gf/agent-$n" --node-name "node-$n" >"$tmp/gf/agent-$n.log" 2>&1 &
    pids+=($!)
  done
  export GPUFLEET_SOCKET=$gf_sock
  wait_for 60 gf_nodes_up || { echo "run.sh: gpufleet agents did not join" >&2; tail -n 5 "$tmp"/gf/*.log >&2; exit 1; }
}
gf_nodes_up() { [[ $("$gpufleet" nodes 2>/dev/null | grep -c ' up ') -ge 4 ]]; }
gf_empty() { [[ $("$gpufleet" queue --json 2>/dev/null | grep -c '"id"') -eq 0 ]]; }
# Cancels the jobs in state $1 (PENDING, RUNNING), 200 ids per `gpufleet cancel`.
gf_cancel() {
  "$gpufleet" queue | awk -v s="$1" 'NR > 1 && $4 == s { print $1 }' |
    xargs -r -n 200 "$gpufleet" cancel >/dev/null 2>&1 || true
}
# Jobs that hold every GPU (one per node of 8) until $tmp/release exists: what keeps the
# submitted jobs pending, as Slurm's --hold does.
gf_block() {
  rm -f "$tmp/release"
  for n in 1 2 3 4; do
    "$gpufleet" submit --gpus 8 -- sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done' "$tmp/release" >/dev/null
  done
  wait_for 30 gf_blocked
}
gf_blocked() { [[ $("$gpufleet" queue 2>/dev/null | grep -c RUNNING) -ge 4 ]]; }
# Pending jobs first, so that none starts when the blockers end.
gf_release() { gf_cancel PENDING; touch "$tmp/release"; gf_cancel RUNNING; wait_for 60 gf_empty; }
gf_hold() { "$gpufleet" submit --gpus 1 -- true >/dev/null; }
gf_stamp() { "$gpufleet" submit --gpus 1 -- sh -c 'date +%s%N > "$0.tmp" && mv "$0.tmp" "$0"' "$1"; }
gf_sleep() { "$gpufleet" submit --gpus 1 -- sleep 0.1 >/dev/null; }

declare -A r
measure_slurm() {
  local m=$1
  log "Slurm ($m): starting"
  start_slurm "$m"
  log "Slurm ($m): sbatch --hold, 1 client"; r[s1_$m]=$(submit_rate slurm_hold 1); scancel --full -u root; wait_for 60 slurm_empty
  log "Slurm ($m): sbatch --hold, 4 clients"; r[s4_$m]=$(submit_rate slurm_hold 4); scancel --full -u root; wait_for 60 slurm_empty
  log "Slurm ($m): submit → running"; r[lat_$m]=$(start_latency slurm_stamp)
  log "Slurm ($m): makespan"; r[mk_$m]=$(makespan slurm_sleep slurm_empty)
  stop_slurm
}
measure_gpufleet() {
  log "gpufleet: starting server + 4 agents"
  start_gpufleet
  log "gpufleet: submit, 1 client"; gf_block; r[s1_gf]=$(submit_rate gf_hold 1); gf_release
  log "gpufleet: submit, 4 clients"; gf_block; r[s4_gf]=$(submit_rate gf_hold 4); gf_release
  log "gpufleet: submit → running"; r[lat_gf]=$(start_latency gf_stamp)
  log "gpufleet: makespan"; r[mk_gf]=$(makespan gf_sleep gf_empty)
}

if [[ $only != gpufleet ]]; then
  for m in "${modes[@]}"; do measure_slurm "$m"; done
fi
if [[ $only != slurm ]]; then
  measure_gpufleet
fi

# ---- the table ----
ratio() {  # $1 gpufleet, $2 slurm, $3 higher|lower is better
  awk -v g="$1" -v s="$2" -v h="$3" 'BEGIN { if (g <= 0 || s <= 0) { print "—"; exit } printf "%.1f×", h == "higher" ? g / s : s / g }'
}
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
head="| measure | gpufleet |"; sep="|---|---|"
for m in "${modes[@]}"; do head+=" Slurm $m | gpufleet vs Slurm $m |"; sep+="---|---|"; done
echo "$head"; echo "$sep"
row() {  # $1 label, $2 key, $3 unit, $4 higher|lower, $5 field of "MEDIAN MIN MAX" (1) or whole
  local line="| $1 | ${r[${2}_gf]:-—} $3 |" m v g s
  for m in "${modes[@]}"; do
    v=${r[${2}_$m]:-—}
    g=$(awk '{ print $1 + 0 }' <<<"${r[${2}_gf]:-0}"); s=$(awk '{ print $1 + 0 }' <<<"$v")
    line+=" $v $3 | $(ratio "$g" "$s" "$4") |"
  done
  echo "$line"
}
row "submissions/s, 1 client ($submits jobs kept pending)" s1 "jobs/s" higher
row "submissions/s, 4 clients" s4 "jobs/s" higher
row "submit → job running, idle (median min max of $latency_jobs)" lat "s" lower
row "makespan, $njobs × one-GPU \`sleep 0.1\` on 4 × 8 GPUs (ideal $(awk -v n="$njobs" 'BEGIN { printf "%.1f", n * 0.1 / 32 }') s)" mk "s" lower
