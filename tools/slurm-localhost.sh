#!/usr/bin/env bash
# A SLURM cluster on this machine, for the cluster tests and for trying the
# cluster section of docs/running.md: slurmctld + slurmd + munge, and (by default) slurmdbd
# with MariaDB so that `sacct` works, which is how snakemake's SLURM executor
# plugin asks for job states.
#
#   tools/slurm-localhost.sh start|stop|status
#   tools/slurm-localhost.sh kill-node NAME   # power loss: kill -9 every process of node NAME
#
# SLURM_NODES=1 (the default): one slurmd on localhost.  SLURM_NODES=N > 1: N compute nodes
# node1..nodeN, each a slurmd in its own network namespace (a veth pair: node i is 10.43.i.2,
# the head at 10.43.i.1) and its own UTS namespace (host name nodeI), with a node-local
# /tmp and ~/.cache (fresh tmpfs): everything else, the work directories among it, is shared as
# over NFS, and so are $BASE and the folders SLURM_SHARED_TMP names (colon-separated) under /tmp.
# The controller, accounting and the workflow run on this machine, the head node.  (Debian's SLURM
# 22.05 also has multiple-slurmd mode, `scontrol show config`: MULTIPLE_SLURMD = Yes, but its slurmds
# share one address, host name and /tmp: it could not show that no job leans on its node's state.)
#
# Needs root and Debian/Ubuntu packages (installed with apt-get when missing).
# Environment: SLURM_BASE (state, logs; default /tmp/locpriv-slurm),
# SLURM_PARTITION (default debug), SLURM_ACCOUNTING (1 = slurmdbd + MariaDB, 0 = none),
# SLURM_NODES (default 1; above), SLURM_SHARED_TMP (above).
#
# Pitfalls this handles, each learnt the hard way:
# * the plugin's job step runs `srun` with SLURM_CONF removed from the
#   environment, so the config must live at the default /etc/slurm/slurm.conf;
# * without accounting the plugin's sacct polling never sees a job finish: run
#   snakemake with `--slurm-status-command squeue` and keep MinJobAge >= 3x the
#   status-check delay so finished jobs are still listed by squeue;
# * RealMemory must not exceed what slurmd detects, or the node is DRAINED;
# * `stop` kills only the daemons this script started (their pid files) and the
#   network namespaces it made (listed in $BASE/run/netns);
# * nodes in namespaces reach the controller at the head's end of node1's veth (10.43.1.1, a
#   local address of the head, routed to from every node); a node's own name resolves through
#   its own /etc/hosts (bind-mounted in its mount namespace).
set -euo pipefail

BASE=${SLURM_BASE:-/tmp/locpriv-slurm}
PARTITION=${SLURM_PARTITION:-debug}
ACCOUNTING=${SLURM_ACCOUNTING:-1}
NODES=${SLURM_NODES:-1}
# where a node's mount namespace keeps the head's /tmp while it puts its own tmpfs there
KEEP=/run/locpriv-slurm-head-tmp
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
  local node mem accounting nodes ctld timeout i
  # the node line as slurmd sees this hardware, memory lowered to a safe share
  node=$(slurmd -C | head -1)
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
  mem=$((mem * 85 / 100))
  ((mem > 20000)) && mem=20000
  node=${node/RealMemory=*/RealMemory=$mem}
  if ((NODES > 1)); then
    # every node claims this machine's cores and memory: they share them, as a test needs
    nodes=$(for i in $(seq "$NODES"); do
      sed "s/^NodeName=[^ ]*/NodeName=node$i/; s/\$/ NodeAddr=10.43.$i.2 State=UNKNOWN/" <<<"$node"
    done)
    ctld=10.43.1.1
    # a lost node is DOWN (and its jobs NODE_FAIL) this long after its last answer; sites: 300
    timeout=20
  else
    nodes="$node NodeAddr=127.0.0.1 State=UNKNOWN"
    ctld=127.0.0.1
    timeout=300
  fi
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
SlurmctldHost=$(hostname -s)($ctld)
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
# CR_LLN: a job goes to the least loaded node, so concurrent jobs spread over the nodes
SelectTypeParameters=CR_Core_Memory,CR_LLN
SchedulerType=sched/backfill
ReturnToService=2
SlurmdTimeout=$timeout
MinJobAge=300
SlurmctldPort=6817
SlurmdPort=6818
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd-%n.pid
SlurmdSpoolDir=$BASE/spool/slurmd-%n
StateSaveLocation=$BASE/spool/slurmctld
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd-%n.log
$nodes
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

start_node() {  # start_node I: compute node nodeI in its own network, UTS and mount namespaces
  local i=$1 name=node$1 ns=locpriv-node$1 shared=$BASE:${SLURM_SHARED_TMP:-}
  ip netns add "$ns"
  echo "$ns" >>"$BASE/run/netns"
  ip link add "lp-head$i" type veth peer name "lp-node$i"
  ip link set "lp-node$i" netns "$ns"
  ip addr add "10.43.$i.1/24" dev "lp-head$i"
  ip link set "lp-head$i" up
  ip -n "$ns" addr add "10.43.$i.2/24" dev "lp-node$i"
  ip -n "$ns" link set "lp-node$i" up
  ip -n "$ns" link set lo up
  ip -n "$ns" route add default via "10.43.$i.1"
  # node-local /tmp and ~/.cache, but $BASE (state, logs) and $SLURM_SHARED_TMP are the head's
  mkdir -p "$BASE/spool/slurmd-$name"
  # nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroup tree slurmd needs
  nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private sh -ec "
    hostname $name
    mount --bind '$BASE/etc/hosts' /etc/hosts
    mount --rbind /tmp '$KEEP'
    mount -t tmpfs -o mode=1777 tmpfs /tmp
    IFS=:
    for dir in \$(echo '$shared'); do
      case \"\$dir\" in /tmp/?*) [ ! -d \"$KEEP/\${dir#/tmp/}\" ] || {
        mkdir -p \"\$dir\"; mount --rbind \"$KEEP/\${dir#/tmp/}\" \"\$dir\"; } ;;
      esac
    done
    unset IFS
    umount -l '$KEEP'
    if [ -d \"\$HOME/.cache\" ]; then mount -t tmpfs tmpfs \"\$HOME/.cache\"; fi
    exec /usr/sbin/slurmd -N $name"
}

kill_node() {  # kill_node NAME: the node's power fails (its slurmd, job steps and jobs die at once)
  local ns=locpriv-$1 pids
  grep -qx "$ns" "$BASE/run/netns" 2>/dev/null || { echo "no node $1 started by this script" >&2; return 1; }
  pids=$(ip netns pids "$ns")
  say "node $1 lost: kill -9 ${pids//$'\n'/ }"
  [ -z "$pids" ] || kill -9 $pids
}

stop() {
  local ns pids
  if [ -s "$BASE/run/netns" ]; then
    for ns in $(cat "$BASE/run/netns"); do
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [ -z "$pids" ] || { say "stopping node ${ns#locpriv-} (pids ${pids//$'\n'/ })"; kill -9 $pids || true; }
      ip netns del "$ns" 2>/dev/null || true  # its end of the veth pair goes with it, and so the head's
    done
    rm -f "$BASE/run/netns"
    rmdir "$KEEP" 2>/dev/null || true
  fi
  kill_pidfile slurmd "$BASE/run/slurmd-$(hostname -s).pid"
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
  mkdir -p "$BASE"/{etc,log,run,spool/slurmctld} /etc/slurm
  chmod 755 "$BASE"  # MariaDB runs as user mysql and must reach $BASE/mysql
  write_slurm_conf
  start_munge
  [ "$ACCOUNTING" = 1 ] && start_accounting
  /usr/sbin/slurmctld
  if ((NODES > 1)); then
    mkdir -p "$KEEP"
    { echo "127.0.0.1 localhost"; for i in $(seq "$NODES"); do echo "10.43.$i.2 node$i"; done; } >"$BASE/etc/hosts"
    for i in $(seq "$NODES"); do start_node "$i"; done
    retry_for 60 sh -c "[ \$(sinfo -h -N -o %T | grep -cx idle) = $NODES ]"
  else
    /usr/sbin/slurmd
    retry_for 60 sh -c "sinfo -h -o %T | grep -qx idle"
  fi
  say "cluster up: $NODES node(s), partition $PARTITION, account $ACCOUNT, logs in $BASE/log"
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
  kill-node) kill_node "${2:?usage: $0 kill-node NAME}" ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
