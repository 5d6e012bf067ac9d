# prereqs.sh — the cluster scripts say what is missing, by name, instead of
# failing with "command not found" (exit 127): GNU parallel, make, ssh here;
# a program that does not run on a host; sbatch; make or a program on a
# Slurm node. Runs without a cluster: a stand-in "parallel" runs the
# per-host check here, tagged as host "node7".
. "$ASN_ROOT/tests/lib/cli.sh"
mkdir -p "$TMP/empty" "$TMP/fake" "$TMP/top/bin"
cp -r "$ROOT/pipelines" "$TMP/top/"
for b in "$BIN"/*; do ln -s "$b" "$TMP/top/bin/"; done
cd "$TMP/top" || exit 1

expect_status "full-parallel.sh without parallel, make, ssh: exit 1, not 127" 1 env PATH="$TMP/empty" HOSTS=a /bin/sh pipelines/full-parallel.sh SHARDS=2
expect_stderr "... naming each" '^full-parallel.sh: not found on this host: parallel make ssh \(Debian packages'

cat > "$TMP/fake/parallel" <<'PEOF'
#!/bin/sh
while [ $# -gt 1 ]; do shift; done
out=$(sh -c "$1"); [ -z "$out" ] || printf 'node7\t%s\n' "$out"
PEOF
cat > "$TMP/fake/ssh" <<'PEOF'
#!/bin/sh
exit 0
PEOF
chmod +x "$TMP/fake/parallel" "$TMP/fake/ssh"
rm bin/rank-bt && printf '#!/bin/sh\nexit 127\n' > bin/rank-bt && chmod +x bin/rank-bt
expect_status "full-parallel.sh with a program that does not run on a host: exit 1" 1 env PATH="$TMP/fake:$PATH" HOSTS=node7 sh pipelines/full-parallel.sh SHARDS=2
expect_stderr "... naming the host and the program" '^full-parallel.sh: host node7 lacks: a runnable bin/rank-bt$'
check "... before anything ran (no output folder)" test ! -e out
rm bin/gen-candidates
expect_status "full-parallel.sh with a program not built here: exit 1" 1 env PATH="$TMP/fake:$PATH" HOSTS=node7 sh pipelines/full-parallel.sh SHARDS=2
expect_stderr "... saying to build it" '^full-parallel.sh: bin/gen-candidates is missing here: build asn first'

expect_status "submit-full.sh without sbatch: exit 1, not 127" 1 env PATH="$TMP/empty" /bin/sh pipelines/slurm/submit-full.sh SHARDS=2
expect_stderr "... naming it" '^submit-full.sh: not found: sbatch \(Slurm'
expect_status "submit-full.sh WAIT=1 also needs squeue and scontrol" 1 env PATH="$TMP/empty" WAIT=1 /bin/sh pipelines/slurm/submit-full.sh SHARDS=2
expect_stderr "... naming them" 'not found: sbatch squeue scontrol'
if [ -x /bin/bash ]; then
    expect_status "a shard job on a node without make or a program: exit 1" 1 env PATH="$TMP/empty" SLURM_ARRAY_TASK_ID=1 SLURMD_NODENAME=node7 /bin/bash pipelines/slurm/full-shard.sbatch SHARDS=2
    expect_stderr "... naming the node and each" '^full-shard.sbatch: node node7 lacks: make a runnable bin/gen-candidates a runnable bin/rank-bt \('
    expect_status "the merge job the same" 1 env PATH="$TMP/empty" SLURMD_NODENAME=node7 /bin/bash pipelines/slurm/full-make.sbatch SHARDS=2
    expect_stderr "... naming them" '^full-make.sbatch: node node7 lacks: make'
else
    skip "Slurm job scripts on a node without make" "no /bin/bash"
fi
