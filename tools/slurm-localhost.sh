#!/usr/bin/env bash
# A one-node SLURM cluster on localhost, for the cluster test and for trying the
# cluster section of docs/running.md: slurmctld + slurmd + munge, and (by default) slurmdbd
# with MariaDB so that `sacct` works, which is how snakemake's SLURM executor
# plugin asks for job states.
#
#   tools/slurm-localhost.sh start|stop|status
#
# Needs root and Debian/Ubuntu packages (installed with apt-get when missing).
# Environment: SLURM_BASE (state, logs; default /tmp/locpriv-slurm),
# SLURM_PARTITION (default debug), SLURM_ACCOUNTING (1 = slurmdbd + MariaDB, 0 = none).
#
# Pitfalls this handles, each learnt the hard way:
# * the plugin's job step runs `srun` with SLURM_CONF removed from the
#   environment, so the config must live at the default /etc/slurm/slurm.conf;
# * without accounting the plugin's sacct polling never sees a job finish: run
#   snakemake with `--slurm-status-command squeue` and keep MinJobAge >= 3x the
#   status-check delay so finished jobs are still listed by squeue;
# * RealMemory must not exceed what slurmd detects, or the node is DRAINED;
# * `stop` kills only the daemons this script started (their pid files).
set -euo pipefail

BASE=${SLURM_BASE:-/tmp/locpriv-slurm}
PARTITION=${SLURM_PARTITION:-debug}
ACCOUNTING=${SLURM_ACCOUNTING:-1}
CLUSTER=locpriv
ACCOUNT=ci
DB_PASSWORD=locpriv-slurmdbd
DB_SOCKET=$BASE/mysql/mysqld.sock

say() { echo "[slurm-localhost $(date +%T)] $*"; }

retry_for() {  # retry_for SECONDS command...: until it succeeds, else fail naming it
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then echo "timed out waiting for: $*" >&2; return 1; fi
    sleep 0.5
  done
}

kill_pidfile() {  # kill_pidfile NAME FILE: stop a daemon we started, then forget it
  local pid
  [ -s "$2" ] || return 0
  pid=$(cat "$2")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping $1 (pid $pid)"
    kill "$pid" || true
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" || true
  fi
  rm -f "$2"
}

install_packages() {
  local pkgs=(slurm-wlm munge)
  [ "$ACCOUNTING" = 1 ] && pkgs+=(slurmdbd mariadb-server)
  dpkg -s "${pkgs[@]}" >/dev/null 2>&1 && return 0
  say "installing ${pkgs[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}"
}

write_slurm_conf() {
  local node mem accounting
  # the node line as slurmd sees this hardware, memory lowered to a safe share
  node=$(slurmd -C | head -1)
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
  mem=$((mem * 85 / 100))
  ((mem > 20000)) && mem=20000
  node=${node/RealMemory=*/RealMemory=$mem}
  if [ "$ACCOUNTING" = 1 ]; then
    accounting="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=6819
JobAcctGatherType=jobacct_gather/linux"
  else
    accounting="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
  fi
  cat >"$BASE/etc/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
$accounting
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
SlurmctldPort=6817
SlurmdPort=6818
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.pid
SlurmdSpoolDir=$BASE/spool/slurmd
StateSaveLocation=$BASE/spool/slurmctld
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.log
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  ln -sfn "$BASE/etc/slurm.conf" /etc/slurm/slurm.conf
}

start_munge() {
  [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile=/etc/munge/munge.key; chown munge:munge /etc/munge/munge.key; }
  mkdir -p /run/munge && chown munge:munge /run/munge
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    say "munged already running (not ours, left alone)"
    return 0
  fi
  runuser -u munge -- /usr/sbin/munged
  retry_for 10 sh -c 'munge -n | unmunge'
  cp /run/munge/munged.pid "$BASE/run/munged.pid"
}

start_accounting() {
  mkdir -p "$BASE/mysql" && chown mysql:mysql "$BASE/mysql"
  mariadb-install-db --no-defaults --user=mysql --datadir="$BASE/mysql/data" \
    --auth-root-authentication-method=socket --skip-test-db >"$BASE/log/mariadb-install.log" 2>&1 ||
    { tail -20 "$BASE/log/mariadb-install.log" >&2; return 1; }
  setsid /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$BASE/mysql/data" --socket="$DB_SOCKET" \
    --pid-file="$BASE/mysql/mariadbd.pid" --log-error="$BASE/log/mariadbd.log" --bind-address=127.0.0.1 \
    --port=3306 --skip-log-bin --innodb-buffer-pool-size=128M </dev/null >/dev/null 2>&1 &
  retry_for 60 mariadb --socket="$DB_SOCKET" -e 'select 1'
  local host
  for host in localhost 127.0.0.1; do
    mariadb --socket="$DB_SOCKET" -e "CREATE USER 'slurm'@'$host' IDENTIFIED BY '$DB_PASSWORD';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'$host';"
  done
  cat >"$BASE/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
LogFile=$BASE/log/slurmdbd.log
PidFile=$BASE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=$DB_PASSWORD
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$BASE/etc/slurmdbd.conf"
  ln -sfn "$BASE/etc/slurmdbd.conf" /etc/slurm/slurmdbd.conf
  /usr/sbin/slurmdbd
  retry_for 60 sacctmgr -n list cluster
  # an account, so jobs submitted with slurm_account=ci are accepted
  sacctmgr -i add cluster "$CLUSTER" >/dev/null
  sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" >/dev/null
  sacctmgr -i add user root Account="$ACCOUNT" DefaultAccount="$ACCOUNT" >/dev/null
}

stop() {
  kill_pidfile slurmd "$BASE/run/slurmd.pid"
  kill_pidfile slurmctld "$BASE/run/slurmctld.pid"
  kill_pidfile slurmdbd "$BASE/run/slurmdbd.pid"
  kill_pidfile mariadbd "$BASE/mysql/mariadbd.pid"
  kill_pidfile munged "$BASE/run/munged.pid"
}

start() {
  [ "$(id -u)" = 0 ] || { echo "slurm-localhost: must run as root" >&2; exit 1; }
  install_packages
  stop
  rm -rf "$BASE/spool" "$BASE/mysql"  # fresh state: no jobs left over from an earlier cluster
  mkdir -p "$BASE"/{etc,log,run,spool/slurmd,spool/slurmctld} /etc/slurm
  chmod 755 "$BASE"  # MariaDB runs as user mysql and must reach $BASE/mysql
  write_slurm_conf
  start_munge
  [ "$ACCOUNTING" = 1 ] && start_accounting
  /usr/sbin/slurmctld
  /usr/sbin/slurmd
  retry_for 60 sh -c "sinfo -h -o %T | grep -qx idle"
  say "cluster up: partition $PARTITION, account $ACCOUNT, logs in $BASE/log"
  sinfo
}

status() {
  local f
  for f in "$BASE"/run/*.pid "$BASE"/mysql/mariadbd.pid; do
    [ -s "$f" ] && echo "$(basename "$f" .pid) pid $(cat "$f")"
  done
  sinfo || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
