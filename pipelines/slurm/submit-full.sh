#!/bin/sh
# submit-full.sh — submits a whole pipelines/full.mk run to Slurm: a job
# preparing the shared inputs, an array job of one task per shard once it
# succeeded, and a merge job once every task succeeded.
#
#   pipelines/slurm/submit-full.sh SHARDS=32 MODEL=models/m.gguf \
#       JUDGE_MODEL=models/judge.gguf PROMPTS=data/prompts.jsonl \
#       HEURISTICS=heuristics.yaml SEEDS=0-7 OUT=out/run
#
# Run it from the top directory of asn, on a filesystem the compute nodes
# share (bin/ built for their CPUs). The arguments are full.mk's variables,
# given unchanged to every job. SBATCH_FLAGS adds options to every sbatch
# (--partition=..., --account=...); ARRAY_LIMIT caps how many shards run at
# once (the array's %N). Resources are in full-shard.sbatch and
# full-make.sbatch. A failed shard makes the merge job fail too
# (--kill-on-invalid-dep): fix the cause and submit again; finished steps
# are not redone. WAIT=1: then wait until the jobs have ended (squeue,
# every POLL seconds, default 30) and exit with success only when the merge
# job completed; its final state is printed ("merge: job N COMPLETED").
set -eu

shards=1
for a in "$@"; do
    case $a in SHARDS=*) shards=${a#SHARDS=} ;; esac
done
case $shards in
    '' | 0* | *[!0-9]*) echo "submit-full.sh: SHARDS must be a positive integer" >&2; exit 2 ;;
esac
need=
for p in sbatch ${WAIT:+squeue scontrol}; do command -v "$p" > /dev/null 2>&1 || need="$need $p"; done
if [ -n "$need" ]; then
    echo "submit-full.sh: not found:$need (Slurm's client commands: run this on a Slurm login node; without Slurm, pipelines/full-parallel.sh or make -f pipelines/full.mk)" >&2
    exit 1
fi
[ -x bin/gen-candidates ] || { echo "submit-full.sh: bin/gen-candidates is missing: run this from the top directory of asn, built (make)" >&2; exit 1; }
dir=pipelines/slurm
array=1-$shards${ARRAY_LIMIT:+%$ARRAY_LIMIT}

# --parsable prints "jobid" or "jobid;cluster". SBATCH_FLAGS is split into words.
# shellcheck disable=SC2086
prep=$(sbatch --parsable ${SBATCH_FLAGS:-} --job-name=asn-prepare "$dir/full-make.sbatch" "$@" prepare)
prep=${prep%%;*}
# shellcheck disable=SC2086
shard=$(sbatch --parsable ${SBATCH_FLAGS:-} --array="$array" --dependency="afterok:$prep" \
    --kill-on-invalid-dep=yes "$dir/full-shard.sbatch" "$@")
shard=${shard%%;*}
# shellcheck disable=SC2086
merge=$(sbatch --parsable ${SBATCH_FLAGS:-} --job-name=asn-merge --dependency="afterok:$shard" \
    --kill-on-invalid-dep=yes "$dir/full-make.sbatch" "$@")
merge=${merge%%;*}
echo "prepare: job $prep; shards: array job $shard (tasks $array); merge: job $merge"

[ "${WAIT:-0}" = 1 ] || exit 0
while squeue -h -j "$prep,$shard,$merge" 2> /dev/null | grep -q .; do sleep "${POLL:-30}"; done
# the state while slurmctld keeps the job (MinJobAge), else from accounting
state=$(scontrol -o show job "$merge" 2> /dev/null | sed -n 's/.* JobState=\([A-Z_]*\).*/\1/p')
[ -n "$state" ] || state=$(sacct -n -X -j "$merge" -o State 2> /dev/null | awk 'NR == 1 { print $1 }')
echo "merge: job $merge ${state:-UNKNOWN}"
[ "$state" = COMPLETED ]
