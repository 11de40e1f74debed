#!/usr/bin/env bash
# slurm-down.sh: stop the daemons that scripts/slurm-up.sh started, and only those.
# It reads $BENCHOPS_SLURM_DIR/pids/<name>.pid (default dir /var/lib/benchops-slurm),
# sends TERM to each pid that is still a live process of that name, waits up to
# BENCHOPS_SLURM_STOP_TIMEOUT seconds (default 20), then sends KILL. It never kills by
# name. State, database and config stay in place, so slurm-up.sh starts them again.
set -uo pipefail

DIR=${BENCHOPS_SLURM_DIR:-/var/lib/benchops-slurm}
STOP_TIMEOUT=${BENCHOPS_SLURM_STOP_TIMEOUT:-20}
ORDER=(slurmd slurmctld slurmdbd mariadbd munged)   # reverse of the start order

# alive PID NAME: a live (not zombie) process with that command name.
alive() {
    local pid=$1 name=$2 state comm
    [[ -r /proc/$pid/status ]] || return 1
    state=$(awk '/^State:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 1
    [[ -n $state && $state != Z && $state != X ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == "$name" ]]
}

rc=0
for name in "${ORDER[@]}"; do
    pidf=$DIR/pids/$name.pid
    [[ -f $pidf ]] || continue
    pid=$(tr -dc '0-9' <"$pidf")
    if [[ -z $pid ]] || ! alive "$pid" "$name"; then
        echo "slurm-down: $name (pid ${pid:-?}) is not running"
        rm -f "$pidf"
        continue
    fi
    kill -TERM "$pid" 2>/dev/null
    deadline=$(($(date +%s) + STOP_TIMEOUT))
    while alive "$pid" "$name" && (($(date +%s) < deadline)); do sleep 0.1; done
    if alive "$pid" "$name"; then
        echo "slurm-down: $name (pid $pid) ignored TERM for ${STOP_TIMEOUT}s: KILL"
        kill -KILL "$pid" 2>/dev/null
        sleep 0.5
        if alive "$pid" "$name"; then
            echo "slurm-down: ERROR: $name (pid $pid) survived KILL" >&2
            rc=1
            continue
        fi
    fi
    echo "slurm-down: stopped $name (pid $pid)"
    rm -f "$pidf"
done
exit $rc
