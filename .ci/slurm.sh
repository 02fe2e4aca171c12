#!/usr/bin/env bash
# Starts a single-node Slurm cluster on localhost for CI tests, idempotently:
#  1. installs Debian's slurm-wlm and munge if missing (needs root and
#     apt-get; without them, and without sbatch, it exits with status 3 so
#     the caller can skip the Slurm tests);
#  2. creates a munge key if absent and starts munged as the munge user;
#  3. writes /etc/slurm/slurm.conf for one node (this host, 127.0.0.1, all
#     of nproc's CPUs, 90% of the memory), partition "debug", no cgroups,
#     no accounting, MaxArraySize 8;
#  4. starts slurmctld and slurmd (as daemons, no systemd needed) and waits
#     up to 30 s for the node to be idle, then prints "slurm ready".
# Rerun when the cluster is up, it only checks that and exits 0.
set -euo pipefail

conf=/etc/slurm/slurm.conf
logdir=/var/log/slurm
spool=/var/spool/slurm
node=$(hostname -s)

# The configuration this script writes (for this host).
conf_text() {
  local mem
  mem=$(awk '/^MemTotal:/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
  cat <<EOF
# Written by .ci/slurm.sh: a single-node cluster for CI tests.
ClusterName=ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# A job whose dependency can never be met is cancelled, not left pending
# forever (an "sbatch --wait" on it would hang).
DependencyParameters=kill_invalid_depend
# Small, so that the calibration's test splits its job arrays at it.
MaxArraySize=8
MailProg=/bin/true
SlurmdParameters=config_overrides
StateSaveLocation=$spool/ctld
SlurmdSpoolDir=$spool/d
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=$logdir/slurmctld.log
SlurmdLogFile=$logdir/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

# The three daemons run and the node can take jobs: the cluster is up.
# (The controller notices a dead slurmd only minutes later, hence pgrep.)
ready() {
  pgrep -x munged >/dev/null && pgrep -x slurmctld >/dev/null && pgrep -x slurmd >/dev/null &&
    timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null | grep -Eqx 'idle|mixed|allocated|completing'
}

# Prints an error with the end of the daemons' logs and exits 1.
fail() {
  echo "slurm.sh: $*" >&2
  for f in "$logdir/slurmctld.log" "$logdir/slurmd.log" /var/log/munge/munged.log; do
    [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
  done
  exit 1
}

if ready && [ "$(cat "$conf" 2>/dev/null)" = "$(conf_text)" ]; then
  echo "slurm ready"
  exit 0
fi

# 1. Install.
if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null ||
  ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "slurm.sh: Slurm is not installed, and installing it needs root and apt-get: skipping" >&2
    exit 3
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "slurm.sh: Slurm is installed but not running, and starting it needs root: skipping" >&2
  exit 3
fi

# 2. Munge: a key readable only by the munge user, and the daemon.
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
key=/etc/munge/munge.key
if [ ! -s "$key" ]; then
  dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
fi
chown munge:munge "$key"
chmod 0400 "$key"
if ! pgrep -x munged >/dev/null; then
  runuser -u munge -- munged || fail "munged did not start"
fi
munge -n | unmunge >/dev/null || fail "munge does not work"

# 3. The configuration (rewritten only when it changes; a running daemon
# started by this script is then stopped, to restart with the new one).
install -d -m 0755 /etc/slurm "$logdir" /run/slurm "$spool/ctld" "$spool/d"
new=$(conf_text)
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$new" ]; then
  printf '%s\n' "$new" >"$conf"
  for d in slurmd slurmctld; do
    pid=$(cat "/run/slurm/$d.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
fi

# 4. The daemons (they detach themselves), then wait for an idle node.
pgrep -x slurmctld >/dev/null || slurmctld || fail "slurmctld did not start"
pgrep -x slurmd >/dev/null || slurmd -N "$node" || fail "slurmd did not start"
for _ in $(seq 30); do
  if ready; then
    echo "slurm ready"
    exit 0
  fi
  # A node left down or drained (e.g. by an earlier run) is put back.
  if timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null | grep -Eq '^(down|drain)'; then
    scontrol update nodename="$node" state=resume 2>/dev/null || true
  fi
  sleep 1
done
fail "the node is not idle after 30 s: $(sinfo -h -N -o '%N %T %E' 2>&1 || true)"
