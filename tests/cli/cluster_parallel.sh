# cluster_parallel.sh — pipelines/full-parallel.sh over real ssh: two sshd
# on 127.0.0.1 (high ports, a throw-away key), each login in a folder of its
# own (the "host"'s disk), with TRANSFER=1 copying the programs and inputs
# there and the shards back. The merged datasets and index rows equal the
# serial run's, with a third host that is down, a shard process killed with
# SIGKILL (retried), and a shard that fails everywhere (nothing merged).
. "$ASN_ROOT/tests/lib/cli.sh"
. "$ROOT/tests/lib/cluster.sh"
cluster_need "GNU parallel over ssh"

SSHD_PIDS=
cleanup() {
    for p in $SSHD_PIDS; do kill "$p" 2>/dev/null; done
    [ -n "${KEEP_TMP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the hosts: sshd as root needs absolute paths and its privilege-separation dir
mkdir -p /run/sshd "$TMP/ssh" "$TMP/hostA" "$TMP/hostB" "$TMP/fault"
ssh-keygen -q -t ed25519 -N '' -f "$TMP/ssh/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$TMP/ssh/user_key"
cp "$TMP/ssh/user_key.pub" "$TMP/ssh/authorized_keys"
# every login (commands, rsync) starts in the host's own folder, its HOME
# (so that no shell start-up file of this machine runs)
cat > "$TMP/ssh/login.sh" <<'EOF'
#!/bin/sh
cd "$HOST_DIR" || exit 1
export HOME="$HOST_DIR"
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
EOF
chmod +x "$TMP/ssh/login.sh"
SSH="ssh -i $TMP/ssh/user_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
-o LogLevel=ERROR -o ConnectTimeout=5"
: > "$TMP/hosts"
for h in A B; do
    port=$(free_port)
    cat > "$TMP/ssh/sshd_$h.conf" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $TMP/ssh/host_key
AuthorizedKeysFile $TMP/ssh/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
MaxStartups 100
PidFile $TMP/ssh/sshd_$h.pid
SetEnv HOST_DIR=$TMP/host$h HOME=$TMP/host$h
ForceCommand $TMP/ssh/login.sh
EOF
    timeout 600 /usr/sbin/sshd -D -e -f "$TMP/ssh/sshd_$h.conf" > "$TMP/ssh/sshd_$h.log" 2>&1 &
    SSHD_PIDS="$SSHD_PIDS $!"
    echo "1/$SSH -p $port root@127.0.0.1" >> "$TMP/hosts"
    eval "PORT_$h=$port"
done
# host C: nothing listens there (a host that is down)
echo "1/$SSH -p $(free_port) root@127.0.0.1" >> "$TMP/hosts"
up=0
for i in $(seq 1 50); do
    $SSH -p "$PORT_A" root@127.0.0.1 true 2>/dev/null && $SSH -p "$PORT_B" root@127.0.0.1 true 2>/dev/null && { up=1; break; }
    sleep 0.2
done
if [ $up = 0 ]; then
    not_ok "two sshd on 127.0.0.1 accept the key" "$(cat "$TMP"/ssh/sshd_*.log | head -c 500)"
    exit 1
fi
check "a login lands in the host's own folder" sh -c "test \"\$($SSH -p $PORT_B root@127.0.0.1 pwd)\" = '$TMP/hostB'"

# ---- the top directory, and the serial run
TOP="$TMP/top"
cluster_top "$TOP"
# fault points (the wrappers stand in for two programs; everything else is real):
# shard 1's rank-bt of the run into out/p2 stops once before it starts, so
# that the test kills it with SIGKILL at a known point; shard 2's
# score-verifiable of the run into out/f always fails
mkdir -p "$TMP/real"
mv "$TOP/bin/rank-bt" "$TOP/bin/score-verifiable" "$TMP/real/"
cat > "$TOP/bin/rank-bt" <<EOF
#!/bin/sh
case "\$*" in *out/p2/shards/1-of-2/*)
    if mkdir "$TMP/fault/once" 2>/dev/null; then echo \$\$ > "$TMP/fault/pid"; kill -STOP \$\$; fi ;;
esac
exec "$TMP/real/rank-bt" "\$@"
EOF
cat > "$TOP/bin/score-verifiable" <<EOF
#!/bin/sh
case "\$*" in *out/f/shards/2-of-2/*) echo "score-verifiable: failing on purpose" >&2; exit 1 ;; esac
exec "$TMP/real/score-verifiable" "\$@"
EOF
chmod +x "$TOP/bin/rank-bt" "$TOP/bin/score-verifiable"

cd "$TOP" || exit 1
ts0=$(date +%s.%N)
expect_status "the serial run (SHARDS=1, this host)" 0 timeout 300 make -f pipelines/full.mk $CLUSTER_VARS SHARDS=1 OUT=out/s1
ts1=$(date +%s.%N)

# ---- a shard that fails on every host: the script stops, nothing is merged
PAR() { env HOSTS_FILE="$TMP/hosts" TRANSFER=1 REMOTE_DIR=run RETRIES=${RETRIES:-3} timeout 300 sh pipelines/full-parallel.sh "$@"; }
RETRIES=2
PAR $CLUSTER_VARS SHARDS=2 OUT=out/f > "$TMP/out" 2> "$TMP/err"
check "a shard failing on every host makes full-parallel.sh fail" test $? -ne 0
RETRIES=3
check "... after it was tried on the hosts up" grep -q "failing on purpose" "$TMP/err"
check "... and nothing was merged" sh -c "test -s out/f/shards/1-of-2/scored.jsonl && ! test -e out/f/shards/2-of-2/scored.jsonl && ! ls out/f/*.jsonl"

# ---- the good run: SHARDS=2 on hosts A and B (C is down), shard 1 killed once
(   # the killer: waits for shard 1's rank-bt to stop, then SIGKILLs it
    for i in $(seq 1 1500); do
        [ -s "$TMP/fault/pid" ] && { kill -KILL "$(cat "$TMP/fault/pid")"; echo killed > "$TMP/fault/done"; exit 0; }
        sleep 0.1
    done
) &
KILLER=$!
expect_status "full-parallel.sh TRANSFER=1 SHARDS=2 over ssh" 0 PAR $CLUSTER_VARS SHARDS=2 OUT=out/p2
kill "$KILLER" 2>/dev/null
cp "$TMP/err" "$TMP/p2.err"
check "a shard's process was killed with SIGKILL during the run" test -s "$TMP/fault/done"
check "... its job failed and was tried again" grep -Eq '^1	make: .*shards/1-of-2/ranked.jsonl\] Error 137' "$TMP/p2.err"
check "the host that is down was left out" grep -q "Removed .*-p $(tail -1 "$TMP/hosts" | sed 's/.* -p \([0-9]*\) .*/\1/') root@127.0.0.1" "$TMP/p2.err"
check "the shards ran on both hosts up, in their folders" sh -c "
    ls '$TMP'/hostA/run/out/p2/shards/*/candidates.jsonl* && ls '$TMP'/hostB/run/out/p2/shards/*/candidates.jsonl*"
check "every merged JSONL and the index rows equal the serial run's" cluster_same out/s1 out/p2
check "the job log has both shards, succeeded" awk -F'\t' 'NR > 1 && $7 == 0 { n++ } END { exit n != 2 }' out/p2/parallel.joblog
t0=$(date +%s.%N)
rm -rf out/t2 "$TMP/hostA/run" "$TMP/hostB/run"
PAR $CLUSTER_VARS SHARDS=2 OUT=out/t2 > /dev/null 2>&1
t1=$(date +%s.%N)
echo "# timing: serial make $(awk "BEGIN { print $ts1 - $ts0 }") s; full-parallel.sh TRANSFER=1 SHARDS=2, no fault $(awk "BEGIN { print $t1 - $t0 }") s"
expect_status "run again: everything is up to date" 0 PAR $CLUSTER_VARS SHARDS=2 OUT=out/p2
cp "$TMP/out" "$TMP/rerun.out"
check "... and nothing ran again" sh -c "! grep -E 'bin/(gen-candidates|verify|rank-bt|filter-topk) ' '$TMP/rerun.out'"
expect_status "TRANSFER=1 refuses an absolute path" 2 PAR $CLUSTER_VARS MODEL="$TOP/data/model.gguf" SHARDS=2 OUT=out/x
expect_stderr "... naming it" "model.gguf is not"
