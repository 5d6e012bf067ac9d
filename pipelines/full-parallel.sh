#!/bin/sh
# full-parallel.sh — pipelines/full.mk with its shards spread over several
# hosts by GNU parallel over ssh.
#
#   HOSTS=gpu1,gpu2,gpu3 pipelines/full-parallel.sh SHARDS=12 THREADS=32 \
#       MODEL=models/qwen2.5-3b-q8_0.gguf JUDGE_MODEL=models/qwen2.5-7b-q8_0.gguf \
#       PROMPTS=data/prompts.jsonl FAMILY=qwen SEEDS=0-7 OUT=out/qwen
#   HOSTS_FILE=hosts.txt pipelines/full-parallel.sh SHARDS=12 ...
#
# Run it from the top directory of asn. The arguments are full.mk's
# variables, passed unchanged to every make. HOSTS is a comma-separated list
# of sshlogins, HOSTS_FILE a file of them, one a line (GNU parallel's
# --sshloginfile; ":" is this host). JOBS_PER_HOST (default 1) shards run at
# once on each host: give each THREADS = that host's cores / JOBS_PER_HOST.
#
# Assumed: every host sees this directory (bin/ built for its CPUs),
# the models, the prompts and OUT at the same path (a shared filesystem),
# logs in by ssh without a password, and has make and GNU parallel installed
# (GNU parallel wants itself on the remote hosts too). The hosts' clocks
# must agree (NTP): make compares the files' times across hosts.
#
# Steps: (1) `make prepare` here: the heuristics and the n-gram index every
# shard reads, once; (2) one `make shard-K` per shard, on the hosts; a job
# that fails is retried (on another host when there is one), and make
# resumes it where it stopped; (3) `make` here: merges the shards, filters,
# indexes and reports (the shards are up to date, so nothing is
# regenerated). Rerunning the script after an interruption redoes only what
# is missing. The job log is OUT/parallel.joblog.
set -eu

shards=1 out=out/full
for a in "$@"; do
    case $a in
        SHARDS=*) shards=${a#SHARDS=} ;;
        OUT=*) out=${a#OUT=} ;;
    esac
done
if [ -n "${HOSTS_FILE:-}" ]; then
    set -- --sshloginfile "$HOSTS_FILE" "$@"
elif [ -n "${HOSTS:-}" ]; then
    set -- --sshlogin "$HOSTS" "$@"
else
    echo "full-parallel.sh: set HOSTS (host1,host2,...) or HOSTS_FILE" >&2
    exit 2
fi
hosts_opt=$1 hosts_val=$2
shift 2

# 1. the shared inputs
make -f pipelines/full.mk "$@" prepare
mkdir -p "$out"

# 2. the shards: -q quotes the command's words (values with spaces stay
# whole); {} is the shard number; --workdir: the same path on every host
seq 1 "$shards" | parallel -q "$hosts_opt" "$hosts_val" --workdir "$PWD" \
    -j "${JOBS_PER_HOST:-1}" --retries 3 --halt soon,fail=1 \
    --joblog "$out/parallel.joblog" --tag --line-buffer \
    make -f pipelines/full.mk "$@" shard-{}

# 3. the merge and everything after it
make -f pipelines/full.mk "$@"
