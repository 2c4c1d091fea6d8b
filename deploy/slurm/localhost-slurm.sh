#!/usr/bin/env bash
# A one-node SLURM on this machine, for trying deploy/slurm/ and for the test suite.
#
#   deploy/slurm/localhost-slurm.sh start DIR   # write DIR/slurm.conf, start munged, slurmctld, slurmd
#   export SLURM_CONF=DIR/slurm.conf            # so sbatch, squeue, sinfo use it
#   deploy/slurm/localhost-slurm.sh stop DIR    # stop the three daemons started in DIR
#
# Needs Debian's slurm-wlm and munge (apt-get install -y slurm-wlm munge) and root
# (slurmd runs jobs as their submitting user). Everything it writes stays in DIR:
# its own munge key and socket, the state and spool directories, the logs and pid
# files, so it does not touch a system SLURM or munge. The node has CPUS cpus
# (default 2) and the machine's memory less 1 GB; the ports are SLURM_CTLD_PORT and
# SLURM_D_PORT (default 6817 and 6818).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
action=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)

pid_of() { [[ -s "$dir/$1.pid" ]] && cat "$dir/$1.pid"; }

stop() {
    local name pid
    for name in slurmd slurmctld munged; do
        pid=$(pid_of "$name" || true)
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
        fi
        rm -f "$dir/$name.pid"
    done
}

start() {
    for cmd in munged mungekey slurmctld slurmd sinfo; do
        command -v "$cmd" >/dev/null || { echo "$0: $cmd not found: apt-get install -y slurm-wlm munge" >&2; exit 1; }
    done
    local host cpus mem_mb
    host=$(hostname -s)
    cpus=${CPUS:-2}
    mem_mb=$(awk '/MemTotal/ {print int($2 / 1024) - 1024}' /proc/meminfo)
    mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
    chmod 700 "$dir/munge"
    [[ -s "$dir/munge/munge.key" ]] || mungekey --create --keyfile "$dir/munge/munge.key"
    chmod 600 "$dir/munge/munge.key"
    cat > "$dir/slurm.conf" <<EOF
# One-node SLURM written by deploy/slurm/localhost-slurm.sh
ClusterName=bigkern-localhost
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${SLURM_CTLD_PORT:-6817}
SlurmdPort=${SLURM_D_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=60
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF=$dir/slurm.conf
    munged -f --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
        --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed"
    slurmctld -f "$dir/slurm.conf"
    slurmd -f "$dir/slurm.conf"
    for _ in $(seq 300); do
        if sinfo -h -o %t 2>/dev/null | grep -qx idle; then
            echo "SLURM is up; use it with: export SLURM_CONF=$dir/slurm.conf"
            return 0
        fi
        sleep 0.1
    done
    echo "$0: the node did not become idle in 30 s; see $dir/log" >&2
    sinfo >&2 || true
    stop
    exit 1
}

case $action in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
