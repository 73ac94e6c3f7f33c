# tests/lib/local_slurm.sh: a real Slurm (Debian's slurm-wlm) on this one machine, for the
# companion-mode end-to-end test and bench/vs-slurm. Sourced, not run. Every file lives under the
# folder given to local_slurm_start; local_slurm_stop stops every daemon it started.
#
#   local_slurm_start DIR NAME [NODES] [EXTRA_CONF]
#     DIR: an empty folder (made world-executable: munge's socket is in it); NAME: the cluster's
#     name (letters and digits); NODES: how many compute nodes, gpu01.. (default 4), each of
#     8 fake GPUs (character devices c 195 N, type h100); EXTRA_CONF: lines added to slurm.conf.
#     Exports SLURM_CONF; returns 1 (with the daemons' last log lines on stderr) when the nodes
#     are not idle within 90 s.
#   local_slurm_stop
#   local_slurm_available: succeeds when slurmctld, slurmd, munged and sbatch are installed and
#     this shell is root (slurmd, munged and mknod need it).
#
# Facts this rests on: munged on a private socket; SlurmUser=root; several `slurmd -N` on one
# host, each with its own port and NodeAddr=127.0.0.1; fake GPUs must be character devices for
# Slurm to set CUDA_VISIBLE_DEVICES; no slurmdbd (accounting_storage/none).

local_slurm_available() {
  [[ $(id -u) -eq 0 ]] || return 1
  local b
  for b in slurmctld slurmd sbatch squeue scontrol munged; do
    command -v "$b" >/dev/null || return 1
  done
}

_local_slurm_wait() {  # $1: seconds; rest: a command that succeeds when done
  local end=$((SECONDS + $1)); shift
  until "$@"; do
    (( SECONDS < end )) || return 1
    sleep 0.1
  done
}

_local_slurm_idle() { [[ $(sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle') -eq $local_slurm_nodes ]]; }

local_slurm_start() {
  local d=$1 name=$2 extra=${4:-} port n g
  local_slurm_nodes=${3:-4}
  port=$((20000 + RANDOM % 30000))
  mkdir -p "$d"/{etc,spool,state,log,run,dev,munge}
  chmod 755 "$d" "$d/munge"
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$d/munge/munge.key"
  munged --socket="$d/munge/munge.socket.2" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" \
    --seed-file="$d/munge/munged.seed" --force
  for g in 0 1 2 3 4 5 6 7; do mknod "$d/dev/fakegpu$g" c 195 "$g"; done
  local last
  last=$(printf 'gpu%02d' "$local_slurm_nodes")
  {
    cat <<CONF
ClusterName=$name
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket.2
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.%n.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
SchedulerType=sched/backfill
PriorityType=priority/multifactor
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=60
MaxJobCount=100000
MpiDefault=none
DefMemPerCPU=1000
ReturnToService=2
SlurmdParameters=config_overrides
CONF
    [[ -n $extra ]] && printf '%s\n' "$extra"
    for ((n = 1; n <= local_slurm_nodes; n++)); do
      printf 'NodeName=gpu%02d NodeHostname=gpu%02d NodeAddr=127.0.0.1 Port=%d CPUs=64 RealMemory=512000 Gres=gpu:h100:8\n' \
        "$n" "$n" $((port + 10 + n))
    done
    echo "PartitionName=gpu Nodes=gpu[01-${last#gpu}] Default=YES MaxTime=INFINITE State=UP"
  } >"$d/etc/slurm.conf"
  cat >"$d/etc/gres.conf" <<CONF
AutoDetect=off
NodeName=gpu[01-${last#gpu}] Name=gpu Type=h100 File=$d/dev/fakegpu[0-7]
CONF
  export SLURM_CONF="$d/etc/slurm.conf"
  local_slurm_dir=$d
  slurmctld
  for ((n = 1; n <= local_slurm_nodes; n++)); do
    mkdir -p "$d/spool/$(printf 'gpu%02d' "$n")"
    slurmd -N "$(printf 'gpu%02d' "$n")"
  done
  local_slurm_up=1
  if ! _local_slurm_wait 90 _local_slurm_idle; then
    echo "local_slurm: the nodes did not come up:" >&2
    sinfo -N >&2
    tail -n 5 "$d"/log/*.log >&2
    return 1
  fi
}

local_slurm_stop() {
  [[ ${local_slurm_up:-0} -eq 1 ]] || return 0
  scancel --full -u root >/dev/null 2>&1 || true
  local f p daemons=()
  for f in "$local_slurm_dir"/run/*.pid "$local_slurm_dir/munge/munged.pid"; do
    [[ -f $f ]] && daemons+=("$(cat "$f")")
  done
  kill "${daemons[@]}" 2>/dev/null
  # A next cluster must not start beside this one's daemons: wait until they are gone.
  for p in "${daemons[@]}"; do
    _local_slurm_wait 15 test ! -e "/proc/$p" || kill -9 "$p" 2>/dev/null
  done
  local_slurm_up=0
}
