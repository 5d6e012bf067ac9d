# cluster_slurm.sh — pipelines/slurm/ on a real one-node Slurm cluster:
# munged with a generated key, slurmctld and slurmd with a generated
# slurm.conf (proctrack/linuxproc, task/none, no cgroups, no accounting, a
# partition of 2 CPUs), all in a temp dir and, when the kernel allows, a
# network namespace of their own (only loopback, and a veth pair so that
# Slurm's address lookups work). submit-full.sh's prepare job, array job and
# dependent merge job give the serial run's datasets and index rows, also
# when a running shard task is requeued (killed and run again) or killed
# with SIGKILL (the merge is cancelled, nothing merged, and submitting again
# finishes the run).

# a network namespace of its own: the daemons are reachable from nowhere
# else, and every process left in it is this test's
if [ -z "${ASN_NETNS:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare > /dev/null && command -v ip > /dev/null &&
    unshare -n true 2> /dev/null; then
    exec env ASN_NETNS=1 unshare -n sh -c 'ip link set lo up && ip link add asnv0 type veth peer name asnv1 &&
        ip addr add 10.254.254.1/32 dev asnv0 && ip link set asnv0 up && ip link set asnv1 up; exec sh "$0"' "$0"
fi
. "$ASN_ROOT/tests/lib/cli.sh"
. "$ROOT/tests/lib/cluster.sh"
cluster_need "Slurm cluster"

C="$TMP/cluster"
DAEMONS=
cleanup() {
    [ -f "$C/slurm.conf" ] && timeout 10 scancel --full -u root > /dev/null 2>&1
    for p in $DAEMONS; do kill "$p" 2> /dev/null; done
    if [ "${ASN_NETNS:-}" = 1 ]; then # job steps the daemons left, all in this namespace
        me=$(readlink /proc/$$/ns/net)
        for d in /proc/[0-9]*; do
            p=${d#/proc/}
            [ "$p" != $$ ] && [ "$(readlink "$d/ns/net" 2> /dev/null)" = "$me" ] && kill -KILL "$p" 2> /dev/null
        done
    fi
    [ -n "${KEEP_TMP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the cluster
mkdir -p "$C/state" "$C/spool"
chmod 755 "$TMP" "$C"
mungekey -c -k "$C/munge.key" > "$C/mungekey.log" 2>&1
timeout 900 munged -F -f --key-file="$C/munge.key" --socket="$C/munge.sock" --pid-file="$C/munged.pid" \
    --log-file="$C/munged.log" --seed-file="$C/munged.seed" > "$C/munged.out" 2>&1 &
DAEMONS="$DAEMONS $!"
host=$(hostname -s)
cat > "$C/slurm.conf" <<EOF
ClusterName=asntest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$C/munge.sock
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd.pid
SlurmctldLogFile=$C/slurmctld.log
SlurmdLogFile=$C/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=2
MinJobAge=600
SchedulerParameters=sched_interval=2
NodeName=asnnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=asn Nodes=asnnode Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$C/slurm.conf"
for i in $(seq 1 50); do [ -S "$C/munge.sock" ] && break; sleep 0.1; done
timeout 900 slurmctld -D -f "$C/slurm.conf" > "$C/slurmctld.out" 2>&1 &
DAEMONS="$DAEMONS $!"
timeout 900 slurmd -D -f "$C/slurm.conf" -N asnnode > "$C/slurmd.out" 2>&1 &
DAEMONS="$DAEMONS $!"
up=0
for i in $(seq 1 60); do
    [ "$(sinfo -h -o %t 2> /dev/null)" = idle ] && { up=1; break; }
    sleep 0.5
done
if [ $up = 0 ]; then
    not_ok "a one-node Slurm cluster comes up" "$(tail -n 3 "$C"/munged.out "$C"/slurmctld.out "$C"/slurmd.out | head -c 800)"
    exit 1
fi
ok "a one-node Slurm cluster comes up (munged, slurmctld, slurmd, 2 CPUs)"

# ---- the top directory, and the serial run
TOP="$TMP/top"
cluster_top "$TOP"
# fault point (the wrapper stands in for rank-bt; everything else is real):
# shard 1's rank-bt of the run into out/X stops once before it starts, when
# $TMP/fault/X exists, so that the test acts on a task known to be running
mkdir -p "$TMP/real" "$TMP/fault"
mv "$TOP/bin/rank-bt" "$TMP/real/"
cat > "$TOP/bin/rank-bt" <<EOF
#!/bin/sh
for x in rq kill; do
    case "\$*" in *out/\$x/shards/1-of-2/*)
        if [ -d "$TMP/fault/\$x" ] && mkdir "$TMP/fault/\$x/once" 2>/dev/null; then
            echo \$\$ > "$TMP/fault/\$x/pid"; kill -STOP \$\$; fi ;;
    esac
done
exec "$TMP/real/rank-bt" "\$@"
EOF
chmod +x "$TOP/bin/rank-bt"
cd "$TOP" || exit 1
ts0=$(date +%s.%N)
expect_status "the serial run (SHARDS=1, no Slurm)" 0 timeout 300 make -f pipelines/full.mk $CLUSTER_VARS SHARDS=1 OUT=out/s1
ts1=$(date +%s.%N)

# submit-full.sh with small resources; WAIT=1: it returns when the merge
# job has ended, with its state
SUBMIT() {
    env SBATCH_FLAGS="--cpus-per-task=1 --mem=100 --time=10" WAIT=1 POLL=1 \
        timeout 600 sh pipelines/slurm/submit-full.sh $CLUSTER_VARS SHARDS=2 "$@"
}
# wait_pid X: the pid of shard 1's stopped rank-bt of the run into out/X
wait_pid() {
    for i in $(seq 1 1200); do [ -s "$TMP/fault/$1/pid" ] && { cat "$TMP/fault/$1/pid"; return 0; }; sleep 0.1; done
    return 1
}
array_id() { sed -n 's/.*shards: array job \([0-9]*\).*/\1/p' "$1"; }

# ---- the plain run
t0=$(date +%s.%N)
expect_status "submit-full.sh SHARDS=2: prepare, array and merge jobs" 0 SUBMIT OUT=out/sl
t1=$(date +%s.%N)
echo "# timing: serial make $(awk "BEGIN { print $ts1 - $ts0 }") s; submit-full.sh SHARDS=2 WAIT=1 POLL=1 $(awk "BEGIN { print $t1 - $t0 }") s"
cp "$TMP/out" "$TMP/sl.out"
check "... the merge job completed" grep -q "merge: job [0-9]* COMPLETED" "$TMP/sl.out"
check "every merged JSONL and the index rows equal the serial run's" cluster_same out/s1 out/sl
job=$(array_id "$TMP/sl.out")
check "the shards ran as tasks 1 and 2 of the array job" sh -c "
    scontrol -o show job $job | grep -c 'JobState=COMPLETED' | grep -qx 2 &&
    test -s slurm-${job}_1.out && test -s slurm-${job}_2.out"

# ---- requeue: shard 1's task, running, is requeued (killed, then run again)
mkdir "$TMP/fault/rq"
SUBMIT OUT=out/rq > "$TMP/rq.out" 2> "$TMP/rq.err" &
SUB=$!
pid=$(wait_pid rq)
job=$(array_id "$TMP/rq.out")
check "shard 1's task is running" sh -c "scontrol -o show job ${job}_1 | grep -q JobState=RUNNING"
scontrol requeue "${job}_1" > "$TMP/requeue.out" 2>&1
check "scontrol requeue of the running task" test $? = 0
# Slurm makes a requeued job wait 2 minutes (its begin time): start it now,
# once it is pending again and every process of its first run is gone (the
# stopped wrapper dies only at Slurm's SIGKILL; a task started while it or
# its batch step lives fails to launch)
task1=$(scontrol -o show job "${job}_1" | sed -n 's/^JobId=\([0-9]*\) .*/\1/p')
first_run_alive() {
    kill -0 "$pid" 2> /dev/null && return 0
    for d in /proc/[0-9]*; do
        tr '\0' '\n' < "$d/environ" 2> /dev/null | grep -qx "SLURM_JOB_ID=$task1" && return 0
        tr '\0' ' ' < "$d/cmdline" 2> /dev/null | grep -q "slurmstepd: \[$task1\." && return 0
    done
    return 1
}
for i in $(seq 1 3000); do
    ! first_run_alive && scontrol -o show job "${job}_1" | grep -q JobState=PENDING &&
        scontrol update JobId="${job}_1" StartTime=now >> "$TMP/requeue.out" 2>&1 && break
    sleep 0.1
done
wait "$SUB"
check "the run still completes" sh -c "test $? = 0 && grep -q 'merge: job [0-9]* COMPLETED' '$TMP/rq.out' ||
    { cat '$TMP/rq.out' '$TMP/rq.err' '$TMP/requeue.out'; scontrol -o show job $job; exit 1; }"
check "... shard 1's first process was killed" sh -c "! kill -0 $pid 2>/dev/null"
check "... its task ran twice (Restarts=1)" sh -c "scontrol -o show job ${job}_1 | grep -q 'Restarts=1'"
check "... and the datasets and index rows equal the serial run's" cluster_same out/s1 out/rq
if ! grep -q 'merge: job [0-9]* COMPLETED' "$TMP/rq.out"; then # the jobs' own words, for the log
    for f in "$TMP/rq.out" "$TMP/rq.err" "$TMP/requeue.out" slurm-*.out; do
        [ -f "$f" ] && tail -n 8 "$f" | sed "s|^|# $(basename "$f"): |"
    done
    tail -n 15 "$C/slurmctld.log" "$C/slurmd.log" | sed 's|^|# |'
fi

# ---- SIGKILL: shard 1's process killed; the task fails, the merge job is
# cancelled, nothing is merged; submitting again finishes the run
mkdir "$TMP/fault/kill"
SUBMIT OUT=out/kill > "$TMP/kill.out" 2> "$TMP/kill.err" &
SUB=$!
pid=$(wait_pid kill)
kill -KILL "$pid"
wait "$SUB"
check "a shard task killed with SIGKILL: submit-full.sh WAIT=1 fails" test $? != 0
job=$(array_id "$TMP/kill.out")
check "... the task failed and the merge job did not complete" sh -c "
    scontrol -o show job ${job}_1 | grep -q JobState=FAILED && ! grep -q 'COMPLETED' '$TMP/kill.out'"
check "... nothing was merged" sh -c "test -s out/kill/shards/2-of-2/scored.jsonl && ! ls out/kill/*.jsonl"
before=$(stat -c %y out/kill/shards/2-of-2/candidates.jsonl out/kill/shards/2-of-2/index.db)
expect_status "submitting again" 0 SUBMIT OUT=out/kill
check "... completes" grep -q "merge: job [0-9]* COMPLETED" "$TMP/out"
check "... without redoing shard 2" test "$before" = "$(stat -c %y out/kill/shards/2-of-2/candidates.jsonl out/kill/shards/2-of-2/index.db)"
check "... and the datasets and index rows equal the serial run's" cluster_same out/s1 out/kill
